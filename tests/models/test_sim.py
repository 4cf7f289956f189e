"""The simulated world: its data, the target's behaviour, the optimizer's answers and faults."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from skillopt.models import llm, sim, sim_optimizer, simworld
from skillopt.config import RunConfig
from skillopt.errors import ModelError
from skillopt.models.jsonreply import extract_json
from skillopt.models.llm import LLM
from skillopt.models.providers import RETRYABLE_KINDS, GenSettings, ProviderError
from skillopt.patch import apply_edits
from skillopt.prompts import prompt_messages
from skillopt.reflect import StepBuffer, reflect
from skillopt.models.sim import options, target_answer
from skillopt.models.simworld import RULES, RULES_BY_ID, rule_for, skill_states
from skillopt.models.sim_optimizer import classify
from skillopt.tasks.loader import load_task
from skillopt.tasks.task import Trajectory

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "data" / "tasks" / "sim-rulebook"
TASK = load_task("sim-rulebook")
ITEMS = [it for split in ("train", "selection", "test") for it in TASK.split(split)]
FULL = TASK.seed_skill + "\n" + "\n".join(r.texts[0].format(route=r.label) for r in RULES) + "\n"
CONFIG = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", minibatch_size=8)


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)


def accuracy(skill: str, items=ITEMS) -> float:
    return sum(TASK.evaluate(it, target_answer(skill, TASK.render(it))).hard for it in items) / len(items)


def failing(rule_ids, per_rule: int = 4) -> list[Trajectory]:
    """Failed trajectories (the target said "standard") of the first train items of each rule."""
    out = []
    for rid in rule_ids:
        items = [it for it in TASK.split("train") if it.expected == RULES_BY_ID[rid].label][:per_rule]
        out += [Trajectory(it.id, TASK.render(it), "standard", it.expected, TASK.evaluate(it, "standard"))
                for it in items]
    return out


def optimizer(options_: str = "faults=0") -> LLM:
    return LLM(f"sim/optimizer?{options_}", "optimizer", GenSettings(max_retries=0))


# --- the data ---------------------------------------------------------------------------------

def test_splits_have_the_planned_sizes_and_every_rule_its_share():
    assert [len(TASK.split(s)) for s in ("train", "selection", "test")] == [120, 60, 120]
    for split, per_rule in (("train", 12), ("selection", 6), ("test", 12)):
        assert Counter(it.expected for it in TASK.split(split)) == {r.label: per_rule for r in RULES}


def test_every_item_falls_under_exactly_one_rule_whose_route_it_expects():
    for item in ITEMS:
        order = simworld.parse_order(TASK.render(item))
        applying = [r for r in RULES if r.applies(order)]
        assert len(applying) == 1 and applying[0].label == item.expected, item.id


def test_generator_reproduces_the_committed_files(tmp_path):
    subprocess.run([sys.executable, str(FOLDER / "generate.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("train", "selection", "test"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (FOLDER / f"{name}.jsonl").read_bytes()


def test_task_prompt_is_the_generators_prompt_and_the_readme_documents_every_rule():
    spec = importlib.util.spec_from_file_location("sim_generate", FOLDER / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert tomllib.loads((FOLDER / "task.toml").read_text())["prompt"] == module.PROMPT
    readme = (FOLDER / "README.md").read_text()
    for rule in RULES:
        assert f"`{rule.id}`" in readme and f"`{rule.label}`" in readme


def test_the_seed_skill_states_no_rule():
    assert {s.state for s in skill_states(TASK.seed_skill).values()} == {"absent"}
    assert {s.state for s in skill_states(FULL).values()} == {"stated"}


# --- the target -------------------------------------------------------------------------------

@pytest.mark.parametrize("line, rule, state", [
    ("- Orders to Alaska or Hawaii: route air.", "remote-state", "stated"),
    ("- Orders to Alaska: route ground.", "remote-state", "contradicted"),
    ("- Alaska goes by air, not ground.", "remote-state", "stated"),
    ("- Orders near the airport go freight.", "remote-state", "absent"),
    ("- Totals above $2,500 need a review.", "high-value", "stated"),
    ("- P.O. Box addresses ship postal.", "po-box", "stated"),
    ("- Codes starting with Z: freight.", "z-code", "stated"),
    ("- Order Z-12345 goes freight.", "z-code", "absent"),
    ("- Wholesale accounts get consolidated shipping.", "wholesale", "stated"),
    ("- Tacoma orders: pick up at the depot.", "tacoma", "stated"),
])
def test_rule_detection_is_a_robust_keyword_match(line, rule, state):
    assert skill_states(f"# Skill\n{line}\n")[rule].state == state


def test_a_skill_with_both_a_right_and_a_wrong_line_is_in_conflict():
    st = skill_states("- Alaska: air.\n- Alaska: ground.\n")["remote-state"]
    assert st.state == "conflict" and st.lines == (1, 2) and st.wrong == ("ground",)


def test_stating_the_rules_raises_accuracy_and_contradicting_them_lowers_it():
    wrong = TASK.seed_skill + "\n".join(r.texts[0].format(route="standard") for r in RULES)
    seed, full, contradicted = accuracy(TASK.seed_skill), accuracy(FULL), accuracy(wrong)
    assert 0.15 < seed < 0.4 and full > 0.8 and contradicted < 0.12


def test_the_target_is_deterministic_and_unrelated_edits_change_no_answer():
    prompts = [TASK.render(it) for it in ITEMS]
    assert [target_answer(FULL, p) for p in prompts] == [target_answer(FULL, p) for p in prompts]
    edited = TASK.seed_skill + "\n- Saturday delivery requests: route courier.\n- Be concise.\n"
    for item, prompt in zip(ITEMS, prompts):
        if item.expected != "courier":
            assert target_answer(edited, prompt) == target_answer(TASK.seed_skill, prompt), item.id


def test_a_contradicted_target_follows_the_wrong_rule():
    skill = TASK.seed_skill + "\n- Orders to Alaska or Hawaii: route ground.\n"
    answers = {target_answer(skill, TASK.render(it)) for it in ITEMS if it.expected == "air"}
    assert "ground" in answers


def test_the_target_runs_through_the_llm_layer_with_lazy_registration():
    target = LLM("sim/target", "target", GenSettings())
    item = TASK.split("test")[0]
    reply = target.complete(TASK.messages(FULL, item), stage="rollout", step=0)
    assert reply.ok and reply.text == target_answer(FULL, TASK.render(item)) and reply.prompt_tokens > 0


def test_unknown_prompts_get_a_plain_default():
    assert target_answer(FULL, "What is 2 + 2?") == "standard"
    assert rule_for("no order here") is None


# --- options and fault injection ---------------------------------------------------------------

def test_options_from_the_model_string():
    assert options("optimizer?faults=0")[1]["harmful"] == 0.0
    assert options("optimizer?faults=0&harmful=0.3")[1]["harmful"] == 0.3
    assert options("optimizer")[1]["malformed"] == sim.FAULTS["malformed"] > 0
    assert options("target?stated=0.5")[1]["stated"] == 0.5
    for bad, kind in (("target?bogus=1", "bad_request"), ("target?error=lots", "bad_request"),
                      ("critic", "not_found")):
        with pytest.raises(ProviderError) as info:
            options(bad)
        assert info.value.kind == kind


def test_a_bad_option_is_a_fatal_model_error():
    with pytest.raises(ModelError, match="unknown option 'bogus'"):
        LLM("sim/target?bogus=1", "target", GenSettings()).complete([{"role": "user", "content": "x"}],
                                                                     stage="rollout", step=0)


def raised(name: str, prompts: list[str]) -> list[str]:
    kinds = []
    for p in prompts:
        try:
            sim.handle(name, [{"role": "system", "content": FULL}, {"role": "user", "content": p}], GenSettings(), None)
            kinds.append("")
        except ProviderError as exc:
            kinds.append(exc.kind)
    return kinds


def test_target_faults_honour_their_rate_and_are_deterministic(monkeypatch):
    monkeypatch.setattr(sim, "_CALLS", Counter())
    prompts = [TASK.render(it) for it in ITEMS]
    first = raised("target?error=0.4", prompts)
    monkeypatch.setattr(sim, "_CALLS", Counter())
    assert raised("target?error=0.4", prompts) == first
    share = sum(bool(k) for k in first) / len(first)
    assert 0.3 < share < 0.5 and {k for k in first if k} == set(RETRYABLE_KINDS)


def test_a_retry_draws_a_fresh_fault_and_rate_limits_carry_retry_after(monkeypatch):
    monkeypatch.setattr(sim, "_CALLS", Counter())
    prompts = [TASK.render(it) for it in ITEMS[:60]]
    first = raised("target?rate_limit=0.5&retry_after=2", prompts)
    second = raised("target?rate_limit=0.5&retry_after=2", prompts)
    assert first != second and set(first) == {"", "rate_limit"}
    with pytest.raises(ProviderError) as info:
        for p in prompts:
            sim.handle("target?rate_limit=1&retry_after=2", [{"role": "user", "content": p}], GenSettings(), None)
    assert info.value.retry_after == 2.0


def test_the_llm_layer_retries_simulated_faults_to_success():
    target = LLM("sim/target?error=0.3&timeout=0.1", "target", GenSettings(max_retries=8))
    replies = [target.complete(TASK.messages(FULL, it), stage="rollout", step=0) for it in ITEMS[:40]]
    assert all(r.ok for r in replies)
    assert [r.text for r in replies] == [target_answer(FULL, TASK.render(it)) for it in ITEMS[:40]]


def test_a_fatal_simulated_fault_stops_with_a_model_error():
    with pytest.raises(ModelError):
        LLM("sim/target?auth=1", "target", GenSettings()).complete(TASK.messages(FULL, ITEMS[0]),
                                                                   stage="rollout", step=0)


# --- the optimizer ----------------------------------------------------------------------------

def test_the_optimizer_infers_the_rules_behind_the_failures():
    results = reflect(optimizer(), TASK.seed_skill, failing(["po-box", "saturday"]), budget=4, buffer=StepBuffer(),
                      meta_skill="", config=CONFIG, step=1, seed=3)
    edits = [e for r in results for e in r.edits]
    assert all(r.ok for r in results)
    assert {classify(e.content) for e in edits} == {"rule:po-box", "rule:saturday"}
    assert {e.section for e in edits} == {"Order dispatch assistant > House rules"}
    skill = apply_edits(TASK.seed_skill, edits).text
    assert skill_states(skill)["po-box"].state == skill_states(skill)["saturday"].state == "stated"
    assert "PO box" in results[0].summary or "Saturday" in results[0].summary


def test_the_optimizer_rewrites_a_contradicting_line_instead_of_adding_a_conflict():
    skill = TASK.seed_skill.rstrip() + "\n- PO Box addresses: route freight.\n"
    (result,) = reflect(optimizer(), skill, failing(["po-box"]), budget=2, buffer=StepBuffer(), meta_skill="",
                        config=CONFIG, step=1, seed=1)
    (edit,) = result.edits
    assert edit.op == "replace" and edit.target == "- PO Box addresses: route freight."
    assert skill_states(apply_edits(skill, [edit]).text)["po-box"].state == "stated"


def test_the_optimizer_respects_the_budget_and_proposes_nothing_for_covered_rules():
    results = reflect(optimizer(), TASK.seed_skill, failing(["po-box", "saturday", "tacoma"], 2), budget=2,
                      buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1)
    assert len(results[0].edits) == 2
    (covered,) = reflect(optimizer(), FULL, failing(["tacoma"]), budget=2,
                         buffer=StepBuffer(), meta_skill="", config=CONFIG.replace(failure_only=True), step=1, seed=1)
    assert all(classify(e.content) == "other" for e in covered.edits)  # only one-order patches, if anything


def fault_kinds(opts: str, rounds: int = 60, notes: str = "") -> Counter:
    """Classify every edit the optimizer proposes over many different reflection prompts."""
    kinds: Counter = Counter()
    seed_lines = {ln.strip() for ln in TASK.seed_skill.splitlines() if ln.strip()}
    rule_ids = [r.id for r in RULES]
    for k in range(rounds):
        picked = [rule_ids[(k + j) % len(rule_ids)] for j in range(3)]
        results = reflect(optimizer(opts), TASK.seed_skill, failing(picked, 3), budget=3, buffer=StepBuffer(),
                          meta_skill=notes, config=CONFIG.replace(minibatch_size=9), step=k, seed=k)
        for r in results:
            kinds["dropped"] += sum("does not exist" in d.detail for d in r.dropped)
            for e in r.edits:
                if e.section == "Routing Rules":
                    kinds["wrong_anchor"] += 1
                elif e.content.strip() in seed_lines:
                    kinds["duplicate"] += 1
                elif re.search(r"Order [A-Z]-\d{5}", e.content):
                    kinds["over_specific"] += 1
                else:
                    kinds[classify(e.content).split(":")[0]] += 1
    kinds["wrong_anchor"] += kinds.pop("dropped")
    return kinds


def test_fault_rates_are_roughly_honoured_and_deterministic():
    opts = "harmful=0.2&over_specific=0.2&duplicate=0.1&wrong_anchor=0.1&malformed=0"
    kinds = fault_kinds(opts)
    total = sum(kinds.values())
    assert total >= 150
    for kind, rate in (("harmful", 0.2), ("over_specific", 0.2), ("duplicate", 0.1), ("wrong_anchor", 0.1),
                       ("rule", 0.4)):
        assert abs(kinds[kind] / total - rate) < 0.08, (kind, kinds)
    assert fault_kinds(opts, rounds=10) == fault_kinds(opts, rounds=10)


def test_clean_optimizer_makes_no_faults():
    kinds = fault_kinds("faults=0", rounds=20)
    assert {k for k, n in kinds.items() if n} == {"rule"}


def test_strategy_notes_that_warn_against_a_fault_make_it_rarer():
    opts = "faults=0&over_specific=0.5"
    plain = fault_kinds(opts, rounds=30)
    warned = fault_kinds(opts, rounds=30, notes="- Avoid rules about one specific order.")
    assert warned["over_specific"] < plain["over_specific"] * 0.75


def reflect_messages(trajs) -> list[dict]:
    from skillopt.reflect import format_case, numbered, section_paths

    return prompt_messages("reflect", skill=numbered(TASK.seed_skill),
                           sections="; ".join(f'"{s}"' for s in section_paths(TASK.seed_skill)), notes="",
                           kind="failures", cases="\n".join(format_case(i, t, 600) for i, t in enumerate(trajs, 1)),
                           budget=3, common="")


def usable(text: str) -> bool:
    try:
        return isinstance(extract_json(text).get("edits"), list)
    except ValueError:
        return False


def test_malformed_replies_honour_their_rate_and_the_repair_fixes_some():
    first, repaired = [], []
    opts = options("optimizer?faults=0&malformed=0.5&repair=0.5")[1]
    rule_ids = [r.id for r in RULES]
    for k in range(80):
        messages = reflect_messages(failing([rule_ids[k % 10], rule_ids[(k + 3) % 10]], 1 + k % 4))
        text = sim_optimizer.answer(messages, opts)
        first.append(usable(text))
        if not first[-1]:
            retry = sim_optimizer.answer([*messages, {"role": "assistant", "content": text},
                                          {"role": "user", "content": "That reply was not usable."}], opts)
            repaired.append(usable(retry))
    assert 0.35 < first.count(False) / len(first) < 0.65
    assert 0.2 < sum(repaired) / len(repaired) < 0.8


def test_unknown_optimizer_prompts_get_plain_text():
    assert not sim_optimizer.answer([{"role": "system", "content": "Rate this essay."},
                                     {"role": "user", "content": "..."}], options("optimizer")[1]).startswith("{")


# --- the optimizer's other prompts --------------------------------------------------------------

def listing(*texts: str) -> str:
    return "\n".join(f"[{i}] add (support {i}, from failure)\n    new: {t}" for i, t in enumerate(texts, 1))


ALASKA_1 = RULES_BY_ID["remote-state"].texts[0].format(route="air")
ALASKA_2 = RULES_BY_ID["remote-state"].texts[1].format(route="air")
HARMFUL = RULES_BY_ID["tacoma"].texts[0].format(route="air")
SPECIFIC = "- Order B-12345 for Dana Quinn must be routed air."


def answer(name: str, **values) -> dict:
    return json.loads(sim_optimizer.answer(prompt_messages(name, **values), options("optimizer?faults=0")[1])
                      .split("```json\n")[-1].split("\n```")[0])


def test_merge_groups_edits_that_state_the_same_rule():
    assert answer("merge", edits=listing(ALASKA_1, SPECIFIC, ALASKA_2)) == {"groups": [[1, 3], [2]]}


def test_rank_puts_correct_rules_first_and_harmful_ones_last():
    assert answer("rank", skill="", edits=listing(HARMFUL, SPECIFIC, ALASKA_1))["order"] == [3, 2, 1]


def test_lr_counts_the_distinct_good_rules_within_bounds():
    assert answer("lr", lines=20, min_lr=1, lr=4, edits=listing(ALASKA_1, ALASKA_2, HARMFUL))["count"] == 1
    assert answer("lr", lines=20, min_lr=2, lr=4, edits=listing(SPECIFIC))["count"] == 2


def test_slow_update_guidance_states_the_rules_behind_persistent_failures():
    from skillopt.reflect import format_case

    cases = "\n".join(format_case(i, t, 400) for i, t in enumerate(failing(["chargeback"], 2), 1))
    reply = answer("slow_update", n=20, improved=3, regressed=0, persistent=2, stable=15, diff="(no change)",
                   guidance="(none yet)", regressed_cases="(none)", failing_cases=cases, skill=TASK.seed_skill)
    guidance = "\n".join(f"- {b}" for b in reply["guidance"])
    assert skill_states(guidance)["chargeback"].state == "stated" and "fixed 3 orders" in guidance


def test_meta_notes_learn_from_rejected_edits():
    reply = answer("meta_skill", notes="(none yet)",
                   evidence="THIS EPOCH on the same tasks: improved 2, regressed 1, still failing 3, still right 14.",
                   accepted=f"- add: \"{ALASKA_1}\"", rejected=f"- add: \"{SPECIFIC}\" (gate 0.600 -> 0.600)\n"
                                                          f"- add: \"{HARMFUL}\" (gate 0.600 -> 0.550)")
    notes = " ".join(reply["notes"]).lower()
    assert "specific" in notes and "contradict" in notes and "1 regressed" in notes


def test_one_order_lines_distract_the_target_and_the_optimizer_deletes_the_misleading_one():
    clutter = "".join(f"- Order B-1234{k} for Dana Quinn must be routed air.\n" for k in range(5))
    assert accuracy(FULL + clutter) < accuracy(FULL) - 0.05
    skill = TASK.seed_skill.rstrip() + "\n- Order B-12345 for Dana Quinn must be routed air.\n"
    line = skill.split("\n").index("- Order B-12345 for Dana Quinn must be routed air.") + 1
    misled = [Trajectory(t.item_id, t.prompt, "air", t.expected, t.evaluation) for t in failing(["po-box"], 3)]
    (result,) = reflect(optimizer(), skill, misled, budget=3, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                        step=1, seed=1)
    deletes = [e for e in result.edits if e.op == "delete"]
    assert [e.target for e in deletes] == [skill.split("\n")[line - 1]] and "line " + str(line) in result.summary

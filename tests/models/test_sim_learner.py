"""The non-oracle simulated optimizer `sim/learner`: it never reads the world, it learns from the
cases it is shown, and its noise option sets how many of its rules are wrong or irrelevant.

The tests may read the world (simworld, classify) to judge what the learner proposed; the
learner's own modules may not, and the first tests check that they do not."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.config import RunConfig
from skillopt.errors import ModelError
from skillopt.models import llm, sim_learner
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings
from skillopt.models.sim import options
from skillopt.models.sim_optimizer import classify
from skillopt.models.simworld import RULES_BY_ID, skill_states
from skillopt.patch import apply_edits
from skillopt.prompts import prompt_messages
from skillopt.reflect import StepBuffer, format_case, reflect
from skillopt.store.reader import Reader
from skillopt.tasks.loader import load_task
from skillopt.tasks.task import Trajectory
from tests.helpers import run_sim

ROOT = Path(__file__).resolve().parents[2]
LEARNER_MODULES = ("sim_learner", "sim_clues")
TASK = load_task("sim-rulebook")
CONFIG = RunConfig(target_model="sim/target", optimizer_model="sim/learner", minibatch_size=8)
HOME = "Order dispatch assistant > House rules"


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)


def learner(opts: str = "noise=0") -> LLM:
    return LLM(f"sim/learner?{opts}", "optimizer", GenSettings(max_retries=0))


def failing(rule_ids, per_rule: int = 4, answer: str = "standard") -> list[Trajectory]:
    """Failed trajectories (the target said `answer`) of the first train items of each rule."""
    out = []
    for rid in rule_ids:
        items = [it for it in TASK.split("train") if it.expected == RULES_BY_ID[rid].label][:per_rule]
        out += [Trajectory(it.id, TASK.render(it), answer, it.expected, TASK.evaluate(it, answer)) for it in items]
    return out


def proposed(opts: str, rule_ids, skill: str = "", seed: int = 1, budget: int = 4) -> list:
    results = reflect(learner(opts), skill or TASK.seed_skill, failing(rule_ids), budget=budget,
                      buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=seed)
    assert all(r.ok for r in results)
    return [e for r in results for e in r.edits]


# --- it never reads the world ---------------------------------------------------------------

def imported_names(module: str) -> set[str]:
    tree = ast.parse((ROOT / "skillopt" / "models" / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {f"{'.' * node.level}{node.module or ''}:{a.name}" for a in node.names}
        elif isinstance(node, (ast.Name, ast.Attribute)):
            names.add(node.id if isinstance(node, ast.Name) else node.attr)
    return names


@pytest.mark.parametrize("module", LEARNER_MODULES)
def test_the_learner_imports_nothing_that_knows_the_hidden_rules(module):
    names = imported_names(module)
    worldly = {n for n in names if any(w in n for w in ("simworld", "sim_optimizer", "RULES", "rule_for",
                                                         "skill_states", "classify"))}
    assert not worldly, f"{module} touches the world: {worldly}"
    local = {n.split(":")[0] for n in names if n.startswith(".")}
    assert local <= {".sim_clues"}, f"{module} imports other model modules: {local}"


def test_importing_the_learner_does_not_load_the_world():
    # The AST check above misses an indirect import; a fresh interpreter shows what really loads.
    code = ("import sys; import skillopt.models.sim_learner; "
            "print(sorted(m for m in sys.modules if m.startswith('skillopt.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "simworld" not in out and "sim_optimizer" not in out and "sim_learner" in out


# --- it learns from the cases ----------------------------------------------------------------

def test_it_finds_the_words_a_failure_group_shares():
    edits = proposed("noise=0", ["po-box", "wholesale", "tacoma"])
    assert {classify(e.content) for e in edits} == {"rule:po-box", "rule:wholesale", "rule:tacoma"}
    assert {e.section for e in edits} == {HOME}
    skill = apply_edits(TASK.seed_skill, edits).text
    assert {skill_states(skill)[r].state for r in ("po-box", "wholesale", "tacoma")} == {"stated"}


def test_a_code_prefix_and_a_state_abbreviation_become_rules_the_target_reads():
    edits = {classify(e.content): e.content for e in proposed("noise=0", ["z-code", "remote-state"])}
    assert 'starts with "Z"' in edits["rule:z-code"]
    assert "Alaska" in edits["rule:remote-state"]  # "AK" is Alaska: what any language model knows


def test_it_rewrites_the_line_that_gives_the_clue_another_answer():
    wrong = '- If the Customer line mentions "wholesale", answer hold.'
    skill = TASK.seed_skill.rstrip() + "\n" + wrong + "\n"
    (edit,) = proposed("noise=0", ["wholesale"], skill=skill)
    assert edit.op == "replace" and edit.target == wrong
    assert skill_states(apply_edits(skill, [edit]).text)["wholesale"].state == "stated"


def test_it_proposes_nothing_the_skill_already_says_and_respects_the_budget():
    first = proposed("noise=0", ["lithium", "saturday"])
    skill = apply_edits(TASK.seed_skill, first).text
    assert proposed("noise=0", ["lithium", "saturday"], skill=skill) == []
    results = reflect(learner("noise=0"), TASK.seed_skill, failing(["po-box", "wholesale", "tacoma"]), budget=1,
                      buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1)
    assert [len(r.edits) for r in results] == [1, 1]  # the budget is per call; a call saw two groups


def test_the_same_prompt_gets_the_same_reply():
    messages = prompt_messages("merge", edits="[1] add (support 2, from failure)\n    new: - If x, answer air.")
    opts = options("learner?noise=0.5")[1]
    assert sim_learner.answer(messages, opts) == sim_learner.answer(messages, opts)
    assert proposed("noise=0.5", ["saturday", "chargeback"], seed=4) == proposed("noise=0.5", ["saturday",
                                                                                               "chargeback"], seed=4)


# --- noise -------------------------------------------------------------------------------------

GROUPS = [["po-box", "wholesale"], ["tacoma", "lithium"], ["saturday", "chargeback"], ["engraved", "z-code"],
          ["remote-state", "wholesale"]]


def test_with_noise_one_every_proposed_rule_is_wrong_or_irrelevant():
    clean = [proposed("noise=0", g, seed=s) for s in range(4) for g in GROUPS]
    noisy = [proposed("noise=1", g, seed=s) for s in range(4) for g in GROUPS]
    assert sum(map(len, noisy)) >= sum(map(len, clean)) * 0.8  # still one rule per group, mostly
    assert all(not classify(e.content).startswith("rule:") for edits in noisy for e in edits)
    assert any(classify(e.content).startswith("harmful:") for edits in noisy for e in edits)  # wrong answers


def test_the_noise_rate_is_roughly_honoured():
    changed = total = 0
    for s in range(12):
        for g in GROUPS:
            clean = {e.content for e in proposed("noise=0", g, seed=s)}
            noisy = [e.content for e in proposed("noise=0.3", g, seed=s)]
            total += len(noisy)
            changed += sum(c not in clean for c in noisy)
    assert total >= 100 and 0.18 <= changed / total <= 0.42


# --- whole runs --------------------------------------------------------------------------------

def test_a_short_run_learns_without_the_oracle(tmp_path):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "optimizer_model=sim/learner", "num_epochs=2")
    reader = Reader(db)
    run, tests = reader.run(run_id), reader.tests(run_id)
    assert run["status"] == "completed"
    assert run["best_score"] > reader.seed_score(run_id) + 0.15  # selection split
    assert tests["best"]["score"] > tests["seed"]["score"] + 0.15
    assert any(s["decision"].startswith("accept") for s in reader.steps(run_id))


def test_a_run_with_noise_one_proposes_no_true_rule_and_learns_nothing(tmp_path):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "optimizer_model=sim/learner?noise=1", "num_epochs=2", "worked_examples=false",
                     "clue_rules=false")
    reader = Reader(db)
    contents = [e["content"] for e in reader.edits(run_id) if e["content"]]
    assert contents and not [c for c in contents if classify(c).startswith("rule:")]
    assert reader.tests(run_id)["best"]["score"] <= reader.tests(run_id)["seed"]["score"] + 0.05


def test_with_an_optimizer_that_proposes_nothing_true_worked_examples_still_teach_the_target(tmp_path):
    """Every optimizer candidate is rejected, so each step tries its worked examples; the
    trials' pooled wins let them in, and the skill holds no rule but the examples."""
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "optimizer_model=sim/learner?noise=1", "num_epochs=2")
    reader = Reader(db)
    tests = reader.tests(run_id)
    kept = [g for g in reader.gate_decisions(run_id) if g["kind"] == "examples" and g["decision"].startswith("accept")]
    assert kept and all(s["decision"] in ("reject", "skip") for s in reader.steps(run_id))
    assert tests["best"]["score"] >= tests["seed"]["score"] + 0.15


def test_every_structured_call_gets_a_usable_reply(tmp_path):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "optimizer_model=sim/learner", "num_epochs=2", "merge_mode=llm",
                     "lr_scheduler=autonomous", "use_slow_update=true", "use_meta_skill=true")
    reader = Reader(db)
    stages = {r["stage"] for r in reader.q("SELECT DISTINCT stage FROM llm_calls WHERE run_id = ? "
                                           "AND role = 'optimizer'", (run_id,))}
    assert {"reflect", "merge", "lr", "slow_update", "meta"} <= stages
    assert not reader.q("SELECT * FROM llm_calls WHERE run_id = ? AND role = 'optimizer' AND error != ''",
                        (run_id,))
    assert all(not r["error"] for r in reader.slow_updates(run_id))
    assert all(not r["error"] for r in reader.meta_skills(run_id))


def test_slow_update_states_the_clue_of_the_failures_it_is_shown():
    cases = "\n".join(format_case(i, t, 400) for i, t in enumerate(failing(["chargeback"], 3), 1))
    messages = prompt_messages("slow_update", n=20, improved=3, regressed=0, persistent=3, stable=14,
                               diff="(no change)", guidance="(none yet)", regressed_cases="(none)",
                               failing_cases=cases, skill=TASK.seed_skill)
    guidance = json.loads(sim_learner.answer(messages, options("learner?noise=0")[1]))["guidance"]
    assert skill_states("\n".join(f"- {b}" for b in guidance))["chargeback"].state == "stated"


def test_learner_options_are_checked():
    assert options("learner?noise=0.3&seed=2")[1]["noise"] == 0.3
    with pytest.raises(ModelError, match="unknown option 'harmful'"):
        learner("harmful=0.3").complete([{"role": "user", "content": "x"}], stage="reflect", step=0)

"""Reflection: prompts, the line -> target conversion, repair and failures."""
from __future__ import annotations

import json
import threading
import time

import pytest

from skillopt.models import llm
from skillopt.config import RunConfig
from skillopt.errors import BudgetExhausted, ModelError
from skillopt.models.limits import Meter
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.patch import Edit
from skillopt.state import RejectedEdit
from skillopt.proposals import EXTRA_EDITS, reflect_schema
from skillopt.minibatch import make_minibatches
from skillopt.reflect import MinibatchResult, StepBuffer, common_lines, format_case, numbered, reflect
from skillopt.prompts import clip, prompt_messages, template
from skillopt.tasks.task import Evaluation, Trajectory

from tests.helpers import ROUTING_SKILL as SKILL
from tests.helpers import scripted


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)


def traj(item_id: str, expected: str, hard: float, *, prompt: str = "", output: str = "standard",
         error: str = "") -> Trajectory:
    return Trajectory(item_id=item_id, prompt=prompt or f"Order {item_id}: which route?", output=output,
                      expected=expected, evaluation=Evaluation(hard, hard, f"chose {output!r}, expected {expected!r}"),
                      error=error)


def user_text(messages) -> str:
    return messages[1]["content"]


CONFIG = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", minibatch_size=4, analyst_workers=8)

def mixed(n: int = 20) -> list[Trajectory]:
    labels = ["air", "freight", "postal"]
    return [traj(f"i{k:02d}", labels[k % 3], 1.0 if k % 4 == 0 else 0.0) for k in range(n)]


def test_case_groups_get_a_header_with_what_the_assistant_said():
    seen = []

    def reply(messages):
        seen.append(user_text(messages))
        return json.dumps({"summary": "", "edits": []})

    trajs = [traj("a", "air", 0.0, output="ground"), traj("b", "air", 0.0, output="ground"),
             traj("c", "air", 0.0, output="freight"), traj("d", "postal", 0.0)]
    reflect(scripted(reply, "groups"), SKILL, trajs, budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
            step=1, seed=1)
    assert '=== 3 cases expecting "air" (the assistant said "ground" x2, "freight" x1) ===' in seen[0]
    assert '=== 1 case expecting "postal" (the assistant said "standard" x1) ===' in seen[0]


def test_failure_only_and_errored_trajectories():
    trajs = mixed(12) + [traj("err", "air", 0.0, error="timeout: gave up")]
    batches = make_minibatches(trajs, 4, seed=1, failure_only=True)
    assert {k for k, _ in batches} == {"failure"}
    assert "err" not in [t.item_id for _, b in batches for t in b]


# --- prompts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["reflect", "reflect_open", "merge", "rank", "lr", "slow_update", "meta_skill"])
def test_every_template_has_a_marker_and_both_halves(name):
    system, user = template(name)
    assert system.startswith("<!-- skillopt:") and user


def test_templates_keep_braces_and_dollars_of_the_skill_intact():
    skill = "Use {placeholders} and $HOME, ${x} and }{ as written."
    messages = prompt_messages("reflect", skill=skill, sections="", notes="", kind="failures", cases="", budget=2,
                               common="")
    assert skill in user_text(messages) and "${" not in messages[0]["content"]


def test_common_lines_need_at_least_two_prompts():
    assert common_lines(["a\nb"]) == ()
    assert common_lines(["a\nb\nc", " b\nx\na", "a\nb"]) == ("a", "b")


def test_numbered_lines_and_clip():
    assert numbered("a\n\nb").splitlines() == ["  1| a", "  2| ", "  3| b"]
    long = "x" * 1000
    clipped = clip(long, 200)
    assert len(clipped) <= 200 and "clipped" in clipped and clipped.startswith("x")
    assert clip("short", 200) == "short"


def test_format_case_clips_long_trajectories_with_a_note_and_never_repeats_the_skill():
    t = traj("a", "air", 0.0, prompt=SKILL + "\nORDER: " + "long text " * 200)
    case = format_case(1, t, 600, SKILL)
    assert "clipped" in case and len(case) < 800
    assert SKILL.strip() not in case and "[the skill]" in case
    short = format_case(2, traj("b", "air", 0.0), 600)
    assert "clipped" not in short and "Expected: air" in short and "Feedback:" in short


def test_template_lines_shared_by_every_case_are_shown_once():
    seen = []

    def reply(messages):
        seen.append(user_text(messages))
        return json.dumps({"summary": "", "edits": []})

    trajs = [traj(f"i{k}", "air", 0.0, prompt=f"Route this order.\nOrder: {k}\nAnswer with the route only.")
             for k in range(3)]
    reflect(scripted(reply, "common"), SKILL, trajs, budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
            step=1, seed=1)
    user = seen[0]
    assert user.count("Route this order.") == 1 and user.count("Answer with the route only.") == 1
    assert "EVERY TASK BELOW ALSO SAYS:\nRoute this order.\nAnswer with the route only." in user
    assert all(f"Task:\nOrder: {k}\nOutput:" in user for k in range(3))


def test_reflect_prompt_has_skill_sections_budget_meta_and_buffer():
    seen = []

    def reply(messages):
        seen.append(messages)
        return json.dumps({"summary": "s", "edits": []})

    buffer = StepBuffer(patterns=("orders to Alaska expect air",),
                        rejected=(RejectedEdit(2, Edit("add", content="- Z codes go ground."), 0.5, 0.4, "gate"),))
    reflect(scripted(reply, "prompt"), SKILL, [traj("a", "air", 0.0)], budget=3, buffer=buffer,
            meta_skill="- Prefer general rules.", config=CONFIG, step=3, seed=1)
    user = user_text(seen[0])
    for part in ("  7| - When nothing special applies", '"Routing > House rules"', '"Routing > Answer format"',
                 "at most 3 edits",
                 "- Prefer general rules.", "orders to Alaska expect air", "Z codes go ground", "0.500 -> 0.400",
                 "Expected: air"):
        assert part in user, part
    assert "skillopt:reflect" in seen[0][0]["content"]


@pytest.mark.parametrize("task, kind, says", [
    ("word-problems", "number", "must end with a line 'Answer: <number>'"),
    ("invoice-extraction", "fields", "one JSON object with the fields"),
    ("ticket-routing", "label", "exactly one of: "),
])
def test_every_built_in_task_says_how_it_scores_replies(task, kind, says):
    from skillopt.tasks.loader import load_task

    scoring = load_task(task).scoring()
    assert scoring.kind == kind and says in scoring.description


def test_exact_answers_that_are_not_a_small_set_read_as_text(tmp_path):
    from dataclasses import replace

    from skillopt.tasks.loader import load_task
    from skillopt.tasks.task import Item

    task = load_task("ticket-routing")
    many = tuple(Item(f"i{k}", {}, f"answer number {k}", "train") for k in range(30))
    exact = replace(task, evaluator=__import__("skillopt.tasks.evaluators", fromlist=["x"]).build_evaluator("exact"),
                    splits={**task.splits, "train": many})
    assert exact.scoring().kind == "text"
    assert replace(exact, splits=task.splits).scoring().kind == "label"


def test_an_edit_restating_what_every_task_says_or_the_prompts_own_wording_is_dropped_as_an_echo():
    from skillopt.tasks.loader import load_task

    edits = [{"op": "add", "section": "", "line": 0, "content": c, "rationale": "r"} for c in (
        "Answer with the route only.",  # every task of the batch already says it: the target reads it anyway
        "Write instructions that fix the cause: the output form, or the method.",  # the open template's guidance
        "- Orders to Alaska or Hawaii go air, whatever the weight.")]
    trajs = [traj(f"i{k}", "air", 0.0, prompt=f"Route this order.\nOrder: {k}\nAnswer with the route only.")
             for k in range(3)]
    (result,) = reflect(scripted(lambda m: json.dumps({"summary": "s", "edits": edits}), "echo"), SKILL, trajs,
                        budget=3, buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1,
                        scoring=load_task("word-problems").scoring())
    assert [e.content for e in result.edits] == ["- Orders to Alaska or Hawaii go air, whatever the weight."]
    assert sorted(d.edit.content for d in result.dropped if d.reason == "echo") == [
        "Answer with the route only.", "Write instructions that fix the cause: the output form, or the method."]


def test_number_tasks_get_the_open_template_with_the_scoring_rule_and_no_draft_rules():
    from skillopt.tasks.loader import load_task

    seen = []

    def reply(messages):
        seen.append(messages)
        return json.dumps({"summary": "s", "edits": []})

    scoring = load_task("word-problems").scoring()
    trajs = [Trajectory(f"w{k}", f"Q{k}: 3 apples and {k} pears?", f"{k + 3}", str(k + 3),
                        Evaluation(0.0, 0.5, "no 'Answer:' line: the reply must end with 'Answer: <number>'"))
             for k in range(4)]
    reflect(scripted(reply, "numbers"), SKILL, trajs, budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
            step=1, seed=1, scoring=scoring)
    system, user = seen[0][0]["content"], user_text(seen[0])
    assert "skillopt:reflect_open" in system and "HOW REPLIES ARE SCORED: the reply must end with a line" in system
    assert "Each task has one right number" in system and "Draft rule" not in user and "===" not in user
    assert "Feedback: no 'Answer:' line" in user
    seen.clear()
    reflect(scripted(reply, "labels"), SKILL, [traj("a", "air", 0.0), traj("b", "air", 0.0)], budget=2,
            buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1,
            scoring=load_task("ticket-routing").scoring())
    assert "skillopt:reflect -->" in seen[0][0]["content"] and "=== 2 cases expecting" in user_text(seen[0])


def test_contradicted_rules_are_dropped_with_their_evidence_and_rewritten_when_the_data_is_clear():
    from skillopt.evidence import Evidence, Example

    evidence = Evidence(labels=("air", "ground"), examples=tuple(
        [Example(f"Order {k}: lithium batteries", "ground") for k in range(4)]
        + [Example(f"Order {k}: flowers", "air") for k in range(5)]
        + [Example(f"Order {k}: candles", "air" if k < 3 else "ground") for k in range(5)]), repair=True)
    edits = [{"op": "add", "section": "", "line": 0, "content": c, "rationale": "r"}
             for c in ("- Lithium batteries go air.", "- Candles go ground.", "- Flowers go air.")]
    (result,) = reflect(scripted(lambda m: json.dumps({"summary": "s", "edits": edits}), "evidence"), SKILL,
                        [traj("a", "ground", 0.0)], budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                        step=1, seed=1, evidence=evidence)
    # lithium tasks are all ground: the rule goes on with that answer; candles are 3 air to 2
    # ground, no clear answer: that rule is only dropped; the flowers rule holds as proposed
    assert [e.content for e in result.edits] == ["- Lithium batteries go ground.", "- Flowers go air."]
    assert result.edits[0].rationale == "r [answer rewritten to the train data's]"
    drops = {d.edit.content: d.detail for d in result.dropped if d.reason == "contradicted"}
    assert drops == {"- Lithium batteries go air.": "batteries / lithium appear in 4 train tasks seen so far, "
                                                    "answered ground 4; the rule says air; rewritten to their answer",
                     "- Candles go ground.": "candles appear in 5 train tasks seen so far, answered air 3, ground 2; "
                                             "the rule says ground"}


def test_an_edit_rejected_alone_is_blocked_one_rejected_with_others_comes_back_as_context():
    seen = []
    alone, first, second = (Edit("add", content="- Z codes go ground."), Edit("add", content="- Alaska: air."),
                            Edit("add", content="- Hawaii: air."))
    buffer = StepBuffer(rejected=(RejectedEdit(2, alone, 0.5, 0.4, "gate"),
                                  RejectedEdit(3, first, 0.5, 0.45, "gate", companions=(second,)),
                                  RejectedEdit(3, second, 0.5, 0.45, "gate", companions=(first,))))

    def reply(messages):
        seen.append(messages)
        return json.dumps({"summary": "s", "edits": [
            {"op": "add", "section": "", "line": 0, "content": c, "rationale": ""}
            for c in ("- Z codes  go ground.", "- Alaska: air.", "- Guam: air.")]})

    (result,) = reflect(scripted(reply, "rejected"), SKILL, [traj("a", "air", 0.0)], budget=3, buffer=buffer,
                        meta_skill="", config=CONFIG, step=4, seed=1)
    assert [e.content for e in result.edits] == ["- Alaska: air.", "- Guam: air."]  # a companion may come back
    (dropped,) = result.dropped
    assert dropped.reason == "repeat_of_rejected" and dropped.edit.content == "- Z codes  go ground."
    assert dropped.detail == "repeats an edit the gate rejected alone at step 2"
    user = user_text(seen[0])
    assert 'add: "- Z codes go ground." (gate 0.500 -> 0.400, rejected alone)' in user
    together = user.split("rejected together with 1 other edit (gate 0.500 -> 0.450)", 1)[1]
    assert together.index('  - add: "- Alaska: air."') < together.index('  - add: "- Hawaii: air."')


def test_schema_is_bounded():
    schema = reflect_schema(3, ["Routing", "Routing > House rules"], 12)
    edits = schema["properties"]["edits"]
    assert edits["maxItems"] == 3 + EXTRA_EDITS
    assert edits["items"]["properties"]["section"]["enum"] == ["Routing", "Routing > House rules", ""]
    assert edits["items"]["properties"]["line"]["maximum"] == 12
    assert edits["items"]["properties"]["content"]["maxLength"] > 0


# --- reflect(): parallel, ordered, never raising on bad output -----------------------------------

def test_results_come_in_minibatch_order_whatever_the_completion_order():
    trajs = [traj(f"f{k}", ["air", "freight", "postal"][k % 3], 0.0) for k in range(12)]
    first = make_minibatches(trajs, 4, seed=5)[0][1][0].prompt
    done, order, lock = threading.Event(), [], threading.Lock()

    def reply(messages):
        if first in user_text(messages):
            done.wait(timeout=10)  # the first minibatch finishes last
        with lock:
            order.append(first in user_text(messages))
            if len(order) == 2:
                done.set()
        return json.dumps({"summary": user_text(messages).split("--- case 1")[1][:40], "edits": []})

    results = reflect(scripted(reply, "order"), SKILL, trajs, budget=2, buffer=StepBuffer(), meta_skill="",
                      config=CONFIG, step=1, seed=5)
    assert [r.index for r in results] == [0, 1, 2] and order[-1] is True
    assert all(r.ok for r in results)
    assert first.split(":")[0] in results[0].summary


@pytest.mark.parametrize("one_at_a_time", [True, False])
def test_a_model_that_takes_one_call_at_a_time_gets_them_in_minibatch_order(one_at_a_time):
    """The embedded model's reply can depend on the call before it: its calls must come in one order."""
    trajs = [traj(f"f{k}", ["air", "freight", "postal"][k % 3], 0.0) for k in range(16)]
    firsts = [batch[0].prompt for _, batch in make_minibatches(trajs, 4, seed=5)]
    seen, in_flight, most, lock = [], [0], [0], threading.Lock()

    def handler(name, messages, settings, response_format):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.02)  # long enough for a pool's other threads to start their calls
        with lock:
            in_flight[0] -= 1
            seen.append(next(i for i, f in enumerate(firsts) if f in user_text(messages)))
        return HandlerResult(json.dumps({"summary": "s", "edits": []}), 10, 5)

    register_provider("oneatatime", handler, concurrency=(lambda name: 1) if one_at_a_time else None)
    optimizer = llm.LLM("oneatatime/x", "optimizer", GenSettings(max_retries=0))
    results = reflect(optimizer, SKILL, trajs, budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                      step=1, seed=5)
    assert [r.index for r in results] == [0, 1, 2, 3] and all(r.ok for r in results)
    if one_at_a_time:
        assert most[0] == 1 and seen == [0, 1, 2, 3]
    else:  # any other model keeps its parallel calls (the setup above does overlap them)
        assert most[0] > 1


def test_malformed_output_is_repaired_once():
    calls = []

    def reply(messages):
        calls.append(messages)
        if len(messages) == 2:
            return '{"summary": "cut off", "edits": [{"op": "add", "con'
        return json.dumps({"summary": "fixed", "edits": [{"op": "add", "content": "- Alaska: air.", "line": 0,
                                                         "section": "House rules", "rationale": ""}]})

    (result,) = reflect(scripted(reply, "repair"), SKILL, [traj("a", "air", 0.0)], budget=2, buffer=StepBuffer(),
                        meta_skill="", config=CONFIG, step=1, seed=1)
    assert len(calls) == 2 and result.ok and result.summary == "fixed" and result.edits[0].section == "House rules"


def test_unrepairable_output_is_a_failed_minibatch_not_an_exception():
    (result,) = reflect(scripted(lambda m: "I think the skill is fine.", "garbage"), SKILL,
                        [traj("a", "air", 0.0)], budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                        step=1, seed=1)
    assert isinstance(result, MinibatchResult) and not result.ok and result.edits == ()
    assert "invalid_json" in result.error and result.item_ids == ("a",)


def test_retryable_provider_failure_is_a_failed_minibatch():
    (result,) = reflect(scripted(lambda m: ProviderError("server", "503"), "down"), SKILL,
                        [traj("a", "air", 0.0)], budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                        step=1, seed=1)
    assert not result.ok and "server" in result.error


def test_fatal_model_errors_and_budget_exhaustion_propagate():
    with pytest.raises(ModelError):
        reflect(scripted(lambda m: ProviderError("auth", "bad key"), "auth"), SKILL, mixed(), budget=2,
                buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1)
    ok = json.dumps({"summary": "", "edits": []})
    with pytest.raises(BudgetExhausted):
        reflect(scripted(lambda m: ok, "budget", meter=Meter(max_calls=2)), SKILL, mixed(), budget=2,
                buffer=StepBuffer(), meta_skill="", config=CONFIG, step=1, seed=1)


def test_no_trajectories_no_calls():
    assert reflect(scripted(lambda m: pytest.fail("called"), "none"), SKILL, [], budget=2, buffer=StepBuffer(),
                   meta_skill="", config=CONFIG, step=1, seed=1) == ()

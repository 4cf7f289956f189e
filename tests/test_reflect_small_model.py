"""Reflection aids for small optimizers: clue words, draft rules, contrasts, placeholder guard."""
from __future__ import annotations

from skillopt.config import RunConfig
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, register_provider
from skillopt.proposals import parse_edits
from skillopt.reflect import StepBuffer, clue_words, reflect
from skillopt.tasks.task import Evaluation, Trajectory

SKILL = "# Routing\n\nRoute each order.\n\n## Queues\n\n- air: urgent parcels\n- freight: pallets\n"


def traj(item_id: str, text: str, expected: str, output: str) -> Trajectory:
    hard = 1.0 if output == expected else 0.0
    return Trajectory(item_id=item_id, prompt=f"Route this order.\nOrder: {text}\nAnswer with the route only.",
                      output=output, expected=expected,
                      evaluation=Evaluation(hard, hard, f"chose {output!r}, expected {expected!r}"))


STEP = [
    traj("f1", "Ten pallets of cement, hazardous label attached", "freight", "air"),
    traj("f2", "A crate marked hazardous, two pallets of paint", "freight", "air"),
    traj("f3", "Hazardous solvent drums for the plant", "freight", "air"),
    traj("s1", "Urgent letter for the clinic, same day please", "air", "air"),
    traj("s2", "Urgent spare part, the line stands still", "air", "air"),
]


def test_clue_words_are_shared_by_the_group_and_rare_elsewhere():
    group = [t.prompt for t in STEP[:3]]
    others = [t.prompt for t in STEP[3:]]
    words = clue_words(group, others)
    assert words[0] == "hazardous"  # in all three failures, in no other task
    assert "route" not in words and "the" not in words  # template and stop words never count
    assert "urgent" not in words


def test_clue_words_need_two_cases():
    assert clue_words([STEP[0].prompt], [STEP[3].prompt]) == ()


def test_parse_edits_drops_copied_template_slots_but_keeps_real_rules():
    reply = {"summary": "s", "edits": [
        {"op": "add", "section": "", "line": 0, "content": "- If a task mentions <the shared clue>, answer <expected>.",
         "rationale": ""},
        {"op": "add", "section": "", "line": 0, "content": "- If an order mentions hazardous goods, answer freight.",
         "rationale": ""}]}
    parsed = parse_edits(reply, SKILL, "failure", 4)
    assert [e.content for e in parsed.edits] == ["- If an order mentions hazardous goods, answer freight."]
    assert len(parsed.dropped) == 1 and parsed.dropped[0].reason == "template_slot"
    assert "placeholder" in parsed.dropped[0].detail


_SEEN: list[str] = []


def _capture(name, messages, settings, response_format):
    _SEEN.append(messages[1]["content"])
    return HandlerResult('{"summary": "hazardous goods go by freight", "edits": []}', 10, 5)


register_provider("h10capture", _capture)


def test_failure_prompt_shows_clue_words_a_draft_rule_and_a_contrasting_success():
    _SEEN.clear()
    optimizer = LLM("h10capture/x", "optimizer", GenSettings(max_retries=0))
    config = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", minibatch_size=8,
                       failure_only=True)
    results = reflect(optimizer, SKILL, STEP, budget=2, buffer=StepBuffer(), meta_skill="", config=config,
                      step=1, seed=3)
    assert len(results) == 1 and results[0].ok
    user = _SEEN[0]
    assert "Words these 3 tasks share: hazardous" in user
    # the draft names the right answer only: a small target answers a label a rule names, "not" or no
    assert "Draft rule" in user and "If a task mentions hazardous or pallets, answer freight." in user
    assert "not air" not in user.split("Draft rule", 1)[1].split("\n", 1)[0]
    assert "(the assistant said \"air\" x3)" in user  # what was answered instead is still shown
    assert 'Contrast: this task rightly got "air": ' in user and "Urgent" in user
    assert "Route this order." not in user.split("CASES (", 1)[1]  # the template line is shown once, above


def _repeat(name, messages, settings, response_format):
    return HandlerResult('{"summary": "s", "edits": [{"op": "add", "section": "", "line": 0, "rationale": "",'
                         ' "content": "- If an order mentions  hazardous goods, answer air."},'
                         ' {"op": "add", "section": "", "line": 0, "rationale": "",'
                         ' "content": "- If an order mentions hazardous goods, answer freight."}]}', 10, 5)


register_provider("h10repeat", _repeat)


def test_an_edit_the_gate_rejected_is_dropped_when_proposed_again():
    from skillopt.patch import Edit
    from skillopt.state import RejectedEdit

    bad = Edit(op="add", content="- If an order mentions hazardous goods, answer air.", source="failure")
    buffer = StepBuffer(rejected=(RejectedEdit(1, bad, 0.6, 0.5, "gate"),))
    config = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", failure_only=True)
    (result,) = reflect(LLM("h10repeat/x", "optimizer", GenSettings(max_retries=0)), SKILL, STEP, budget=2,
                        buffer=buffer, meta_skill="", config=config, step=2, seed=3)
    assert [e.content for e in result.edits] == ["- If an order mentions hazardous goods, answer freight."]
    assert [(d.reason, d.edit.content) for d in result.dropped] == [
        ("repeat_of_rejected", "- If an order mentions  hazardous goods, answer air.")]


def test_only_a_group_answered_with_another_answer_gets_a_draft_rule():
    """A success group, or failures that gave the right answer in another form, have no clue to
    find: a draft rule for them would tell the target what it already answers."""
    _SEEN.clear()
    optimizer = LLM("h10capture/x", "optimizer", GenSettings(max_retries=0))
    config = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", minibatch_size=8)
    wordy = [traj(f"w{i}", f"Urgent hazardous order {i}, hazardous again", "air", "Air.") for i in range(3)]
    reflect(optimizer, SKILL, [*STEP, *wordy], budget=2, buffer=StepBuffer(), meta_skill="", config=config,
            step=1, seed=3)
    failures = next(u for u in _SEEN if "expecting \"freight\"" in u)
    successes = next(u for u in _SEEN if "got these right" in u)
    assert "answer freight." in failures  # the real failure group keeps its draft rule
    assert "expecting \"air\" (the assistant said \"Air.\" x3)" in failures
    assert "Draft rule" not in successes and "Words these" not in successes
    assert "answer air." not in failures and failures.count("Draft rule") == 1

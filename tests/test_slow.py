"""Slow update and meta skill: the comparison table, guidance in the protected block, failures."""
from __future__ import annotations

import json

import pytest

from skillopt.models import llm
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.patch import Edit, apply_edits
from skillopt.state import RejectedEdit
from skillopt.skill import SLOW_END, SLOW_START, guidance, protected_spans, validate, with_guidance
from skillopt.slow import Comparison, compare, meta_update, slow_update
from skillopt.tasks.task import Evaluation, Trajectory

from tests.models.fakes import MemorySink

SKILL = "# Routing\n\n## House rules\n\n- Z codes: freight.\n"
PREVIOUS = "# Routing\n\n## House rules\n\n- Nothing special.\n"

_SCRIPTS: dict[str, object] = {}


def _handler(name, messages, settings, response_format):
    return HandlerResult(_SCRIPTS[name](messages), 10, 5)


register_provider("h4slow", _handler)


def scripted(fn, name: str) -> LLM:
    _SCRIPTS[name] = fn
    return LLM(f"h4slow/{name}", "optimizer", GenSettings(max_retries=0))


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)


def traj(item_id: str, hard: float, expected: str = "air", prompt: str = "") -> Trajectory:
    return Trajectory(item_id, prompt or f"Order {item_id}", "standard" if hard < 1 else expected, expected,
                      Evaluation(hard, hard, "" if hard else f"expected {expected!r}"))


@pytest.mark.parametrize("before, after, bucket", [
    (0.0, 1.0, "improved"), (1.0, 0.0, "regressed"), (0.0, 0.0, "persistent_failure"), (1.0, 1.0, "stable_success"),
])
def test_compare_classifies_each_item_by_hard_score(before, after, bucket):
    result = compare([traj("a", before)], [traj("a", after)])
    assert getattr(result, bucket) == ("a",)
    assert result.n == 1


def test_compare_matches_items_by_id_keeps_current_order_and_skips_unshared_items():
    prev = [traj("b", 1.0), traj("a", 0.0), traj("c", 0.0), traj("only-prev", 1.0)]
    cur = [traj("c", 1.0), traj("a", 1.0), traj("b", 0.0), traj("only-cur", 1.0)]
    assert compare(prev, cur) == Comparison(improved=("c", "a"), regressed=("b",), persistent_failure=(),
                                            stable_success=())


COMPARISON = Comparison(improved=("a",), regressed=("b",), persistent_failure=("c", "d"), stable_success=("e",))
CUR = [traj("a", 1.0), traj("b", 0.0, prompt="Order B to Anchorage, AK"), traj("c", 0.0, prompt="Order C, PO Box 7"),
       traj("d", 0.0), traj("e", 1.0)]


def test_guidance_lands_inside_the_protected_block():
    seen = []

    def reply(messages):
        seen.append(messages[1]["content"])
        system.append(messages[0]["content"])
        return json.dumps({"guidance": ["PO boxes always go postal.", "- Keep the Z-code rule."]})

    system: list[str] = []
    result = slow_update(scripted(reply, "slow"), skill=SKILL, previous_skill=PREVIOUS, comparison=COMPARISON,
                         prev=[], cur=CUR, step=6, epoch=2)
    assert result.ok and result.guidance == "- PO boxes always go postal.\n- Keep the Z-code rule."
    start, end = protected_spans(result.skill)[0]
    block = result.skill[start:end]
    assert block.startswith(SLOW_START) and block.endswith(SLOW_END) and "PO boxes always go postal." in block
    assert guidance(result.skill) == result.guidance
    assert result.skill.startswith(SKILL.rstrip())
    validate(result.skill)
    user = seen[0]
    for part in ("improved 1, regressed 1, still failing 2, still right 1", "-- Nothing special.",
                 "+- Z codes: freight.", "Anchorage, AK", "PO Box 7", "CURRENT GUIDANCE:\n(none yet)"):
        assert part in user, part
    # Guidance grounded in the cases that stayed wrong (with their right answers), not a
    # restatement of the skill's rules.
    assert "worked examples" in system[0] and "the answer is <the expected answer>" in system[0]
    assert "STILL FAILING CASES:" in user and "Expected:" in user.split("STILL FAILING CASES:")[1]


def test_a_second_slow_update_replaces_the_guidance_and_no_edit_can_touch_it():
    first = with_guidance(SKILL, "- old lesson")
    result = slow_update(scripted(lambda m: json.dumps({"guidance": ["new lesson"]}), "slow2"), skill=first,
                         previous_skill=SKILL, comparison=COMPARISON, prev=[], cur=CUR, step=9, epoch=3)
    assert result.skill.count(SLOW_START) == 1 and "old lesson" not in result.skill
    assert guidance(result.skill) == "- new lesson"
    report = apply_edits(result.skill, [Edit("replace", target="- new lesson", content="- hacked")]).reports[0]
    assert report.status == "protected"


@pytest.mark.parametrize("text", [
    "not json at all",
    json.dumps({"guidance": []}),
    json.dumps({"guidance": [f"sneak {SLOW_END} out"]}),
    json.dumps({"lessons": ["x"]}),
])
def test_failed_slow_update_keeps_the_skill_and_its_guidance(text):
    skill = with_guidance(SKILL, "- old lesson")
    calls = []

    def reply(messages):
        calls.append(messages)
        return text

    result = slow_update(scripted(reply, f"bad{len(text)}"), skill=skill, previous_skill=SKILL,
                         comparison=COMPARISON, prev=[], cur=CUR, step=6, epoch=2)
    assert not result.ok and result.skill == skill and result.guidance == "- old lesson"
    assert result.error and len(calls) == 2  # one repair re-ask, then give up


def test_meta_update_rewrites_notes_from_accepted_and_rejected_edits():
    seen = []

    def reply(messages):
        seen.append(messages[1]["content"])
        return json.dumps({"notes": ["General rules per failure group work.", "Avoid one-order rules."]})

    rejected = [RejectedEdit(4, Edit("add", content="- Order Z-1 goes freight."), 0.6, 0.55, "gate")]
    result = meta_update(scripted(reply, "meta"), meta_skill="- old note", comparison=COMPARISON,
                         accepted_edits=[Edit("add", content="- PO boxes: postal.", section="House rules")],
                         rejected_edits=rejected, step=6, epoch=2)
    assert result.ok and result.content == "- General rules per failure group work.\n- Avoid one-order rules."
    for part in ("- old note", "PO boxes: postal.", "Order Z-1 goes freight.", "gate 0.600 -> 0.550",
                 "improved 1, regressed 1"):
        assert part in seen[0], part


def test_failed_meta_update_keeps_the_old_notes():
    result = meta_update(scripted(lambda m: "{}", "meta-bad"), meta_skill="- keep me", comparison=COMPARISON,
                         accepted_edits=[], rejected_edits=[], step=6, epoch=2)
    assert not result.ok and result.content == "- keep me" and result.error


# --- the prompts fitted to a model's context window ----------------------------------------------

_SIZES: list[tuple[int, str]] = []


def _tokens(name: str, text: str) -> int:
    return -(-len(text) // 4)


def _windowed(name, messages, settings, response_format):
    size = sum(_tokens(name, m["content"]) + 8 for m in messages) + 8
    limit = int(name.split("-")[1])  # "w-N": refuses any prompt over N tokens
    _SIZES.append((size, messages[1]["content"]))
    if size > limit:
        raise ProviderError("context", f"Requested tokens ({size}) exceed context window of {limit}")
    key = "notes" if "STRATEGY NOTES" in messages[0]["content"] else "guidance"
    return HandlerResult(json.dumps({key: ["When a request names a PO box, the answer is postal."]}), size, 20)


register_provider("h4slowwin", _windowed, window=lambda name: 1500, tokens=_tokens)

LONG = [traj(i, 0.0, prompt=f"Order {i}: " + "a long delivery note about the parcel and its route " * 20)
        for i in "bcdefgh"]
LONG_SKILL = "# Routing\n\n## House rules\n\n" + "".join(f"- Rule {i}: {'a wordy house rule ' * 15}\n" for i in range(12))


def _slow_model(limit: int, sink=None) -> LLM:
    return LLM(f"h4slowwin/w-{limit}", "optimizer", GenSettings(max_retries=0, max_tokens=200), sink=sink)


def test_a_slow_update_too_long_for_the_window_is_sent_in_a_shape_that_fits():
    _SIZES.clear()
    rows = MemorySink()
    comparison = Comparison(improved=(), regressed=("b", "c", "d"), persistent_failure=("e", "f", "g", "h"),
                            stable_success=())
    result = slow_update(_slow_model(1500, rows), skill=LONG_SKILL, previous_skill=PREVIOUS, comparison=comparison,
                         prev=[], cur=LONG, step=6, epoch=2)
    assert result.ok and "PO box" in result.guidance  # the update was made, not lost to the window
    assert len(_SIZES) == 1 and _SIZES[0][0] <= 1500 - 200  # one call, and the reply kept its tokens
    assert rows.records[0].note.startswith("prompt fitted to the context window:")
    assert "STILL FAILING CASES:" in _SIZES[0][1] and "REGRESSED CASES" in _SIZES[0][1]  # every part still there


def test_a_slow_update_that_fits_is_sent_whole_with_no_note():
    _SIZES.clear()
    rows = MemorySink()
    result = slow_update(_slow_model(1500, rows), skill=SKILL, previous_skill=PREVIOUS, comparison=COMPARISON,
                         prev=[], cur=CUR, step=6, epoch=2)
    assert result.ok and len(_SIZES) == 1 and rows.records[0].note == ""
    seen = []
    slow_update(scripted(lambda m: seen.append(m[1]["content"]) or json.dumps({"guidance": ["x"]}), "nowin"),
                skill=SKILL, previous_skill=PREVIOUS, comparison=COMPARISON, prev=[], cur=CUR, step=6, epoch=2)
    assert seen == [_SIZES[0][1]]  # the same bytes as a model with no window: cache keys unchanged


def test_a_meta_update_with_many_long_edits_shows_the_latest_that_fit():
    _SIZES.clear()
    rows = MemorySink()
    accepted = [Edit("add", content=f"- Accepted rule {i}: " + "some long wording " * 12) for i in range(12)]
    rejected = [RejectedEdit(i, Edit("add", content=f"- Rejected rule {i}: " + "more long wording " * 12),
                             0.5, 0.4, "gate") for i in range(12)]
    result = meta_update(_slow_model(900, rows), meta_skill="- old note", comparison=COMPARISON,
                         accepted_edits=accepted, rejected_edits=rejected, step=6, epoch=2)
    assert result.ok and "PO box" in result.content
    sent = _SIZES[-1][1]
    assert "Accepted rule 11" in sent and "Rejected rule 11" in sent and "Accepted rule 0:" not in sent
    assert rows.records[-1].note.startswith("prompt fitted to the context window: the last")
    assert [r.error.split(":")[0] for r in rows.records][:-1] == ["context"] * (len(rows.records) - 1)


def test_guidance_that_copies_the_prompt_back_goes_to_the_gate_as_written():
    # the gate is the slow update's judge: such a block was kept 6-1 on selection in a real run
    echo = ("When a task has the telling detail these cases share, the answer is the expected answer, "
            "because what in the task decides it.")
    result = slow_update(scripted(lambda m: json.dumps({"guidance": [echo]}), "slow-echo"), skill=SKILL,
                         previous_skill=PREVIOUS, comparison=COMPARISON, prev=[], cur=CUR, step=6, epoch=2)
    assert result.ok and result.guidance == f"- {echo}"


def test_meta_notes_that_copy_the_prompt_back_are_left_out_and_a_reply_of_echoes_is_asked_again():
    lesson = "Rules naming words the failing tasks share were kept; rules copied from one case were rejected."
    echo = "Each a general lesson about proposing edits, kinds of rules, wording, scope, what to avoid."
    result = meta_update(scripted(lambda m: json.dumps({"notes": [echo, lesson]}), "meta-echo"), meta_skill="",
                         comparison=COMPARISON, accepted_edits=[], rejected_edits=[], step=6, epoch=2)
    assert result.ok and result.content == f"- {lesson}"
    calls = []

    def reply(messages):
        calls.append(messages)
        return json.dumps({"notes": [echo]})

    result = meta_update(scripted(reply, "meta-echo-only"), meta_skill="- old note", comparison=COMPARISON,
                         accepted_edits=[], rejected_edits=[], step=6, epoch=2)
    assert not result.ok and result.content == "- old note"
    assert len(calls) == 2 and "repeats this prompt's instructions" in calls[1][-1]["content"]

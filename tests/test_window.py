"""Fitting the reflection prompt into the optimizer's context window (window.py, reflect.py)."""
from __future__ import annotations

import json

import pytest

from skillopt import window
from skillopt.config import RunConfig
from skillopt.models import llm, tokens
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.reflect import StepBuffer, numbered, reflect
from skillopt.tasks.task import Evaluation, Trajectory

from tests.models.fakes import MemorySink

# --- the shapes (pure) -------------------------------------------------------------------------


def test_the_ladder_starts_with_the_whole_prompt_and_only_shrinks():
    shapes = window.ladder(600, 8)
    assert shapes[0] == window.Shape(600, 8)
    assert [s.case_chars for s in shapes] == [600, 300, 300, 300, 150]
    assert [s.cases for s in shapes] == [8, 8, 8, 4, 4]
    assert [s.line_chars for s in shapes] == [0, 0, window.LINE_CHARS, window.LINE_CHARS, window.LINE_CHARS]


def test_the_ladder_leaves_out_steps_that_would_not_shrink_anything():
    # short cases and two cases only: halving or dropping cases changes nothing
    assert window.ladder(150, 2) == (window.Shape(150, 2), window.Shape(150, 2, window.LINE_CHARS))
    assert all(s.case_chars <= 100 for s in window.ladder(100, 1))  # never longer than asked for


def test_keep_shows_one_case_of_each_answer_first_and_keeps_their_order():
    answers = ["billing", "billing", "billing", "legal", "legal", "shipping"]
    assert window.keep(answers, 3) == (0, 3, 5)
    assert window.keep(answers, 4) == (0, 1, 3, 5)
    assert window.keep(answers, 9) == tuple(range(6))
    assert window.keep(["a", "a", "a"], 2) == (0, 1)


def test_drafts_send_the_first_shape_that_fits_then_the_smaller_ones():
    shapes = window.ladder(600, 8)
    built: list[window.Shape] = []

    def build(shape):
        built.append(shape)
        return shape.case_chars * shape.cases  # a draft's "size" is what it holds

    order = list(window.drafts(shapes, build, lambda d: d, room=2400))
    assert [s for s, _ in order] == list(shapes[1:])  # 4800 does not fit, 2400 does
    assert built == list(shapes)  # each built once, the whole one only to be measured
    assert [s for s, _ in window.drafts(shapes, build, lambda d: d, room=None)] == list(shapes)
    assert [s for s, _ in window.drafts(shapes, build, lambda d: d, room=10)] == [shapes[-1]]  # none fits: the last


def test_a_shape_describes_what_it_left_out():
    assert window.Shape(600, 8).describe(8, 600) == ""
    text = window.Shape(300, 4, 160).describe(8, 600)
    assert text == ("prompt fitted to the context window: 4 of 8 cases, cases clipped to 300 chars, "
                    "skill lines clipped to 160 chars")


def test_a_clipped_skill_view_keeps_every_line_number():
    skill = "# S\n\n- " + "x" * 400 + "\n- short\n"
    view = numbered(skill, 160)
    assert [row.split("|")[0].strip() for row in view.splitlines()] == ["1", "2", "3", "4"]
    assert len(view.splitlines()[2]) < 200 and "chars clipped" in view.splitlines()[2]
    assert numbered(skill) == numbered(skill, 0)  # 0: whole lines


# --- reflection with a model that has a window --------------------------------------------------

WINDOW = 1400  # tokens; the handler below counts 4 chars per token
_SEEN: list[tuple[int, str]] = []


def _tokens(name: str, text: str) -> int:
    return -(-len(text) // 4)


def _handler(name, messages, settings, response_format):
    size = sum(_tokens(name, m["content"]) + tokens.MESSAGE_TOKENS for m in messages) + tokens.MESSAGE_TOKENS
    limit = int(name.split("-")[1])  # "window-N": refuses prompts over N tokens, whatever it claims
    _SEEN.append((size, messages[1]["content"]))
    if size > limit:
        raise ProviderError("context", f"Requested tokens ({size}) exceed context window of {limit}")
    return HandlerResult(json.dumps({"summary": "legal requests go to legal", "edits": [
        {"op": "add", "section": "House rules", "content": "- A request about a contract goes to legal."}]}),
        size, 20)


register_provider("windowed", _handler, window=lambda name: WINDOW, tokens=_tokens)

SKILL = "# Routing\n\nRoute each request.\n\n## House rules\n\n" + "".join(
    f"- Task: {'a long worked example of a request ' * 10}{i} -> Answer: billing\n" for i in range(6))
CONFIG = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", minibatch_size=8,
                   analyst_workers=1, failure_only=True)


def _batch() -> list[Trajectory]:
    return [Trajectory(item_id=f"t{i}", prompt=f"Request {i}: {'please review the attached contract terms ' * 12}",
                       output="billing", expected="legal" if i % 2 else "account",
                       evaluation=Evaluation(0.0, 0.0, "chose 'billing', expected another queue"))
            for i in range(8)]


def _optimizer(limit: int, sink=None) -> LLM:
    return LLM(f"windowed/window-{limit}", "optimizer", GenSettings(max_retries=0, max_tokens=200), sink=sink)


def _reflect(optimizer):
    return reflect(optimizer, SKILL, _batch(), budget=2, buffer=StepBuffer(), meta_skill="", config=CONFIG,
                   step=1, seed=0)


def test_a_prompt_too_long_for_the_window_is_sent_in_a_shape_that_fits():
    _SEEN.clear()
    rows = MemorySink()
    optimizer = _optimizer(WINDOW, rows)
    assert optimizer.prompt_room() == WINDOW - 200
    [result] = _reflect(optimizer)
    assert result.ok and [e.content for e in result.edits] == ["- A request about a contract goes to legal."]
    assert len(_SEEN) == 1 and _SEEN[0][0] <= WINDOW - 200  # one call, and it left the reply its tokens
    assert set(result.item_ids) <= {t.item_id for t in _batch()}
    assert {t.expected for t in _batch() if t.item_id in result.item_ids} == {"legal", "account"}
    assert rows.records[0].note.startswith("prompt fitted to the context window:")
    assert "chars clipped" in _SEEN[0][1]  # the cases (and maybe skill lines) were cut, and say so


def test_a_prompt_that_fits_is_sent_whole_and_unchanged():
    _SEEN.clear()
    wide = LLM("windowed/window-100000", "optimizer", GenSettings(max_retries=0, max_tokens=200))
    wide.__dict__["_window"] = 100000  # a window wide enough for the whole prompt
    [result] = _reflect(wide)
    assert result.ok and len(result.item_ids) == 8
    whole = _SEEN[-1][1]
    _SEEN.clear()
    blind = LLM("windowed/window-100000", "optimizer", GenSettings(max_retries=0, max_tokens=200))
    blind.__dict__["_window"] = None  # no window known: the prompt is sent as it is
    _reflect(blind)
    assert _SEEN[-1][1] == whole and "prompt fitted" not in whole


def test_a_model_that_refuses_a_prompt_it_was_estimated_to_take_gets_the_next_shape():
    _SEEN.clear()
    rows = MemorySink()
    optimizer = _optimizer(1050, rows)  # claims 1400 tokens, refuses anything over 1050
    [result] = _reflect(optimizer)
    assert result.ok, result.error
    sizes = [size for size, _ in _SEEN]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= 1050 < sizes[0]
    errors = [r.error.split(":")[0] for r in rows.records]
    assert len(errors) >= 2 and errors == ["context"] * (len(errors) - 1) + [""]  # each refusal is on record


def test_when_no_shape_fits_the_step_is_skipped_not_the_run():
    _SEEN.clear()
    optimizer = _optimizer(50)
    optimizer.__dict__["_window"] = 300  # a window too small for any shape
    [result] = _reflect(optimizer)
    assert not result.ok and result.error.startswith("context:")
    assert len(_SEEN) == 1  # only the smallest shape was tried: every larger one was estimated not to fit


def test_prompt_room_is_unknown_for_the_simulated_models_and_read_from_litellm_for_remote_ones():
    assert LLM("sim/optimizer", "optimizer", GenSettings()).prompt_room() is None
    remote = LLM("openai/gpt-4o-mini", "optimizer", GenSettings(max_tokens=512))
    assert remote.prompt_room() is not None and remote.prompt_room() > 100000 - 512
    assert LLM("openai/no-such-model-xyz", "optimizer", GenSettings()).prompt_room() is None


def test_prompt_tokens_errs_long_without_a_tokenizer():
    model = LLM("sim/optimizer", "optimizer", GenSettings())
    messages = [{"role": "system", "content": "x" * 300}, {"role": "user", "content": "y" * 30}]
    assert model.prompt_tokens(messages) == 150 + 15 + 3 * tokens.MESSAGE_TOKENS


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)

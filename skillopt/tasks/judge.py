"""Judge: the llm_judge evaluator, which asks a model to grade an answer by a rubric.

Open-ended tasks have no single right string, so a judge model scores the reply from
0 to 1 against the task's rubric (and the reference answer when the item has one).
It is the only evaluator that calls a model, and its prompt and reply parsing are a
contract of their own (JSON with "score" and "feedback"), so it lives apart from the
string and number comparisons in evaluators.py. The caller passes the judge as a
function (messages -> Reply); this module never imports litellm.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from .answers import clip, show
from ..errors import ScoringError, TaskError
from ..models.jsonreply import first_json_object
from .task import Evaluation, Item

JUDGE_SYSTEM = ("You grade one answer against a rubric. Reply with only a JSON object: "
                '{"score": <number from 0 to 1>, "feedback": "<one or two sentences: what is wrong '
                'and what a correct answer needs>"}')


@dataclass(frozen=True)
class LlmJudge:
    version: str
    rubric: str
    threshold: float
    needs_expected = False  # a reference answer is shown to the judge when the item has one
    uses_judge = True  # its grades depend on the judge model: part of the evaluation-cache key
    answer_kind = "text"
    partial_credit = True  # the judge's grade

    def describe(self) -> str:
        return f"a judge model grades the reply from 0 to 1 against this rubric: {clip(self.rubric, 300)}"

    def check(self, expected: Any) -> str:
        return ""

    def messages(self, item: Item, output: str) -> list[dict]:
        inputs = "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                           for k, v in item.input.items())
        parts = [f"Rubric:\n{self.rubric}", f"Task input:\n{inputs}"]
        if item.expected not in (None, ""):
            reference = item.expected if isinstance(item.expected, str) else json.dumps(item.expected)
            parts.append(f"Reference answer:\n{reference}")
        parts.append(f"Answer to grade:\n{output}")
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        if judge is None:
            raise TaskError("the llm_judge evaluator needs a judge model (set judge_model or optimizer_model)")
        reply = judge(self.messages(item, output))
        # A judge that failed or replied unusably has not graded the answer: the item is
        # errored (left out of the score and never cached), not scored 0.
        if getattr(reply, "error", ""):
            raise ScoringError(f"judge call failed: {clip(reply.error, 120)}")
        parsed = first_json_object(getattr(reply, "text", reply) or "")
        score = parsed.get("score") if parsed else None
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise ScoringError("judge reply unusable: expected JSON with a score from 0 to 1, "
                               f"got {show(getattr(reply, 'text', reply))}")
        feedback = parsed.get("feedback")
        feedback = clip(feedback, 400) if isinstance(feedback, str) and feedback.strip() else "no feedback given"
        return Evaluation(1.0 if score >= self.threshold else 0.0, float(score), f"judge score {score:g}: {feedback}")

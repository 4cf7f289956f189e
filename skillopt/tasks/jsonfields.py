"""JSON fields: the json_fields evaluator, which grades an extraction field by field.

Extraction tasks ask for a JSON object; a reply with most fields right is closer than
one with none, and the optimizer needs to know WHICH field is wrong and whether the
value or only its JSON type differs. That per-field scoring (soft = fraction right,
hard = all right) and its feedback are a concept of their own, so they live here
rather than among the plain string comparisons in evaluators.py, which registers it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .answers import json_type, show
from ..models.jsonreply import first_json_object
from .task import Evaluation, Item


@dataclass(frozen=True)
class JsonFields:
    version: str
    fields: tuple[str, ...]
    ignore_case: bool
    needs_expected = True
    answer_kind = "fields"
    partial_credit = True  # the share of fields right

    def describe(self) -> str:
        named = f" with the fields {', '.join(self.fields)}" if self.fields else " with the expected fields"
        return (f"the reply must contain one JSON object{named}; each field is compared with the expected "
                f"value ({'case ignored' if self.ignore_case else 'exactly'}; numbers as numbers)")

    def check(self, expected: Any) -> str:
        if not isinstance(expected, dict):
            return f"expected answer must be a JSON object, got {show(expected)}"
        missing = [f for f in self.fields if f not in expected]
        return f"expected answer lacks field(s) {', '.join(missing)}" if missing else ""

    def _same(self, want: Any, got: Any) -> bool:
        if isinstance(want, str) and isinstance(got, str):
            a, b = want.strip(), got.strip()
            return a.casefold() == b.casefold() if self.ignore_case else a == b
        if isinstance(want, bool) or isinstance(got, bool):
            return want is got
        if isinstance(want, (int, float)) and isinstance(got, (int, float)):
            return math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-9)
        return want == got

    def field_scores(self, item: Item, output: str) -> dict[str, float]:
        """Each field's score in `output`, 1.0 right and 0.0 wrong or missing (no JSON object: all
        0.0); the lift's breakdown by field reads which fields a skill gets right."""
        fields = self.fields or tuple(item.expected)
        got = first_json_object(output) or {}
        return {name: float(name in got and self._same(item.expected[name], got[name])) for name in fields}

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        fields = self.fields or tuple(item.expected)
        got = first_json_object(output)
        if got is None:
            return Evaluation(0.0, 0.0, f"no JSON object in the reply; expected {show(item.expected)}, "
                                        f"got {show(output)}")
        wrong, missing = [], []
        for name in fields:
            want = item.expected[name]
            if name not in got:
                missing.append(f"{name} (expected {show(want)})")
            elif not self._same(want, got[name]):
                kind = ""
                if json_type(want) != json_type(got[name]):
                    kind = f" (a {json_type(got[name])}, expected a {json_type(want)})"
                wrong.append(f"{name} expected {show(want)} got {show(got[name])}{kind}")
        right = len(fields) - len(wrong) - len(missing)
        soft = right / len(fields) if fields else 1.0
        if not wrong and not missing:
            return Evaluation(1.0, 1.0, f"correct: all {len(fields)} fields right")
        parts = [f"{right}/{len(fields)} fields right"]
        if wrong:
            parts.append("wrong: " + "; ".join(wrong))
        if missing:
            parts.append("missing: " + "; ".join(missing))
        return Evaluation(0.0, soft, ". ".join(parts))

"""Choice: the reply must be one label of a fixed set (a classification task's scorer).

Lenient (the default) also accepts a longer reply that names exactly one label, since small
models wrap their answer in a sentence; a reply naming several labels is never a choice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .answers import normalize_text, show
from .task import Evaluation, Item


@dataclass(frozen=True)
class Choice:
    version: str
    labels: tuple[str, ...]
    lenient: bool
    needs_expected = True
    answer_kind = "label"
    partial_credit = False  # all or nothing

    def describe(self) -> str:
        return f"the reply must be exactly one of: {', '.join(self.labels)}"

    def check(self, expected: Any) -> str:
        if not isinstance(expected, str) or normalize_text(expected) not in map(normalize_text, self.labels):
            return f"expected answer {show(expected)} is not one of the labels: {', '.join(self.labels)}"
        return ""

    def match(self, output: str) -> tuple[str | None, list[str]]:
        """(the label chosen or None, labels named) for one output."""
        said = normalize_text(output)
        for label in self.labels:
            if said == normalize_text(label):
                return label, [label]
        named = [label for label in self.labels
                 if re.search(rf"(?<!\w){re.escape(normalize_text(label))}(?!\w)", said)]
        if self.lenient and len(named) == 1:
            return named[0], named
        return None, named

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        expected = next((l for l in self.labels if normalize_text(l) == normalize_text(item.expected)),
                        str(item.expected))
        chosen, named = self.match(output)
        if chosen == expected:
            return Evaluation(1.0, 1.0, f"correct: {expected}")
        if chosen is not None:
            return Evaluation(0.0, 0.0, f"chose '{chosen}' but expected '{expected}'")
        if len(named) > 1:
            return Evaluation(0.0, 0.0, f"the reply names several labels ({', '.join(named)}); answer with exactly "
                                        f"one; expected '{expected}', got {show(output)}")
        return Evaluation(0.0, 0.0, f"the reply {show(output)} is not a label; answer with exactly one of: "
                                    f"{', '.join(self.labels)}; expected '{expected}'")

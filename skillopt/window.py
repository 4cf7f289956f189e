"""The shapes an optimizer prompt comes in, to fit the model's context window.  (pure: no I/O)

The reflection prompt is the one that grows with the skill; the epoch-end prompts (slow.py)
use the same shapes. fitting.py sends them.

A skill grows as a run learns (a worked example is a whole task text), while the optimizer's
context window stays what it is: 4096 tokens for the embedded model, of which the reply
needs its max_tokens. A prompt longer than the room left either fails outright or leaves the
reply too few tokens for a whole JSON object, and the step learns nothing. So a reflection
prompt comes in shapes, from the whole one down to a small one, and the first one that fits
is sent:

1. shorter cases (the skill is what the optimizer edits; part of a case still shows it);
2. the skill's long lines clipped in the view (edits name lines by number, so an edit on a
   clipped line still lands on the whole line);
3. fewer cases, one of each expected answer first, so every group keeps a case;
4. shorter cases again.

A shape whose size was estimated wrong is caught by the model's own refusal (a prompt fault):
fitting.complete_fitted then sends the next shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")

MIN_CASE_CHARS = 150  # below this a case no longer shows its task, its reply and its feedback
LINE_CHARS = 160  # a clipped skill line keeps its start: enough to see what the line is about
MIN_CASES = 2  # one case is an anecdote; a pattern needs at least two
FITTED = "prompt fitted to the context window"  # how a fitted call's record starts its note


@dataclass(frozen=True)
class Shape:
    case_chars: int  # each case's budget (reflect.format_case)
    cases: int  # how many of the minibatch's cases are shown
    line_chars: int = 0  # 0: the skill's lines shown whole; otherwise each clipped to this

    def describe(self, total: int, case_chars: int) -> str:
        """What this shape left out, for the call's record ("" for the whole prompt)."""
        parts = []
        if self.cases < total:
            parts.append(f"{self.cases} of {total} cases")
        if self.case_chars < case_chars:
            parts.append(f"cases clipped to {self.case_chars} chars")
        if self.line_chars:
            parts.append(f"skill lines clipped to {self.line_chars} chars")
        return f"{FITTED}: " + ", ".join(parts) if parts else ""


def ladder(case_chars: int, cases: int) -> tuple[Shape, ...]:
    """The shapes to try, largest first; the first is the whole prompt. Steps that would not
    make the prompt smaller (cases already short, already few) are left out."""
    half, quarter = max(MIN_CASE_CHARS, case_chars // 2), max(MIN_CASE_CHARS, case_chars // 4)
    few = max(min(cases, MIN_CASES), cases // 2)
    shapes = (Shape(case_chars, cases), Shape(min(half, case_chars), cases),
              Shape(min(half, case_chars), cases, LINE_CHARS), Shape(min(half, case_chars), few, LINE_CHARS),
              Shape(min(quarter, case_chars), few, LINE_CHARS))
    return tuple(dict.fromkeys(shapes))


def drafts(shapes: Sequence[Shape], build: Callable[[Shape], T], size: Callable[[T], int],
           room: int | None) -> Iterator[tuple[Shape, T]]:
    """(shape, draft) of each shape that may be sent, in the order to try them: first the
    first draft whose size is within `room` (the last when none is: the estimate may be wrong,
    and the model's refusal is recorded like any failed call), then the smaller ones after it,
    for when the model refuses. Drafts are built one at a time, as they are needed; with no
    room known the whole prompt comes first."""
    built = [(shapes[0], build(shapes[0]))]
    while room is not None and len(built) < len(shapes) and size(built[-1][1]) > room:
        shape = shapes[len(built)]
        built.append((shape, build(shape)))
    yield built[-1]
    yield from ((shape, build(shape)) for shape in shapes[len(built):])


def keep(answers: Sequence[str], n: int) -> tuple[int, ...]:
    """Indexes of `n` of the cases whose expected answers are `answers`, in their order: the
    first case of each answer first, so a smaller prompt still shows every group it can."""
    if n >= len(answers):
        return tuple(range(len(answers)))
    first: dict[str, int] = {}
    for i, answer in enumerate(answers):
        first.setdefault(answer.strip(), i)
    chosen = list(first.values())[:n]
    rest = [i for i in range(len(answers)) if i not in chosen]
    return tuple(sorted(chosen + rest[:n - len(chosen)]))

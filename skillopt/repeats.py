"""Candidates the gate already rejected are not gated again against the same incumbent.  (pure: no I/O)

Gating a candidate skill a second time against the incumbent that beat it teaches nothing: at
temperature 0 the cached rollouts give the same decision again. A small optimizer does propose
the same edits step after step (the edits of a rejected multi-edit candidate are not blocked one
by one, since any one of them may be fine alone), so the same candidate comes back. A step
whose selected edits would rebuild a rejected candidate gives their place in the budget to the
pool's next edits, until they make a candidate not tried yet (or none is left, and the step
skips).
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Sequence

from .patch import Edit, apply_edits
from .transforms import Candidate, Selection, finish

Tried = tuple[tuple[str, int], ...]  # (pair key, step that rejected it), checkpointed in the State


def pair(incumbent: str, candidate: str) -> str:
    """The key of one gate comparison: the same candidate against another incumbent is new."""
    return hashlib.sha256(f"{incumbent}\x00{candidate}".encode()).hexdigest()[:24]


def rejected_at(tried: Tried, incumbent: str, selected: Sequence[Edit], fuzzy_threshold: float) -> int | None:
    """The step whose gate rejected the candidate `selected` makes from `incumbent`, or None."""
    if not tried or not selected:
        return None
    patch = apply_edits(incumbent, selected, fuzzy_threshold=fuzzy_threshold)
    if not patch.applied or patch.text == incumbent:
        return None  # no candidate: nothing would be gated
    key = pair(incumbent, patch.text)
    return next((step for k, step in tried if k == key), None)


def without(pool: Sequence[Candidate], selected: Sequence[Edit], step: int) -> list[Candidate]:
    """The pool with the selected edits out of the running (fate clipped, noted why), so the
    budget goes to the next live edits."""
    out = set(selected)
    note = f"its edits made the candidate the gate rejected at step {step}: the next edits were tried"
    return [dataclasses.replace(c, fate="clipped", note=note) if c.live and c.edit in out else c for c in pool]


def choose(tried: Tried, incumbent: str, pool: list[Candidate], budget: int, fuzzy_threshold: float, *,
           person: bool = False) -> Selection:
    """The budget's edits of the ranked pool; the next ones when those would rebuild a candidate
    the gate already rejected against `incumbent`. In approval mode (`person`) a person decides."""
    selection = finish(pool, budget)
    if person:
        return selection
    # Each round takes at least one live edit out of the pool, so this ends: at the latest with
    # no edit selected, and the step has no candidate to gate.
    while (seen := rejected_at(tried, incumbent, selection.selected, fuzzy_threshold)) is not None:
        pool = without(pool, selection.selected, seen)
        selection = finish(pool, budget)
    return selection

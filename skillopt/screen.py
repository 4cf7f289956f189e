"""The minibatch check: a candidate must help on the train items of its own step before the
gate pays for it (`minibatch_check`).

The reflection proposed the step's edits from the train batch's trajectories, so that batch
is evidence the engine already holds: the incumbent's scores on it are known, and scoring the
candidate there costs one target call per item (cached like every rollout). For any task
type, an edit is `contradicted` when this evidence says it hurts: with it, the failures that
motivated it still fail, or items that passed now fail as often as failures are fixed (no net
gain). A batch with no failure holds no such evidence, and its candidate goes to the gate
unchecked; so does one whose check lost too many items to model errors (a failure is never
evidence).

A candidate of several edits is judged as one, so a harmful edit can ride on a good one. When
the candidate broke an item, each of its edits is also tried left out, on the items the
candidate changed (the unchanged ones say nothing about which edit did what): an edit whose
removal scores better there is dropped, and the rest are checked again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .patch import Edit, PatchResult, apply_edits
from .rollout import Batch

EPS = 1e-9  # per-item values are means of 0..1 scores: compare without floating-point noise


@dataclass(frozen=True)
class Verdict:
    """The candidate against the incumbent on the step's train items both were scored on."""
    n_items: int
    fixed: tuple[str, ...]  # items the incumbent failed that now score higher
    broken: tuple[str, ...]  # items that now score lower
    gain: float  # sum of the per-item changes, in items
    before: float  # mean of the incumbent on these items
    after: float  # mean of the candidate on these items

    @property
    def helps(self) -> bool:
        return self.gain > EPS

    def note(self) -> str:
        return (f"contradicted: on {self.n_items} train items of its step the candidate fixed {len(self.fixed)} "
                f"and broke {len(self.broken)} (net {self.gain:+.2f} items, {self.before:.3f} -> {self.after:.3f})")


@dataclass(frozen=True)
class Dropped:
    """An applied edit the check took out of the candidate, with its evidence."""
    edit: Edit  # as applied (a person's version in approval mode)
    note: str
    score_before: float  # the check items' mean under the incumbent
    score_after: float  # ... under the candidate that held the edit
    companions: tuple[Edit, ...] = ()  # the edits judged with it (none: it was judged alone)


def verdict(before: Mapping[str, float], after: Mapping[str, float]) -> Verdict:
    common = [i for i in before if i in after]
    fixed = tuple(i for i in common if before[i] < 1.0 - EPS and after[i] > before[i] + EPS)
    broken = tuple(i for i in common if after[i] < before[i] - EPS)
    n = len(common)
    b = math.fsum(before[i] for i in common)
    a = math.fsum(after[i] for i in common)
    return Verdict(n_items=n, fixed=fixed, broken=broken, gain=a - b, before=b / n if n else 0.0,
                   after=a / n if n else 0.0)


def contribution(full: Mapping[str, float], without: Mapping[str, float]) -> float:
    """What an edit adds on the items scored both with the whole candidate and without it."""
    return math.fsum(full[i] - without[i] for i in full if i in without)


class Screen:
    """Runs the check of one run through the trainer's evaluation (cached, recorded)."""

    def __init__(self, evaluate: Callable[..., Batch], values: Callable[[Batch], dict[str, float]],
                 fuzzy_threshold: float, max_error_rate: float):
        self.evaluate, self.values = evaluate, values
        self.fuzzy, self.max_error_rate = fuzzy_threshold, max_error_rate

    def score(self, skill: str, items, step: int, purpose: str) -> dict[str, float]:
        return self.values(self.evaluate(skill, items, step=step, split="train", purpose=purpose, stage="gate"))

    def check(self, step: int, skill: str, applied: Sequence[Edit], items, before: Mapping[str, float]
              ) -> tuple[PatchResult | None, tuple[Dropped, ...]]:
        """(the patch of the edits that survive, or None when all do; the edits dropped)."""
        items = [it for it in items if it.id in before]
        if not any(v < 1.0 - EPS for v in before.values()):
            return None, ()  # nothing failed: no evidence of what the edits should fix
        kept = list(applied)
        patch = apply_edits(skill, kept, fuzzy_threshold=self.fuzzy)
        after = self.score(patch.text, items, step, "check")
        if len(after) < (1.0 - self.max_error_rate) * len(items):
            return None, ()
        found = verdict(before, after)
        dropped: list[Dropped] = []
        if found.broken and len(kept) >= 2:
            harmful = self.leave_one_out(step, skill, kept, items, after, found)
            dropped += harmful
            if harmful:
                gone = {d.edit for d in harmful}
                kept = [e for e in kept if e not in gone]
                patch = apply_edits(skill, kept, fuzzy_threshold=self.fuzzy)
                if kept:
                    after = self.score(patch.text, items, step, "check")
                    found = verdict(before, after)
        if kept and not found.helps:
            dropped += [Dropped(edit=e, note=found.note(), score_before=found.before, score_after=found.after,
                                companions=tuple(x for x in kept if x != e)) for e in kept]
            kept = []
        if not dropped:
            return None, ()
        return apply_edits(skill, kept, fuzzy_threshold=self.fuzzy), tuple(dropped)

    def leave_one_out(self, step: int, skill: str, edits: Sequence[Edit], items, after: Mapping[str, float],
                      found: Verdict) -> list[Dropped]:
        changed = set(found.fixed) | set(found.broken)
        changed_items = [it for it in items if it.id in changed]
        full = {i: after[i] for i in changed}
        out = []
        for edit in edits:
            rest = [e for e in edits if e != edit]
            without = self.score(apply_edits(skill, rest, fuzzy_threshold=self.fuzzy).text, changed_items, step,
                                 "check_leave_one_out")
            added = contribution(full, without)
            if added < -EPS:
                # Scores as the rejected-edit buffer shows them: without the edit, then with it
                # (items the candidate did not change count as unchanged).
                out.append(Dropped(
                    edit=edit, score_before=found.after - added / max(found.n_items, 1), score_after=found.after,
                    note=(f"contradicted: left out of the candidate, which changed {len(changed)} train items "
                          f"of its step (fixed {len(found.fixed)}, broke {len(found.broken)}), it scores "
                          f"{-added:+.2f} items better there")))
        return out

"""The step x item flip matrix of the selection split.  (pure: no I/O)

Input: only the selection rollouts' (step, purpose, item_id, hard) and each step's
gate decision. The strict gate scores the incumbent once (the seed at step 0, then
every accepted candidate) and re-uses that score, so the incumbent's per-item results
are reconstructed here: they start as the seed's, are refreshed by any direct
measurement (`gate_current` rows, paired mode), and become the candidate's results when
a step (or a slow update) is accepted. A "flip" is an item whose candidate result
differs from the incumbent's result going into that step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from skillopt.vocabulary import ACCEPTED

Cell = float | None


@dataclass(frozen=True)
class FlipMatrix:
    steps: tuple[int, ...]  # columns: 0 (the seed) and every step with a selection rollout or decision
    items: tuple[str, ...]  # rows: selection item ids, sorted
    incumbent: tuple[tuple[Cell, ...], ...]  # [item][step]: incumbent's hard after that step's decision
    candidate: tuple[tuple[Cell, ...], ...]  # [item][step]: the step's gate candidate (None: not evaluated)
    flips: tuple[tuple[Cell, ...], ...]  # [item][step]: candidate - incumbent going in (+1 fixed, -1 broke)

    def column(self, grid: str, step: int) -> list[Cell]:
        j = self.steps.index(step)
        return [row[j] for row in getattr(self, grid)]


def _accepted(decision: str | None) -> bool:
    return decision in ACCEPTED


def build(rows: Iterable[tuple[int, str, str, float]], decisions: Mapping[int, str],
          slow_decisions: Mapping[int, str] | None = None,
          examples_decisions: Mapping[int, str] | None = None) -> FlipMatrix:
    """`rows`: (step, purpose, item_id, hard) of selection rollouts; `decisions`: step -> step-gate
    decision; `slow_decisions`: step -> decision of the slow update gated after that step;
    `examples_decisions`: step -> decision of the worked-examples trial gated after it."""
    slow_decisions, examples_decisions = slow_decisions or {}, examples_decisions or {}
    by_step: dict[int, dict[str, dict[str, float]]] = {}
    items: set[str] = set()
    for step, purpose, item_id, hard in rows:
        by_step.setdefault(int(step), {}).setdefault(purpose, {})[item_id] = float(hard)
        items.add(item_id)
    steps = sorted(set(by_step) | set(decisions) | {0})
    order = sorted(items)

    incumbent: dict[str, float] = {}
    inc_cols: list[dict[str, float]] = []
    cand_cols: list[dict[str, float]] = []
    flip_cols: list[dict[str, float]] = []
    for step in steps:
        measured = by_step.get(step, {})
        incumbent = {**incumbent, **measured.get("gate_current", {})}  # a direct measurement wins
        candidate = measured.get("gate_candidate", {})
        flip_cols.append({i: candidate[i] - incumbent[i] for i in candidate if i in incumbent})
        cand_cols.append(candidate)
        if _accepted(decisions.get(step)):
            incumbent = {**incumbent, **candidate}
        if _accepted(examples_decisions.get(step)):  # worked examples kept after the step's candidate
            incumbent = {**incumbent, **measured.get("examples_candidate", {})}
        if _accepted(slow_decisions.get(step)):
            incumbent = {**incumbent, **measured.get("slow_update_candidate", {})}
        inc_cols.append(incumbent)

    def grid(cols: list[dict[str, float]]) -> tuple[tuple[Cell, ...], ...]:
        return tuple(tuple(col.get(item) for col in cols) for item in order)

    return FlipMatrix(steps=tuple(steps), items=tuple(order), incumbent=grid(inc_cols),
                      candidate=grid(cand_cols), flips=grid(flip_cols))


def flip_counts(m: FlipMatrix) -> list[tuple[int, int, int]]:
    """(step, items fixed, items broken) per step."""
    out = []
    for j, step in enumerate(m.steps):
        col = [row[j] for row in m.flips if row[j] is not None]
        out.append((step, sum(v > 0 for v in col), sum(v < 0 for v in col)))
    return out

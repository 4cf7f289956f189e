"""The validation gate, run for real: a candidate skill against the incumbent on the selection split.

gate.py holds the pure decision rules; this module pays for the evaluations they need,
through the run's rollout Evaluator (so every result is cached and recorded), and reports
which items flipped. Two modes: `strict` scores the candidate on every item and compares
means (the published rule); `paired` walks items one by one and stops as soon as the
outcome cannot change.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from . import events as ev
from . import gate
from .config import RunConfig
from .errors import ModelError
from .plan import Plan
from .rollout import Batch, Evaluator
from .skill import sha
from .tasks.task import Trajectory

Flip = tuple[str, float, float]  # (item id, incumbent value, candidate value) where they differ


@dataclass(frozen=True)
class GateResult:
    decision: gate.GateDecision
    flipped: tuple[Flip, ...]


def value(config: RunConfig, scored: Batch | Trajectory) -> float:
    """The gate metric of a batch (its mean) or of one trajectory."""
    if isinstance(scored, Batch):
        pairs = [(t.evaluation.hard, t.evaluation.soft) for t in scored.trajectories]
        return gate.mean_score(pairs, config.gate_metric, config.gate_mixed_weight)
    e = scored.evaluation
    return gate.metric_value(e.hard, e.soft, config.gate_metric, config.gate_mixed_weight)


class Validator:
    """Runs the gate of one run; `evaluate` is the trainer's (it stops a run whose backend is dead)."""

    def __init__(self, config: RunConfig, plan: Plan, evaluator: Evaluator,
                 evaluate: Callable[..., Batch], emit: Callable[[ev.Event], None], run_id: str, target_model: str):
        self.config, self.plan, self.evaluator, self.evaluate = config, plan, evaluator, evaluate
        self.emit, self.run_id, self.target_model = emit, run_id, target_model

    def value(self, scored: Batch | Trajectory) -> float:
        return value(self.config, scored)

    def run(self, step: int, current: str, candidate: str, current_score: float | None, stage: str) -> GateResult:
        if self.config.gate_mode == "paired" and self.config.use_gate:
            return self.paired(step, current, candidate, stage)
        return self.strict(step, current, candidate, current_score, stage)

    def strict(self, step: int, current: str, candidate: str, current_score: float | None,
               stage: str) -> GateResult:
        items = self.plan.selection
        batch = self.evaluate(candidate, items, step=step, split="selection", purpose=f"{stage}_candidate",
                              stage=stage)
        before = current_score if current_score is not None else 0.0
        decision = gate.strict(before, self.value(batch), len(items))
        if not self.config.use_gate:
            decision = dataclasses.replace(decision, accept=True, reason="gate disabled")
        incumbent = {it.id: self.evaluator.cached(current, it) for it in items}
        flipped = tuple((t.item_id, self.value(incumbent[t.item_id]), self.value(t)) for t in batch.trajectories
                        if incumbent.get(t.item_id) is not None
                        and self.value(incumbent[t.item_id]) != self.value(t))
        return GateResult(decision=decision, flipped=flipped)

    def paired(self, step: int, current: str, candidate: str, stage: str) -> GateResult:
        """Walk items in a seeded order; stop as soon as the outcome cannot change.

        The incumbent's per-item values come from the evaluation cache (it was scored
        when it became the incumbent); only the candidate's evaluation stops early.
        """
        c = self.config
        items = {it.id: it for it in self.plan.selection}
        incumbent = self.evaluate(current, list(items.values()), step=step, split="selection",
                                  purpose="gate_current", stage=stage).by_item
        values = {i: self.value(t) for i, t in incumbent.items()}
        # The incumbent's weakest items first: only there can the candidate gain, so a
        # candidate that fixes too little is rejected after those few items. Any order gives
        # the full evaluation's decision (PairedGate's bounds are exact); this one stops soonest
        # on rejects, the common case once a run matures. Ties keep the seeded shuffle.
        order = sorted(gate.order_items(list(items), self.plan.step_seed(step)), key=values.__getitem__)
        pg = gate.PairedGate(values, order, min_delta=c.gate_min_delta, alpha=c.gate_alpha)
        trajs, hits, flipped = [], [], []
        for item_id in pg.items:
            if pg.done:
                break
            traj, hit = self.evaluator.one(candidate, items[item_id], step=step, stage=stage)
            pg = pg.observe(item_id, self.value(traj))
            trajs.append(traj)
            hits.append(hit)
            before, after = values[item_id], self.value(traj)
            if before != after:
                flipped.append((item_id, before, after))
        self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split="selection", purpose=f"{stage}_candidate",
                                  skill_sha=sha(candidate), trajectories=tuple(trajs), cached=tuple(hits)))
        if trajs and all(t.error for t in trajs):
            raise ModelError(f"all gate rollouts of {self.target_model} failed ({trajs[0].error})")
        return GateResult(decision=whole_split_scores(pg.decision(), values, trajs, self.value),
                          flipped=tuple(flipped))


def whole_split_scores(d: gate.GateDecision, incumbent: dict[str, float], trajs,
                       value: Callable[[Trajectory], float]) -> gate.GateDecision:
    """Restate a paired decision's scores over the whole selection split.

    PairedGate scores the items it evaluated; after an early stop that subset is the
    incumbent's weakest items (evaluated first), so its means are not comparable with the
    incumbent's or the best skill's whole-split scores, and `best` would lag behind the
    accepted skills. The incumbent's score is its whole-split mean (it is scored on every
    item); the candidate's is that plus the observed gains over the whole split, items not
    evaluated counting as unchanged. A full evaluation gives the plain means.
    """
    n = len(incumbent)
    if not n:
        return d
    current = math.fsum(incumbent.values()) / n
    gain = math.fsum(value(t) - incumbent[t.item_id] for t in trajs) / n
    return dataclasses.replace(d, current_score=current, candidate_score=current + gain, margin=gain)

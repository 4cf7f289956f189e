"""The validation gate, run for real: a candidate skill against the incumbent on the selection split.

gate.py holds the pure decision rules; this module pays for the evaluations they need,
through the run's rollout Evaluator (so every result is cached and recorded), and reports
which items flipped. Two modes: `strict` scores the candidate on every item and compares
means (the published rule); `paired` walks items one by one and stops as soon as the
outcome cannot change.

With sampled scores (samples_per_item > 1) each item's value is its samples' mean, and
the gate is told each mean's variance (the incumbent's from this run or the cache, the
candidate's from its samples): what is within sampling noise is a tie (see gate.py), and
the decision carries both scores' 95% intervals (spread.py).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

from . import events as ev
from . import gate, spread
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
    candidate_values: tuple[tuple[str, float], ...] = ()  # per scored item; the incumbent's next, if accepted


def value(config: RunConfig, scored: Batch | Trajectory) -> float:
    """The gate metric of a batch (the mean over its scored items) or of one trajectory."""
    if isinstance(scored, Batch):
        pairs = [(t.evaluation.hard, t.evaluation.soft) for t in scored.scored]
        return gate.mean_score(pairs, config.gate_metric, config.gate_mixed_weight)
    e = scored.evaluation
    return gate.metric_value(e.hard, e.soft, config.gate_metric, config.gate_mixed_weight)


class Values(dict):
    """Per-item gate values of sampled scores, with `variances`: each item mean's variance."""

    def __init__(self, values: Mapping[str, float], variances: Mapping[str, float]):
        super().__init__(values)
        self.variances = dict(variances)


def variances(values: Mapping[str, float]) -> dict[str, float]:
    """The per-item variances `values` carries ({} for one sample per item)."""
    return getattr(values, "variances", {})


def mean(values: Mapping[str, float], items: Sequence[str]) -> float:
    return math.fsum(values[i] for i in items) / len(items) if items else 0.0


def incomplete(decision: gate.GateDecision, n_items: int, max_error_rate: float) -> gate.GateDecision:
    """The decision with its error counts judged: more errored items than max_error_rate
    allows (for either skill) make the comparison incomplete, and the gate never accepts then."""
    limit = max_error_rate * n_items
    if decision.n_errors <= limit and decision.n_errors_current <= limit:
        return decision
    reason = (f"incomplete: model errors on {decision.n_errors} candidate and {decision.n_errors_current} "
              f"incumbent items of {n_items} (max_error_rate {max_error_rate:g}); not accepted")
    return dataclasses.replace(decision, accept=False, complete=False, reason=reason)


class Validator:
    """Runs the gate of one run; `evaluate` is the trainer's (it stops a run whose backend is dead)."""

    def __init__(self, config: RunConfig, plan: Plan, evaluator: Evaluator,
                 evaluate: Callable[..., Batch], emit: Callable[[ev.Event], None], run_id: str):
        self.config, self.plan, self.evaluator, self.evaluate = config, plan, evaluator, evaluate
        self.emit, self.run_id = emit, run_id

    def value(self, scored: Batch | Trajectory) -> float:
        return value(self.config, scored)

    def values(self, batch: Batch) -> dict[str, float]:
        """{item id: gate value}; sampled, a Values that also holds each item's variance."""
        out = {t.item_id: self.value(t) for t in batch.scored}
        if self.config.samples_per_item <= 1:
            return out
        return Values(out, {t.item_id: self.variance(t) for t in batch.scored})

    def variance(self, t: Trajectory) -> float:
        """The variance of a trajectory's gate value, a mean over its samples (0: one sample)."""
        return self.sample_variance(t.evaluation.samples)

    def sample_variance(self, samples: Sequence[tuple[float, float]]) -> float:
        c = self.config
        return spread.mean_variance([gate.metric_value(h, s, c.gate_metric, c.gate_mixed_weight) for h, s in samples])

    def incumbent_variances(self, skill: str, items: Sequence) -> dict[str, float]:
        """Each item's variance under `skill` (its samples seen this run or cached; 0 unknown)."""
        if self.config.samples_per_item <= 1:
            return {}
        skill_sha = sha(skill)
        return {it.id: self.sample_variance(self.evaluator.samples_of(skill_sha, it)) for it in items}

    def with_intervals(self, d: gate.GateDecision, current_var: Mapping[str, float],
                       candidate_var: Mapping[str, float], items: Sequence[str]) -> gate.GateDecision:
        """The decision with both scores' 95% sampling intervals over `items` (sampled runs only)."""
        if self.config.samples_per_item <= 1 or not items:
            return d
        n = len(items)
        return dataclasses.replace(
            d, current_ci=spread.interval(d.current_score, [current_var.get(i, 0.0) for i in items], n),
            candidate_ci=spread.interval(d.candidate_score, [candidate_var.get(i, 0.0) for i in items], n))

    def compare(self, incumbent: Mapping[str, float], candidate: Mapping[str, float]) -> gate.GateDecision:
        """The gate's rule on two fully scored skills (on the items both were scored on)."""
        common = [i for i in incumbent if i in candidate]
        inc_var, cand_var = variances(incumbent), variances(candidate)
        if self.config.gate_mode == "paired":
            d = gate.paired(incumbent, candidate, common, self.config.gate_min_delta, self.config.gate_alpha,
                            incumbent_var=inc_var, candidate_var=cand_var)
        else:
            noise = spread.halfwidth([inc_var.get(i, 0.0) + cand_var.get(i, 0.0) for i in common], len(common))
            d = gate.strict(mean(incumbent, common), mean(candidate, common), len(common), noise)
        return self.with_intervals(d, inc_var, cand_var, common)

    def run(self, step: int, current: str, candidate: str, incumbent: Mapping[str, float],
            stage: str, prior: gate.Prior | None = None, extra: Sequence[Trajectory] = ()) -> GateResult:
        """Gate `candidate` against `current`, whose known per-item values are `incumbent`;
        `prior` (paired gate only): earlier comparisons' record that must pass pooled with this one;
        `extra` (paired gate only): `current`'s train rollouts the comparison also counts (see paired)."""
        if self.config.gate_mode == "paired" and self.config.use_gate:
            return self.paired(step, current, candidate, stage, prior, extra)
        return self.strict(step, current, candidate, incumbent, stage)

    def strict(self, step: int, current: str, candidate: str, incumbent: Mapping[str, float],
               stage: str) -> GateResult:
        """The published rule: the candidate's mean on the selection split must beat the
        incumbent's, here on the items both were scored on."""
        items = self.plan.selection
        batch = self.evaluate(candidate, items, step=step, split="selection", purpose=f"{stage}_candidate",
                              stage=stage)
        before = dict(incumbent)
        missing = [it for it in items if it.id not in before]
        if missing:  # errored before (or a checkpoint without values): tried again now; these
            # may well fail again, which is no sign of a dead backend, so no dead-backend check
            before.update(self.values(self.evaluator.run(current, missing, step=step, split="selection",
                                                         purpose=f"{stage}_current", stage=stage)))
        after = self.values(batch)
        common = [it.id for it in items if it.id in before and it.id in after]
        inc_var = self.incumbent_variances(current, [it for it in items if it.id in common])
        cand_var = variances(after)
        noise = spread.halfwidth([inc_var.get(i, 0.0) + cand_var.get(i, 0.0) for i in common], len(common))
        decision = self.with_intervals(gate.strict(mean(before, common), mean(after, common), len(common), noise),
                                       inc_var, cand_var, common)
        if not self.config.use_gate:
            decision = dataclasses.replace(decision, accept=True, reason="gate disabled")
        decision = dataclasses.replace(decision, n_errors=batch.n_errors,
                                       n_errors_current=sum(it.id not in before for it in items))
        flipped = tuple((i, before[i], after[i]) for i in common if before[i] != after[i])
        return GateResult(decision=incomplete(decision, len(items), self.config.max_error_rate), flipped=flipped,
                          candidate_values=tuple(after.items()))

    def paired(self, step: int, current: str, candidate: str, stage: str,
               prior: gate.Prior | None = None, extra: Sequence[Trajectory] = ()) -> GateResult:
        """Walk items in a seeded order; stop as soon as the outcome cannot change.

        The incumbent's per-item values come from the evaluation cache (it was scored
        when it became the incumbent); only the candidate's evaluation stops early. Items
        either skill could not be scored on are left out of the comparison.

        `extra`: the incumbent's rollouts of train items the comparison counts beside the
        selection split (a trial's fair items: trainer.try_examples). They join the decision's
        wins, losses and p; its scores, the candidate's values and the record of the split stay
        the selection split's, so the curves and the best skill mean what they always do.
        """
        c = self.config
        items = {it.id: it for it in self.plan.selection}
        selection = self.values(self.evaluate(current, list(items.values()), step=step, split="selection",
                                              purpose=f"{stage}_current", stage=stage))
        train = {t.item_id: t for t in extra if not t.error and t.item_id not in items}
        values = self.joined(selection, train)
        items |= {it.id: it for it in self.plan.train if it.id in train}
        # The incumbent's weakest items first: only there can the candidate gain, so a
        # candidate that fixes too little is rejected after those few items. Any order gives
        # the full evaluation's decision (PairedGate's bounds are exact); this one stops soonest
        # on rejects, the common case once a run matures. Ties keep the seeded shuffle. With a
        # prior the items won and lost here are pooled with later comparisons', so they must be
        # a fair sample of the split, not its weakest items (where only wins can happen): the
        # seeded shuffle alone.
        order = gate.order_items(list(values), self.plan.step_seed(step))
        if prior is None:
            order = sorted(order, key=values.__getitem__)
        inc_var = variances(values)
        pg = gate.PairedGate(values, order, min_delta=c.gate_min_delta, alpha=c.gate_alpha, variances=inc_var,
                             prior=prior)
        trajs, hits, flipped = [], [], []
        for item_id in order:
            if pg.done:
                break
            traj, hit = self.evaluator.one(candidate, items[item_id], step=step, stage=stage)
            trajs.append(traj)
            hits.append(hit)
            if traj.error:
                pg = pg.drop(item_id)
                continue
            pg = pg.observe(item_id, self.value(traj), self.variance(traj))
            if values[item_id] != self.value(traj):
                flipped.append((item_id, values[item_id], self.value(traj)))
        self.emit_candidate(step, stage, candidate, trajs, hits, train)
        if Batch(tuple(trajs), tuple(hits)).dead:  # a candidate too long for the target is only rejected
            raise ModelError(f"all {len(trajs)} gate rollouts failed ({trajs[0].error}); stopping instead of "
                             f"scoring them 0")
        scored = [t for t in trajs if not t.error and t.item_id not in train]
        decision = self.on_selection(pg.decision(), selection, scored, sum(1 for t in trajs if t.error), len(train))
        return GateResult(decision=incomplete(decision, len(self.plan.selection) + len(train), c.max_error_rate),
                          flipped=tuple(flipped), candidate_values=tuple((t.item_id, self.value(t)) for t in scored))

    def on_selection(self, d: gate.GateDecision, selection: Mapping[str, float], scored: Sequence[Trajectory],
                     n_errors: int, n_train: int) -> gate.GateDecision:
        """A paired decision's scores and intervals restated over the selection split (`scored`:
        the candidate's selection rollouts), its errors counted, its train items named."""
        d = dataclasses.replace(whole_split_scores(d, selection, scored, self.value), n_errors=n_errors,
                                n_errors_current=len(self.plan.selection) - len(selection))
        if n_train:
            d = dataclasses.replace(d, reason=f"{d.reason} (on the {len(selection)} selection items and {n_train} "
                                              f"train items the change was not made from)")
        # Items the candidate was not scored on count as unchanged: the incumbent's noise is theirs.
        sel_var = variances(selection)
        cand_var = {**sel_var, **{t.item_id: self.variance(t) for t in scored}}
        return self.with_intervals(d, sel_var, cand_var, list(selection))

    def joined(self, selection: Mapping[str, float], train: Mapping[str, Trajectory]) -> dict[str, float]:
        """The selection split's incumbent values with its train rollouts' (and their variances)."""
        values = {**selection, **{i: self.value(t) for i, t in train.items()}}
        if self.config.samples_per_item <= 1:
            return values
        return Values(values, {**variances(selection), **{i: self.variance(t) for i, t in train.items()}})

    def emit_candidate(self, step: int, stage: str, candidate: str, trajs: Sequence[Trajectory],
                       hits: Sequence[bool], train: Collection[str]) -> None:
        """Record the candidate's gate rollouts, those of `train` items under the train split."""
        for split, part in (("selection", [k for k, t in enumerate(trajs) if t.item_id not in train]),
                            ("train", [k for k, t in enumerate(trajs) if t.item_id in train])):
            if part or split == "selection":
                self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split=split, purpose=f"{stage}_candidate",
                                          skill_sha=sha(candidate), trajectories=tuple(trajs[k] for k in part),
                                          cached=tuple(hits[k] for k in part)))


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

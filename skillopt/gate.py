"""The gate (validation): accept a candidate skill only if it beats the incumbent.  (pure: no I/O)

`strict` is the published rule: the candidate's selection score must exceed the
incumbent's cached score; ties reject. `paired` compares the two skills item by item
on the same selection items and can stop early. Its early decisions are exact, not
estimates: it stops only when every possible outcome of the remaining items leads to
the same decision as evaluating them all (see PairedGate).

With sampled scores (samples_per_item > 1, see spread.py) both rules count what is within
the target's sampling noise as a tie: strict needs the difference of the means beyond the
95% interval of that difference; paired counts an item as won or lost only when its
difference exceeds Z * sqrt(var_candidate + var_incumbent) of the two item means. With one
sample per item every variance is 0 and both rules are exactly the published ones.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from .spread import tolerance

# Differences smaller than this are float noise: such an item is a tie, such a gain is none.
EPS = 1e-12
METRICS = ("hard", "soft", "mixed")


def metric_value(hard: float, soft: float, metric: str, mixed_weight: float = 0.5) -> float:
    """One item's gate value: hard (0/1), soft (0..1) or (1-w)*hard + w*soft, written so that an
    item whose soft equals its hard gets exactly its hard value."""
    if metric == "hard":
        return float(hard)
    if metric == "soft":
        return float(soft)
    if metric == "mixed":
        return hard + mixed_weight * (soft - hard)
    raise ValueError(f"unknown gate metric {metric!r}; choose from {', '.join(METRICS)} "
                     f"(\"auto\" is resolved by RunConfig.for_task before a run scores anything)")


def mean_score(pairs: Iterable[tuple[float, float]], metric: str, mixed_weight: float = 0.5) -> float:
    """Mean gate value over (hard, soft) pairs; 0.0 for no items."""
    values = [metric_value(h, s, metric, mixed_weight) for h, s in pairs]
    return math.fsum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class GateDecision:
    accept: bool
    current_score: float
    candidate_score: float
    margin: float  # candidate_score - current_score
    p_value: float | None  # paired mode: one-sided sign test; strict: None
    n_items: int  # selection items in the gate
    n_evaluated: int  # items the candidate was actually scored on (fewer after an early stop)
    wins: int
    losses: int
    early_stop: bool
    reason: str
    n_errors: int = 0  # gate items the candidate could not be scored on (model errors): left out
    n_errors_current: int = 0  # the same for the incumbent
    complete: bool = True  # False when either skill errored on more items than max_error_rate allows
    # 95% sampling-noise intervals of the two scores (spread.interval); None with one sample per item
    current_ci: tuple[float, float] | None = None
    candidate_ci: tuple[float, float] | None = None


def strict(current_score: float, candidate_score: float, n_items: int, noise: float = 0.0) -> GateDecision:
    """The reference rule: accept iff candidate > current; a tie rejects. `noise`: with sampled
    scores, half the 95% interval of the difference of the means (spread.halfwidth); a margin
    within it is a tie too (0: the published rule)."""
    margin = candidate_score - current_score
    need = max(EPS, noise)
    accept = margin > need
    if accept:
        reason = f"candidate {candidate_score:.4f} > current {current_score:.4f}"
        reason += f", beyond sampling noise ±{noise:.4f}" if noise > EPS else ""
    elif abs(margin) <= EPS:
        reason = f"tie at {candidate_score:.4f}: ties reject"
    elif abs(margin) <= need:
        reason = (f"within sampling noise: margin {margin:+.4f}, 95% noise ±{noise:.4f}: a tie, ties reject "
                  f"(candidate {candidate_score:.4f}, current {current_score:.4f})")
    else:
        reason = f"candidate {candidate_score:.4f} < current {current_score:.4f}"
    return GateDecision(accept=accept, current_score=current_score, candidate_score=candidate_score,
                        margin=margin, p_value=None, n_items=n_items, n_evaluated=n_items, wins=0, losses=0,
                        early_stop=False, reason=reason)


@functools.lru_cache(maxsize=4096)  # the sequential gate asks for the same (wins, losses) often
def sign_test_p(wins: int, losses: int) -> float:
    """One-sided exact sign test: P(X >= wins) for X ~ Binomial(wins + losses, 1/2).

    Ties are excluded by the caller; with no discordant items there is no evidence: 1.0.
    """
    n = wins + losses
    if n <= 0:
        return 1.0
    # Integer arithmetic is exact; int / int division rounds correctly even for huge n.
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / (1 << n)


def order_items(item_ids: Iterable[str], seed: int) -> tuple[str, ...]:
    """A deterministic shuffle: by a hash of (seed, id), so a subset keeps its relative order."""
    return tuple(sorted(set(item_ids), key=lambda i: (hashlib.sha256(f"{seed}\x00{i}".encode()).hexdigest(), i)))


Diff = tuple[float, float]  # (candidate - incumbent, the tolerance within which it is a tie)


@dataclass(frozen=True)
class Prior:
    """Items won and lost by earlier comparisons of the same kind of change, and the level their
    pooled sign test must pass with this comparison's added: a gate with a prior accepts only
    if the pooled test passes too (worked examples: examples.py)."""
    wins: int
    losses: int
    alpha: float

    def passes(self, wins: int, losses: int) -> bool:
        return sign_test_p(self.wins + wins, self.losses + losses) <= self.alpha


def _accepts(gain: float, wins: int, losses: int, min_delta: float, alpha: float, prior: Prior | None) -> bool:
    """The paired rule on a mean gain and its wins and losses: the one rule of the full
    evaluation (_rule) and of the early-stop bounds (PairedGate._verdict)."""
    return (gain >= max(min_delta, EPS) and sign_test_p(wins, losses) <= alpha
            and (prior is None or prior.passes(wins, losses)))


def _rule(diffs: Sequence[Diff], n: int, min_delta: float, alpha: float,
          prior: Prior | None = None) -> tuple[bool, float, float, int, int]:
    """(accept, mean gain, p, wins, losses) for the full set of `n` per-item differences."""
    wins = sum(1 for d, tol in diffs if d > tol)
    losses = sum(1 for d, tol in diffs if d < -tol)
    gain = math.fsum(d for d, _ in diffs) / n if n else 0.0
    accept = n > 0 and _accepts(gain, wins, losses, min_delta, alpha, prior)
    return accept, gain, sign_test_p(wins, losses), wins, losses


FILLS = (0.0, 1.0)  # an unseen item's worst and best candidate value
# Every finite float is an integer multiple of 2**-1074 (the smallest subnormal), so a sum of
# floats is exact as an integer count of that unit: Python's arbitrary-size integers add it in
# nanoseconds, where Fraction (the same exactness) took about a tenth of a profiled simulated run.
_UNIT_BITS = 1074
Tally = tuple[int, int, int]  # (exact sum of differences in units of 2**-1074, wins, losses) of some items
_ZERO: Tally = (0, 0, 0)


def _exact(d: float) -> int:
    """`d` as an exact integer count of 2**-1074."""
    num, den = d.as_integer_ratio()  # den is a power of two, at most 2**1074
    return num << (_UNIT_BITS - den.bit_length() + 1)


def _rounded(units: int) -> float:
    """The float nearest an exact sum (int / int rounds correctly), as math.fsum rounds it."""
    return units / (1 << _UNIT_BITS)


def _tally(d: float, tol: float) -> Tally:
    return _exact(d), int(d > tol), int(d < -tol)


def _plus(a: Tally, b: Tally) -> Tally:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _minus(a: Tally, b: Tally) -> Tally:
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def _total(tallies: Iterable[Tally]) -> Tally:
    total = _ZERO
    for t in tallies:
        total = _plus(total, t)
    return total


class PairedGate:
    """Sequential paired gate over a fixed item list. Immutable: observe() returns a new gate.

    Rule on the full set: mean(candidate - incumbent) >= max(min_delta, EPS) AND
    sign_test_p(wins, losses) <= alpha. Values lie in [0, 1], so an unseen item's
    difference lies in [-incumbent, 1 - incumbent]. Both parts of the rule improve
    monotonically with each item's difference (a larger sum; a win instead of a tie
    or a loss lowers p), so if the all-best completion of the unseen items rejects,
    every completion rejects (early reject), and if the all-worst one accepts, every
    completion accepts (early accept). Sums are exact (math.fsum on a full list, running
    integer tallies for the bounds, both rounded once to a float), so the bound and the full
    evaluation can never disagree through float summation order.

    `variances` (sampled scores): each incumbent item mean's variance. An item is won or
    lost only beyond tolerance(var_incumbent + var_candidate); an unseen item's bound uses
    the incumbent's part alone, the smallest tolerance it can get, so the bounds stay exact
    (a real candidate value is no further out and its tie zone no narrower).

    `prior`: the rule also needs the pooled sign test of earlier comparisons' wins and losses
    plus this one's to pass at the prior's level. That part is monotone in the same way, so the
    gate goes on evaluating until the pooled test is decided too, not only this comparison's.
    """

    __slots__ = ("_incumbent", "_items", "_min_delta", "_alpha", "_seen", "_variances", "_tols", "_fills", "_agg",
                 "_prior")

    def __init__(self, incumbent: Mapping[str, float], items: Sequence[str],
                 min_delta: float = 0.0, alpha: float = 0.5, *, variances: Mapping[str, float] | None = None,
                 prior: Prior | None = None):
        items = tuple(items)
        missing = [i for i in items if i not in incumbent]
        if missing:
            raise ValueError(f"incumbent has no value for item {missing[0]!r}")
        if len(set(items)) != len(items):
            raise ValueError("gate items must be distinct")
        self._incumbent = {i: float(incumbent[i]) for i in items}
        self._items = items
        self._min_delta = float(min_delta)
        self._alpha = float(alpha)
        self._prior = prior
        self._seen: dict[str, float] = {}
        self._variances = dict(variances or {})
        self._tols: dict[str, float] = {}  # per seen item, when not EPS
        # Each item's tally as if the candidate scored 1 (the best completion) or 0 (the
        # worst), with the unseen item's tie tolerance: `done` asks both bounds after every
        # item, so the unseen items' tallies are kept as running totals, not summed again.
        self._fills = {fill: {i: _tally(fill - v, tolerance(self._variances.get(i, 0.0), EPS))
                              for i, v in self._incumbent.items()} for fill in FILLS}
        self._agg = {"seen": _ZERO, **{fill: _total(self._fills[fill].values()) for fill in FILLS}}

    def _copy(self, items: tuple[str, ...], seen: dict[str, float], tols: dict[str, float],
              agg: dict) -> "PairedGate":
        new = object.__new__(PairedGate)
        new._incumbent, new._items, new._min_delta, new._alpha = self._incumbent, items, self._min_delta, self._alpha
        new._seen, new._variances, new._tols, new._fills, new._agg = seen, self._variances, tols, self._fills, agg
        new._prior = self._prior
        return new

    # -- observing
    def observe(self, item_id: str, candidate_value: float, variance: float = 0.0) -> "PairedGate":
        """`variance`: that of the candidate's item mean (sampled scores; 0 for one sample)."""
        if item_id not in self._items:
            raise ValueError(f"item {item_id!r} is not in this gate")
        if item_id in self._seen:
            raise ValueError(f"item {item_id!r} was already observed")
        value = float(candidate_value)
        seen = {**self._seen, item_id: value}
        tols = self._tols
        noise = self._variances.get(item_id, 0.0) + variance
        if noise > 0:
            tols = {**tols, item_id: tolerance(noise, EPS)}
        agg = {"seen": _plus(self._agg["seen"], _tally(value - self._incumbent[item_id], tols.get(item_id, EPS))),
               **{fill: _minus(self._agg[fill], self._fills[fill][item_id]) for fill in FILLS}}
        return self._copy(self._items, seen, tols, agg)

    def drop(self, item_id: str) -> "PairedGate":
        """The gate without `item_id`: the candidate could not be scored on it (a model
        error), and the two skills are compared only on items both were scored on."""
        if item_id in self._seen:
            raise ValueError(f"item {item_id!r} was already observed")
        if item_id not in self._items:
            return self
        items = tuple(i for i in self._items if i != item_id)
        agg = {"seen": self._agg["seen"],
               **{fill: _minus(self._agg[fill], self._fills[fill][item_id]) for fill in FILLS}}
        return self._copy(items, self._seen, self._tols, agg)

    @property
    def items(self) -> tuple[str, ...]:
        return self._items

    @property
    def remaining(self) -> tuple[str, ...]:
        return tuple(i for i in self._items if i not in self._seen)

    @property
    def n_evaluated(self) -> int:
        return len(self._seen)

    # -- bounds
    def _observed(self) -> list[Diff]:
        """The seen items' differences, each with its tie tolerance, in item order."""
        return [(self._seen[i] - self._incumbent[i], self._tols.get(i, EPS)) for i in self._items if i in self._seen]

    def _verdict(self, fill: float) -> bool:
        """The rule with every unseen item scored `fill` (0 or 1), from the running tallies.
        The exact sum rounded once is what math.fsum gives on the same differences, so this
        agrees with _rule on the full list to the last bit."""
        n = len(self._items)
        total, wins, losses = _plus(self._agg["seen"], self._agg[fill])
        return n > 0 and _accepts(_rounded(total) / n, wins, losses, self._min_delta, self._alpha, self._prior)

    @property
    def done(self) -> bool:
        """True once the outcome no longer depends on the unseen items."""
        if not self._items or len(self._seen) == len(self._items):
            return True
        return not self._verdict(1.0) or self._verdict(0.0)

    def decision(self) -> GateDecision:
        """The gate's decision; before `done` it conservatively rejects as incomplete.

        Scores and margin cover the evaluated items only (an early stop leaves the
        rest unscored); wins, losses and p_value are over those items too.
        """
        n, k = len(self._items), len(self._seen)
        seen_ids = [i for i in self._items if i in self._seen]
        current = math.fsum(self._incumbent[i] for i in seen_ids) / k if k else 0.0
        candidate = math.fsum(self._seen[i] for i in seen_ids) / k if k else 0.0
        observed = self._observed()
        wins = sum(1 for d, tol in observed if d > tol)
        losses = sum(1 for d, tol in observed if d < -tol)
        p = sign_test_p(wins, losses)
        early = self.done and 0 < n and k < n
        need = max(self._min_delta, EPS)
        if not n:
            accept, reason = False, "no selection items to compare on"
        elif not self.done:
            accept, reason = False, f"incomplete: {k} of {n} items evaluated, outcome still open"
        elif k == n:
            accept, gain, p, wins, losses = _rule(observed, n, self._min_delta, self._alpha, self._prior)
            verdict = "accept" if accept else "reject"
            reason = (f"{verdict}: mean gain {gain:+.4f} (need >= {need:.4g}), "
                      f"sign test p={p:.4f} (need <= {self._alpha:.4g}), {wins} wins / {losses} losses")
        elif self._verdict(0.0):
            accept, reason = True, (f"early accept after {k} of {n} items: wins even if every "
                                    f"remaining item is lost ({wins} wins / {losses} losses so far)")
        else:
            pooled = (f" and the pooled test of {self._prior.wins} earlier wins / {self._prior.losses} losses "
                      f"p <= {self._prior.alpha:.4g}") if self._prior else ""
            accept, reason = False, (f"early reject after {k} of {n} items: cannot reach mean gain "
                                     f">= {need:.4g} with p <= {self._alpha:.4g}{pooled} even if every remaining "
                                     f"item is won")
        return GateDecision(accept=accept, current_score=current, candidate_score=candidate,
                            margin=candidate - current, p_value=p, n_items=n, n_evaluated=k, wins=wins,
                            losses=losses, early_stop=early, reason=reason)


def paired(incumbent: Mapping[str, float], candidate: Mapping[str, float], items: Sequence[str],
           min_delta: float = 0.0, alpha: float = 0.5, *, incumbent_var: Mapping[str, float] | None = None,
           candidate_var: Mapping[str, float] | None = None, prior: Prior | None = None) -> GateDecision:
    """The paired rule evaluated on every item (no early stop): the sequential gate's reference.
    The variances (sampled scores) are those of each item's mean; none: one sample per item."""
    gate = PairedGate(incumbent, items, min_delta, alpha, variances=incumbent_var, prior=prior)
    for i in gate.items:
        gate = gate.observe(i, candidate[i], (candidate_var or {}).get(i, 0.0))
    return gate.decision()

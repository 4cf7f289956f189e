"""Sampling noise: how far a score would move if the same skill were scored again.  (pure: no I/O)

With `samples_per_item` = n > 1 every item is scored n times at `sample_temperature`, and
its score is the mean of its samples. That mean is itself uncertain: its variance is the
samples' variance over n. A score over N items (the mean of the item means) then has the
variance sum(var_i / n) / N^2, and its 95% interval is the normal approximation
mean ± Z * sqrt(that). It says how much of a score is the target's sampling noise, for
these items; it is not an interval over other items one could have drawn (the lift's
bootstrap in lift.py is that one).

The gate uses the same numbers: a per-item difference within Z * sqrt(var_c + var_i) of 0,
and a difference of means within the interval of the difference, is what re-scoring the
same two skills would give about one time in twenty, so it counts as a tie. The two skills'
variances are added as if independent; their samples share seeds (rollout.py), which makes
them agree more often than that, so the rule errs towards a tie, never towards an accept.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

# Two-sided 95% normal quantile. Fixed, not a knob: the interval says "noise", and a rule
# that a person could tune until a candidate passes would say nothing.
Z = 1.96


def mean_variance(values: Sequence[float]) -> float:
    """The variance of the mean of `values`: their sample variance (n - 1) over n; 0 for one value."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = math.fsum(values) / n
    return math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n


def sd(values: Sequence[float]) -> float | None:
    """The sample standard deviation (n - 1) of `values`, the spread stored per item; None for one value."""
    n = len(values)
    if n < 2:
        return None
    return math.sqrt(mean_variance(values) * n)


def halfwidth(variances: Iterable[float], n_items: int) -> float:
    """Half the 95% interval of a mean over `n_items` items whose means have these variances."""
    if n_items <= 0:
        return 0.0
    return Z * math.sqrt(math.fsum(variances)) / n_items


def interval(mean: float, variances: Iterable[float], n_items: int) -> tuple[float, float]:
    """The 95% interval of `mean`, clipped to the scores' range [0, 1]."""
    half = halfwidth(variances, n_items)
    return max(0.0, mean - half), min(1.0, mean + half)


def tolerance(variance: float, eps: float) -> float:
    """The smallest per-item difference that is more than noise: Z * sqrt(variance), at least eps."""
    return max(eps, Z * math.sqrt(variance)) if variance > 0 else eps

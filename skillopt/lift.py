"""Skill lift: how much the best skill beats what the target does without training.  (pure: no I/O)

A run's headline is not "best vs seed": a weak seed skill can score below no skill at all,
and repairing it is not learning. The baseline is the better (by mean on the test split)
of the target with no skill and the target with the seed skill; the lift is the best
skill's mean gain over it on the test items all three were scored on, with a paired
bootstrap 95% interval (items resampled together, so item difficulty cancels), and a
breakdown by expected answer for tasks whose answers are labels.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

import numpy as np

BOOTSTRAP_SAMPLES = 2000  # enough for a stable 95% interval on a few hundred items, still instant
MAX_LABELS = 12  # more distinct expected answers than this is not a label breakdown worth showing


@dataclass(frozen=True)
class Lift:
    baseline: str  # "none" | "seed": the better of no skill and the seed skill
    best_score: float
    baseline_score: float
    lift: float  # best_score - baseline_score, on the common items
    ci_low: float
    ci_high: float
    n_items: int
    breakdown: Mapping[str, Mapping[str, float]]  # expected answer -> {"n", "best", "none", "seed"}


def _mean(values: Mapping[str, float], ids: list[str]) -> float:
    return math.fsum(values[i] for i in ids) / len(ids) if ids else 0.0


def bootstrap_interval(diffs: list[float], seed: int = 0, samples: int = BOOTSTRAP_SAMPLES) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of `diffs` resampled with replacement
    (vectorised: a pure-Python resampling loop took longer than a simulated training step)."""
    if not diffs:
        return 0.0, 0.0
    values = np.asarray(diffs, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(samples, len(values)))
    means = np.sort(values[picks].mean(axis=1))
    return float(means[int(0.025 * (samples - 1))]), float(means[int(math.ceil(0.975 * (samples - 1)))])


def measure(best: Mapping[str, float], seed: Mapping[str, float], none: Mapping[str, float],
            expected: Mapping[str, str], *, rng_seed: int = 0) -> Lift | None:
    """The lift from per-item values (errored items absent); None when no item was scored by all three."""
    ids = sorted(set(best) & set(seed) & set(none))
    if not ids:
        return None
    scores = {"none": _mean(none, ids), "seed": _mean(seed, ids)}
    baseline = "seed" if scores["seed"] > scores["none"] else "none"  # ties: no skill is the honest bar
    base = seed if baseline == "seed" else none
    diffs = [best[i] - base[i] for i in ids]
    low, high = bootstrap_interval(diffs, rng_seed)
    return Lift(baseline=baseline, best_score=_mean(best, ids), baseline_score=scores[baseline],
                lift=math.fsum(diffs) / len(ids), ci_low=low, ci_high=high, n_items=len(ids),
                breakdown=by_label(ids, best, seed, none, expected))


def by_label(ids: list[str], best: Mapping[str, float], seed: Mapping[str, float], none: Mapping[str, float],
             expected: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """Mean of each skill per expected answer; empty when answers are not a small label set."""
    groups: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        groups[expected.get(i, "")].append(i)
    if len(groups) > MAX_LABELS or len(groups) < 2:
        return {}
    return {label: {"n": len(g), "best": _mean(best, g), "seed": _mean(seed, g), "none": _mean(none, g)}
            for label, g in sorted(groups.items())}

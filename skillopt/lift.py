"""Skill lift: how much the best skill beats what the target does without training.  (pure: no I/O)

A run's headline is not "best vs seed": a weak seed skill can score below no skill at all,
and repairing it is not learning. The baseline is the better (by mean on the test split)
of the target with no skill and the target with the seed skill; the lift is the best
skill's mean gain over it on the test items all three were scored on, with a paired
bootstrap 95% interval (items resampled together, so item difficulty cancels), and a
breakdown: by field for tasks graded field by field (JSON), which fields each skill gets right;
by expected answer for tasks whose answers are labels.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 2000  # enough for a stable 95% interval on a few hundred items, still instant
MAX_LABELS = 12  # more distinct expected answers than this is not a label breakdown worth showing
SKILLS = ("best", "seed", "none")
FieldValues = Mapping[str, Mapping[str, float]]  # item id -> field -> 1.0 right / 0.0 wrong


@dataclass(frozen=True)
class Lift:
    baseline: str  # "none" | "seed": the better of no skill and the seed skill
    best_score: float
    baseline_score: float
    lift: float  # best_score - baseline_score, on the common items
    ci_low: float
    ci_high: float
    n_items: int
    breakdown: Mapping[str, Mapping[str, float]]  # answer or field -> {"n", "best", "none", "seed"}
    breakdown_by: str = ""  # "field" | "answer" | "" (none: neither a field-graded nor a label task)


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
            expected: Mapping[str, str], *, rng_seed: int = 0,
            fields: Mapping[str, FieldValues] | None = None) -> Lift | None:
    """The lift from per-item values (errored items absent); None when no item was scored by all
    three. `fields`: per skill ("best", "seed", "none"), each item's field scores (field_values);
    given for all three, the breakdown is by field, else by expected answer."""
    ids = sorted(set(best) & set(seed) & set(none))
    if not ids:
        return None
    scores = {"none": _mean(none, ids), "seed": _mean(seed, ids)}
    baseline = "seed" if scores["seed"] > scores["none"] else "none"  # ties: no skill is the honest bar
    base = seed if baseline == "seed" else none
    diffs = [best[i] - base[i] for i in ids]
    low, high = bootstrap_interval(diffs, rng_seed)
    per_field = by_field(ids, fields) if fields and all(fields.get(w) for w in SKILLS) else {}
    breakdown = per_field or by_label(ids, best, seed, none, expected)
    return Lift(baseline=baseline, best_score=_mean(best, ids), baseline_score=scores[baseline],
                lift=math.fsum(diffs) / len(ids), ci_low=low, ci_high=high, n_items=len(ids),
                breakdown=breakdown, breakdown_by=("field" if per_field else "answer") if breakdown else "")


def field_values(field_scores: Callable, items: Sequence, trajectories: Sequence) -> dict[str, dict[str, float]]:
    """Each scored item's field scores, `field_scores(item, output)` (a task's: Task.field_scores),
    errored items left out; {} when the task does not grade field by field (it returns None)."""
    by_id = {it.id: it for it in items}
    out: dict[str, dict[str, float]] = {}
    for t in trajectories:
        if t.error or t.item_id not in by_id:
            continue
        scores = field_scores(by_id[t.item_id], t.output)
        if scores is None:
            return {}
        out[t.item_id] = {name: float(v) for name, v in scores.items()}
    return out


def by_field(ids: list[str], fields: Mapping[str, FieldValues]) -> dict[str, dict[str, float]]:
    """Each field's share right per skill, on the items all three were scored on field by field,
    fields in the task's order."""
    common = [i for i in ids if all(i in fields[w] for w in SKILLS)]
    if not common:
        return {}
    names = list(fields["best"][common[0]])
    return {name: {"n": len(common), **{w: math.fsum(fields[w][i].get(name, 0.0) for i in common) / len(common)
                                        for w in SKILLS}} for name in names}


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


def lift_summary(row: Mapping) -> str:
    """A stored lift (Reader.lift) as `show` prints it: the lift with its interval, then its
    breakdown, one line per field or expected answer."""
    text = (f"lift: best {row['best_score']:.3f} vs {row['baseline']} {row['baseline_score']:.3f}: "
            f"{row['lift']:+.3f} (95% interval {row['ci_low']:+.3f} to {row['ci_high']:+.3f}, "
            f"{row['n_items']} test items)")
    groups = row.get("breakdown") or {}
    if not groups:
        return text
    by_field = row.get("breakdown_by") == "field"
    what = "field (share of test items with it right)" if by_field else "expected answer (test score)"
    width = max(len(name) for name in groups)
    return "\n".join([text, f"by {what}: best / seed / no skill"] + [
        f"  {name:<{width}}  {g['best']:.3f} / {g['seed']:.3f} / {g['none']:.3f}  ({int(g['n'])} items)"
        for name, g in groups.items()])

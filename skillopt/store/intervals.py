"""The store's side of sampled scores (samples_per_item > 1): per-item samples and spread,
and the 95% intervals of the train and test scores.

The trainer's events carry a batch's mean, not its spread; the spread is in the batch's
rollout rows, written just before (each item's samples), so the interval of a step's train
score and of a test score is computed here from those rows: the normal approximation of
spread.py (mean ± Z * sqrt(sum of the item means' variances) / N). Gate intervals come
with the gate's decision (validation.py knows both skills' samples). Every value is NULL
for a score taken once per item, and nothing extra is read for such a run but one indexed
query that finds no sampled rows.
"""
from __future__ import annotations

import json
import sqlite3
from typing import Callable

from .. import spread
from ..gate import metric_value
from ..tasks.task import Trajectory

Interval = tuple[float | None, float | None]
NONE: Interval = (None, None)


def sample_columns(t: Trajectory) -> tuple[int | None, float | None, float | None, str | None]:
    """(n_samples, hard_sd, soft_sd, samples_json) of a rollout row; NULLs for one scoring."""
    samples = t.evaluation.samples
    if not samples:
        return None, None, None, None
    return (len(samples), spread.sd([h for h, _ in samples]), spread.sd([s for _, s in samples]),
            json.dumps([list(p) for p in samples]))


def ci(pair: tuple[float, float] | None) -> Interval:
    return (pair[0], pair[1]) if pair is not None else NONE


def batch_interval(c: sqlite3.Connection, run_id: str, step: int, purpose: str, mean: float,
                   value: Callable[[float, float], float]) -> Interval:
    """The 95% interval of `mean`, the mean of `value(hard, soft)` over a batch's scored items,
    from the samples on its stored rows (primary-key lookup); NONE when none were sampled."""
    rows = c.execute("SELECT samples_json FROM rollouts WHERE run_id = ? AND step = ? AND purpose = ? "
                     "AND error = '' AND samples_json IS NOT NULL", (run_id, step, purpose)).fetchall()
    if not rows:
        return NONE
    variances = [spread.mean_variance([value(h, s) for h, s in json.loads(r[0])]) for r in rows]
    return spread.interval(mean, variances, len(rows))


def train_interval(c: sqlite3.Connection, run_id: str, step: int, train_hard: float) -> Interval:
    """The interval of a step's train score (train_hard: the mean hard score of its batch)."""
    return batch_interval(c, run_id, step, "train", train_hard, lambda h, s: h)


def interval_of_test(c: sqlite3.Connection, run_id: str, step: int, which: str, score: float,
                  config_json: str) -> Interval:
    """The interval of a test score (the gate metric's mean); the run's config says which metric."""
    config = json.loads(config_json or "{}")
    metric, weight = config.get("gate_metric", "hard"), config.get("gate_mixed_weight", 0.5)
    return batch_interval(c, run_id, step, f"test_{which}", score, lambda h, s: metric_value(h, s, metric, weight))

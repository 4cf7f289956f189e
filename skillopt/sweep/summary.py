"""What a sweep found, per grid cell: mean ± sd over seeds of the best selection score and of the
best skill's test score, with the calls and cost each cell spent (pure: rows in, numbers out).

Used by `sweep show` and the Sweeps page, so both report the same numbers.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..vocabulary import TRIAL_DONE

PREFERRED_AXES = ("learning_rate", "lr_scheduler")  # the design's grid: the heatmap's x and y when present


@dataclass
class Cell:
    x: Any
    y: Any
    trials: int = 0
    finished: int = 0
    selection: list[float] = field(default_factory=list)
    test: list[float] = field(default_factory=list)
    calls: int = 0
    cost_usd: float = 0.0
    run_ids: list[str] = field(default_factory=list)

    @property
    def selection_mean_sd(self) -> tuple[float | None, float | None]:
        return mean_sd(self.selection)

    @property
    def test_mean_sd(self) -> tuple[float | None, float | None]:
        return mean_sd(self.test)


def mean_sd(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (None with fewer than two values)."""
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def point(trial: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(trial["point_json"] or "{}")


def heatmap_axes(axis_keys: Sequence[str]) -> tuple[str | None, str | None]:
    """(x, y) axis keys: learning_rate × lr_scheduler when both are axes, else the first two."""
    keys = list(axis_keys)
    if all(k in keys for k in PREFERRED_AXES):
        return PREFERRED_AXES
    keys += [None, None]
    return keys[0], keys[1]


def cells(trials: Sequence[Mapping[str, Any]], x_key: str | None, y_key: str | None) -> list[Cell]:
    """One cell per (x, y) value pair, in first-seen order; other axes and seeds pool inside it."""
    out: dict[tuple, Cell] = {}
    for t in trials:
        p = point(t)
        x, y = p.get(x_key) if x_key else "", p.get(y_key) if y_key else ""
        cell = out.setdefault((json.dumps(x), json.dumps(y)), Cell(x, y))
        cell.trials += 1
        cell.run_ids.append(t["run_id"])
        cell.calls += int(t.get("calls") or 0)
        cell.cost_usd += float(t.get("cost_usd") or 0.0)
        if t.get("status") in TRIAL_DONE:
            cell.finished += 1
        if t.get("best_score") is not None:
            cell.selection.append(float(t["best_score"]))
        if t.get("best_test") is not None:
            cell.test.append(float(t["best_test"]))
    return list(out.values())


def best_trial(trials: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The trial with the highest best selection score (the score a sweep may choose by; the test
    score breaks ties only), among those that scored."""
    scored = [t for t in trials if t.get("best_score") is not None]
    if not scored:
        return None
    return max(scored, key=lambda t: (t["best_score"], t.get("best_test") or 0.0, -t["idx"]))


def fmt(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "—"
    return f"{mean:.3f}" + (f" ± {sd:.3f}" if sd is not None else "")


def progress(trials: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in trials:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    return counts

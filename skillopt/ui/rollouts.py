"""The Rollouts page's views: the filtered per-item table of one step and split, its
summary, and the flip-matrix heatmap of the selection split.

Builders take rows as the Reader returns them and give back rows, text and plotly
figures; the page only reads, calls and lays them out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from skillopt.ui.flips import FlipMatrix

Row = Mapping[str, Any]

ALL = "(all purposes)"
PURPOSE_HELP = {
    "train": "the incumbent on the step's train batch", "gate_current": "the incumbent on the selection split",
    "gate_candidate": "the step's candidate on the selection split",
    "slow_update_candidate": "the slow-update candidate on the selection split",
    "slow_prev": "the previous epoch's skill on the slow-update sample",
    "slow_cur": "the current skill on the slow-update sample", "test_seed": "the seed skill on the test split",
    "test_best": "the best skill on the test split", "test_final": "the final skill on the test split"}
MAX_MATRIX_STEPS = 80  # wider heatmaps stop being readable; a range slider picks the window
GRIDS = {"flips": "flips (candidate − incumbent)", "incumbent": "incumbent after the step",
         "candidate": "candidate of the step"}
RED, GREY, GREEN = "#ef553b", "#f2f2f2", "#00cc96"


@dataclass(frozen=True)
class Filters:
    failures_only: bool = False  # hard < 1
    changed_only: bool = False  # differs from the item's previous result on the same split and purpose
    errors_only: bool = False  # the model call failed


def short(text: Any, n: int = 160) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[:n - 1] + "…"


def purpose_label(purpose: str) -> str:
    return purpose if purpose == ALL else f"{purpose} — {PURPOSE_HELP.get(purpose, '')}"


def purpose_options(purposes: Sequence[str]) -> list[str]:
    return [ALL, *purposes] if len(purposes) > 1 else list(purposes)


def table(rows: Sequence[Row], previous: Mapping[tuple[str, str], Row], filters: Filters) -> list[dict[str, Any]]:
    """The rows that pass the filters, each with its previous result (`previous` is keyed by
    (purpose, item id)) and long texts shortened."""
    out = []
    for r in rows:
        prev = previous.get((r["purpose"], r["item_id"]))
        changed = prev is not None and (prev["hard"] != r["hard"] or prev["soft"] != r["soft"])
        if (filters.failures_only and r["hard"] >= 1) or (filters.changed_only and not changed) \
                or (filters.errors_only and not r["error"]):
            continue
        out.append({
            "item": r["item_id"], "purpose": r["purpose"], "hard": r["hard"], "soft": r["soft"],
            "previous hard": prev["hard"] if prev else None, "previous step": prev["step"] if prev else None,
            "changed": changed, "input": short(r["input_json"]), "output": short(r["output"]),
            "expected": short(r["expected"]), "feedback": short(r["feedback"]), "error": r["error"] or "",
            "cached": bool(r["cached"])})
    return out


def summary(rows: Sequence[Row], step: int, split: str, shown: int) -> str:
    n_fail = sum(r["hard"] < 1 for r in rows)
    mean_hard = sum(r["hard"] for r in rows) / len(rows) if rows else 0.0
    return (f"{len(rows)} rollouts at step {step} on {split} · mean hard {mean_hard:.3f} · {n_fail} failures · "
            f"{sum(bool(r['error']) for r in rows)} errors · showing {shown}")


def row_key(purpose: str, item_id: str) -> str:
    """How the trajectory picker names a rollout."""
    return f"{purpose} · {item_id}"


def matrix_figure(m: FlipMatrix, grid: str, lo: int, hi: int) -> go.Figure:
    """The heatmap of one grid of the matrix, steps lo..hi-1 (column indexes)."""
    z = [list(row[lo:hi]) for row in getattr(m, grid)]
    if grid == "flips":
        scale, zmin, zmax = [[0, RED], [0.5, GREY], [1, GREEN]], -1, 1
    else:
        scale, zmin, zmax = [[0, RED], [1, GREEN]], 0, 1
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(s) for s in m.steps[lo:hi]], y=list(m.items), colorscale=scale, zmin=zmin, zmax=zmax,
        xgap=1, ygap=1, hoverongaps=False,
        hovertemplate="step %{x}<br>item %{y}<br>value %{z}<extra></extra>"))
    fig.update_layout(height=max(300, min(1200, 12 * len(m.items) + 120)),
                      margin={"l": 10, "r": 10, "t": 10, "b": 10}, xaxis_title="step", yaxis_title="selection item",
                      xaxis={"type": "category"}, yaxis={"type": "category", "autorange": "reversed"})
    return fig


def flips_caption(m: FlipMatrix, counts: Sequence[tuple[int, int, int]]) -> str:
    moved = [(s, fixed, broken) for s, fixed, broken in counts if fixed or broken]
    return (f"{len(m.items)} selection items × {len(m.steps)} steps · per step (fixed/broken): "
            + (", ".join(f"{s}: +{fixed}/−{broken}" for s, fixed, broken in moved) or "no flips"))

"""The logic behind the Sweeps page: the grid builder's arguments, the trial table, the heatmaps
(learning_rate × lr_scheduler, mean ± sd over seeds, calls and cost per cell) and the parallel
coordinates of a grid with more than two axes.

No streamlit here: builders take rows as the Reader returns them and give back the command
line of a sweep, pandas frames or plotly figures, so the page stays a thin layout and the
numbers are testable.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt.sweep import summary
from skillopt.sweep.grid import SHORT
from skillopt.vocabulary import TRIAL_DONE

LEARNING_RATES = (1, 2, 4, 8, 16, 32)
DEFAULT_LEARNING_RATES = (2, 4, 8, 16)
MODEL_CHOICES = {  # label -> (target, optimizer); "" = typed by the person
    "Simulated (sim/target, sim/optimizer)": ("sim/target", "sim/optimizer"),
    "Embedded local model (local/qwen2.5-coder-1.5b)": ("local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b"),
    "Other (any litellm model string)": ("", ""),
}
DONE = TRIAL_DONE  # the trials a resume would not run again


@dataclass
class SweepForm:
    """What the person chose on the grid builder."""
    task: str
    target_model: str
    optimizer_model: str
    key_env: str = ""  # NAME of the environment variable holding the key, never the key
    learning_rates: Sequence[int] = DEFAULT_LEARNING_RATES
    schedulers: Sequence[str] = ()
    extra_axes: str = ""  # one "key=v1,v2" per line
    settings: str = ""  # one "key=value" per line, for every trial
    seeds: int = 1
    workers: int = 0  # 0 = the default (1 on the embedded model)
    backend: str = "local"
    ray_address: str = ""
    max_calls: int = 0
    max_cost_usd: float = 0.0
    name: str = ""
    extra: list[str] = field(default_factory=list)

    def args(self) -> list[str]:
        """The `sweep start` arguments this form stands for."""
        out = ["start", "--task", self.task, "--seeds", str(self.seeds), "--backend", self.backend]
        models = {"target_model": self.target_model, "optimizer_model": self.optimizer_model}
        if self.key_env:
            models |= {"target_api_key_env": self.key_env, "optimizer_api_key_env": self.key_env}
        for key, value in models.items():
            out += ["--set", f"{key}={value}"]
        if self.learning_rates:
            out += ["--grid", "learning_rate=" + ",".join(str(v) for v in self.learning_rates)]
        if self.schedulers:
            out += ["--grid", "lr_scheduler=" + ",".join(self.schedulers)]
        out += [a for line in lines(self.extra_axes) for a in ("--grid", line)]
        out += [a for line in lines(self.settings) for a in ("--set", line)]
        for flag, value in (("--workers", self.workers), ("--max-calls", self.max_calls),
                            ("--max-cost-usd", self.max_cost_usd)):
            if value:
                out += [flag, str(value)]
        if self.ray_address and self.backend == "ray":
            out += ["--ray-address", self.ray_address]
        if self.name:
            out += ["--name", self.name]
        return out

    def namespace(self) -> argparse.Namespace:
        """The parsed form of args(), for checking the sweep before it is launched."""
        from skillopt.cli import parser

        return parser().parse_args(["sweep", *self.args()])

    def n_trials(self) -> int:
        sizes = [len(self.learning_rates) or 1, len(self.schedulers) or 1]
        sizes += [len(line.split("=", 1)[1].split(",")) for line in lines(self.extra_axes) if "=" in line]
        return math.prod(sizes) * max(1, self.seeds)


def lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip() and not line.strip().startswith("#")]


# ---- the trial table -------------------------------------------------------------------------

def point_label(trial: Mapping[str, Any]) -> str:
    return " ".join(f"{SHORT.get(k, k)}={v}" for k, v in summary.point(trial).items())


def trials_frame(trials: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [{
        "trial": t["idx"], "grid point": point_label(t), "seed": t["seed"], "status": t["status"],
        "step": f"{t['step'] or 0}/{t['total_steps'] or 0}" if t.get("run_status") else "—",
        "best selection": t.get("best_score"), "test (best skill)": t.get("best_test"),
        "calls": int(t.get("calls") or 0), "cost $": float(t.get("cost_usd") or 0.0),
        "why": t.get("reason") or "", "open": f"Monitor?run={t['run_id']}" if t.get("run_status") else None,
    } for t in trials]
    return pd.DataFrame(rows, columns=["trial", "grid point", "seed", "status", "step", "best selection",
                                       "test (best skill)", "calls", "cost $", "why", "open"])


def counts_line(trials: Sequence[Mapping[str, Any]]) -> str:
    counts = summary.progress(trials)
    done = sum(counts.get(s, 0) for s in DONE)
    parts = [f"{n} {s}" for s, n in sorted(counts.items())]
    return f"{done} of {len(trials)} trials finished · " + ", ".join(parts)


# ---- heatmaps and parallel coordinates ---------------------------------------------------------

def _order(values: Sequence[Any], axis: Sequence[Any] | None) -> list[Any]:
    """The cell values in the grid's own order (as the sweep listed them)."""
    seen = list(dict.fromkeys(values))
    if axis:
        return [v for v in axis if v in seen] + [v for v in seen if v not in axis]
    return seen


def heatmap(cells: Sequence[summary.Cell], x_key: str | None, y_key: str | None, metric: str,
            axes: Mapping[str, Sequence[Any]] | None = None) -> go.Figure:
    """One heatmap of `metric` ("selection" or "test"): colour = mean over seeds, text = mean ± sd
    and how many trials of the cell are finished. An invisible marker on each cell carries the
    hover (calls and cost of the cell) and makes the cell clickable (see cell_of)."""
    axes = axes or {}
    xs = _order([c.x for c in cells], axes.get(x_key))
    ys = _order([c.y for c in cells], axes.get(y_key))
    by = {(json.dumps(c.x), json.dumps(c.y)): c for c in cells}
    z, text = [], []
    for y in ys:
        row = [by.get((json.dumps(x), json.dumps(y))) for x in xs]
        stats = [(c.selection_mean_sd if metric == "selection" else c.test_mean_sd) if c else (None, None)
                 for c in row]
        z.append([mean for mean, _ in stats])
        text.append(["" if c is None else f"{summary.fmt(*ms)}<br>{c.finished}/{c.trials} done"
                     for c, ms in zip(row, stats)])
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(v) for v in xs], y=[str(v) for v in ys], text=text, texttemplate="%{text}", hoverinfo="skip",
        colorscale="Viridis", zmin=0, zmax=1, xgap=2, ygap=2, colorbar={"title": {"text": "mean"}}))
    fig.add_trace(go.Scatter(
        x=[str(c.x) for c in cells], y=[str(c.y) for c in cells], mode="markers", showlegend=False,
        marker={"size": 48, "symbol": "square", "opacity": 0.01, "color": "white"},
        customdata=[[c.calls, c.cost_usd, len(c.run_ids)] for c in cells],
        hovertemplate=f"{x_key}=%{{x}}<br>{y_key}=%{{y}}<br>calls %{{customdata[0]:,}}<br>cost $%{{customdata[1]:.4f}}"
                      "<br>%{customdata[2]} trial(s): click to open<extra></extra>"))
    fig.update_xaxes(type="category", title=x_key or "", categoryorder="array", categoryarray=[str(v) for v in xs])
    fig.update_yaxes(type="category", title=y_key or "", categoryorder="array", categoryarray=[str(v) for v in ys])
    fig.update_layout(height=160 + 60 * len(ys), margin={"l": 10, "r": 10, "t": 30, "b": 10}, clickmode="event+select",
                      dragmode=False)
    return fig


def cell_of(cells: Sequence[summary.Cell], selection: Mapping[str, Any] | None) -> summary.Cell | None:
    """The cell a click on a heatmap picked (the marker trace's point), or None."""
    points = [p for p in ((selection or {}).get("points") or []) if p.get("curve_number") == 1]
    if not points:
        return None
    index = points[0].get("point_index", points[0].get("point_number"))
    return cells[index] if index is not None and 0 <= index < len(cells) else None


def parallel(trials: Sequence[Mapping[str, Any]], axis_keys: Sequence[str]) -> go.Figure:
    """Parallel coordinates: one line per scored trial across every axis, then its scores."""
    scored = [t for t in trials if t.get("best_score") is not None]
    dims = []
    for key in axis_keys:
        values = [summary.point(t).get(key) for t in scored]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            dims.append({"label": key, "values": values})
        else:
            labels = list(dict.fromkeys(str(v) for v in values))
            dims.append({"label": key, "values": [labels.index(str(v)) for v in values],
                         "tickvals": list(range(len(labels))), "ticktext": labels})
    for label, col in (("best selection", "best_score"), ("test", "best_test")):
        dims.append({"label": label, "values": [t.get(col) if t.get(col) is not None else float("nan")
                                               for t in scored], "range": [0, 1]})
    color = [t.get("best_test") if t.get("best_test") is not None else 0.0 for t in scored]
    fig = go.Figure(go.Parcoords(dimensions=dims, line={"color": color, "colorscale": "Viridis", "cmin": 0,
                                                        "cmax": 1, "showscale": True}))
    fig.update_layout(height=380, margin={"l": 60, "r": 40, "t": 50, "b": 20})
    return fig


def transfer_overrides(sweep: Mapping[str, Any], trial: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a new run that starts from the best trial's skill: the sweep's settings and
    the trial's grid point (and seed); no budget caps (those were the sweep's shares)."""
    point = summary.point(trial)
    return {**sweep["config"], **point, **({} if "seed" in point else {"seed": trial["seed"]})}

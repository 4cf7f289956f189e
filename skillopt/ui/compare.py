"""The Compare runs page's views: which runs to open, their selection curves, their
parameters side by side, and what each cost (calls, tokens, time, cache hits).

Builders take rows as the Reader returns them and give back pandas frames and plotly
figures; no streamlit here.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt.ui.monitor import human_duration, incumbent_after, run_seconds, total_calls
from skillopt.ui.plotting import line_mode

# One colour and one dash per compared run, in order: distinct in both themes and in grey print.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def default_runs(ids: Sequence[str], from_url: Sequence[str], current: str | None) -> list[str]:
    """The runs to compare when opened: those the link names, else the run being looked at
    (from ?run= or the session) with the newest other run."""
    if from_url:
        return list(from_url)
    first = current if current in ids else (ids[0] if ids else None)
    if first is None:
        return []
    other = next((i for i in ids if i != first), None)
    return [first] + ([other] if other else [])


def compare_label(run: Mapping[str, Any]) -> str:
    """The run's name and the end of its id (names repeat: demo runs share theirs)."""
    return f"{run['name'] or run['id']} ({run['id'][-6:]})"


def selection_curve(steps: Sequence[Mapping[str, Any]], seed_score: float | None) -> tuple[list[int], list]:
    xs = ([0] if seed_score is not None else []) + [s["step"] for s in steps]
    ys = ([seed_score] if seed_score is not None else []) + [incumbent_after(s) for s in steps]
    return xs, ys


def compare_chart(curves: Mapping[str, tuple[list[int], list]]) -> go.Figure:
    """Each run's curve; a marker on each step only on short runs (skillopt.ui.plotting)."""
    fig = go.Figure()
    for n, (label, (xs, ys)) in enumerate(curves.items()):
        colour, dash = COLOURS[n % len(COLOURS)], DASHES[n % len(DASHES)]
        fig.add_trace(go.Scatter(x=xs, y=ys, name=label, mode=line_mode(len(xs)),
                                 line={"shape": "hv", "color": colour, "dash": dash}, marker={"color": colour}))
    fig.update_layout(xaxis_title="step", yaxis_title="selection score (current skill)", yaxis_range=[-0.02, 1.02],
                      height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def costs_frame(runs: Sequence[Mapping[str, Any]], usages: Sequence[Mapping[str, Any]],
                labels: Sequence[str]) -> pd.DataFrame:
    """What each run spent, side by side: calls by role, tokens, cost, time and cache hits."""
    table: dict[str, list[str]] = {}
    for run, usage, label in zip(runs, usages, labels):
        table[label] = [
            f"{total_calls(usage):,}", f"{int(usage.get('target_calls', 0)):,}",
            f"{int(usage.get('optimizer_calls', 0)):,}", f"{int(usage.get('judge_calls', 0)):,}",
            f"{int(usage.get('prompt_tokens', 0)):,}", f"{int(usage.get('completion_tokens', 0)):,}",
            f"${float(usage.get('cost_usd', 0)):.4f}", human_duration(run_seconds(run)),
            f"{int(usage.get('cache_hits', 0)):,}", f"{int(usage.get('eval_cache_hits', 0)):,}",
            f"{run.get('step') or 0} / {run.get('total_steps') or 0}"]
    index = ["model calls (uncached)", "target calls", "optimizer calls", "judge calls", "prompt tokens",
             "completion tokens", "cost", "wall time", "response-cache hits", "evaluation-cache hits", "steps"]
    return pd.DataFrame(table, index=index)


def params_frame(runs: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Keys × runs (config plus task and results); returns the frame and the keys that differ."""
    table: dict[str, dict[str, Any]] = {}
    for run, label in zip(runs, labels):
        config = run.get("config") or json.loads(run.get("config_json") or "{}")
        column = {"task": run.get("task"), "status": run.get("status"), "simulated": bool(run.get("simulated")),
                  "best selection score": run.get("best_score"), "test: no skill": run.get("none_test"),
                  "test: seed": run.get("seed_test"), "test: best": run.get("best_test"),
                  "test: final": run.get("final_test")}
        column |= {k: config[k] for k in sorted(config)}
        table[label] = column
    keys = list(dict.fromkeys(k for column in table.values() for k in column))
    differing = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True, default=str)
                                         for c in table.values()}) > 1]
    frame = pd.DataFrame({label: [_cell(column.get(k)) for k in keys] for label, column in table.items()},
                         index=keys)
    return frame, differing


def _cell(value: Any) -> str:
    """One display type per column (strings), so mixed config values never confuse the table."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{round(value, 4):g}"
    return str(value)

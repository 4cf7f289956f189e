"""The Rollouts page's views: the filtered per-item table of one step and split (inputs and
outputs as readable text, not escaped JSON), its summary, and the flip-matrix heatmap of
the selection split.

Builders take rows as the Reader returns them and give back rows, text and plotly
figures; the page only reads, calls and lays them out.
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from skillopt.store import pins
from skillopt.store.writer import Store
from skillopt.ui.flips import FlipMatrix
from skillopt.ui.labels import PURPOSE_LABELS

Row = Mapping[str, Any]

ALL = "(all purposes)"
MAX_MATRIX_STEPS = 80  # wider heatmaps stop being readable; a range slider picks the window
GRIDS = {"flips": "flips (candidate − incumbent)", "incumbent": "incumbent after the step",
         "candidate": "candidate of the step"}
RED, GREY, GREEN = "#ef553b", "#f2f2f2", "#00cc96"


@dataclass(frozen=True)
class Filters:
    failures_only: bool = False  # hard < 1
    changed_only: bool = False  # differs from the item's previous result on the same split and purpose
    errors_only: bool = False  # the model call failed
    search: str = ""  # text the item id, input, output, expected answer or feedback contains (any case)


def short(text: Any, n: int = 160) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[:n - 1] + "…"


def readable(text: str | None) -> str:
    """A stored input or output as a person reads it: a JSON object becomes one "field:
    value" line per field, with its line breaks as real line breaks; other text is kept."""
    text = text or ""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                         for k, v in data.items())
    return data if isinstance(data, str) else text


def one_line(text: str | None, n: int = 160) -> str:
    """A table cell's preview: the readable text on one line."""
    return short(" · ".join(line.strip() for line in readable(text).splitlines() if line.strip()), n)


def purpose_label(purpose: str) -> str:
    return purpose if purpose == ALL else PURPOSE_LABELS.get(purpose, purpose.replace("_", " "))


def purpose_options(purposes: Sequence[str]) -> list[str]:
    return [ALL, *purposes] if len(purposes) > 1 else list(purposes)


def _matches(r: Row, needle: str) -> bool:
    haystack = (r["item_id"], readable(r["input_json"]), r["output"], r["expected"], r["feedback"])
    return any(needle in str(x or "").lower() for x in haystack)


def table(rows: Sequence[Row], previous: Mapping[tuple[str, str], Row], filters: Filters) -> list[dict[str, Any]]:
    """The rows that pass the filters, each with its previous result (`previous` is keyed by
    (purpose, item id)) and long texts shown on one readable line."""
    out = []
    needle = filters.search.strip().lower()
    for r in rows:
        prev = previous.get((r["purpose"], r["item_id"]))
        changed = prev is not None and (prev["hard"] != r["hard"] or prev["soft"] != r["soft"])
        if (filters.failures_only and r["hard"] >= 1) or (filters.changed_only and not changed) \
                or (filters.errors_only and not r["error"]) or (needle and not _matches(r, needle)):
            continue
        out.append({
            "item": r["item_id"], "purpose": purpose_label(r["purpose"]), "hard": r["hard"], "soft": r["soft"],
            "previous hard": prev["hard"] if prev else None, "previous step": prev["step"] if prev else None,
            "changed": changed, "input": one_line(r["input_json"]), "output": one_line(r["output"]),
            "expected": one_line(r["expected"]), "feedback": short(r["feedback"]), "error": r["error"] or "",
            "cached": bool(r["cached"])})
    return out


def summary(rows: Sequence[Row], step: int, split: str, shown: int) -> str:
    n_fail = sum(r["hard"] < 1 for r in rows)
    mean_hard = sum(r["hard"] for r in rows) / len(rows) if rows else 0.0
    return (f"{len(rows)} rollouts at step {step} on {split} · mean hard {mean_hard:.3f} · {n_fail} failures · "
            f"{sum(bool(r['error']) for r in rows)} errors · showing {shown}")


def row_key(purpose: str, item_id: str) -> str:
    """How the trajectory picker names a rollout."""
    return f"{purpose_label(purpose)} · {item_id}"


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


# ---- pinned items (control rows of the task, read by `python -m skillopt check` as pinned.txt) ----
PIN_HELP = ("A pinned item must keep passing: `python -m skillopt check` fails when it does not. Pins belong to "
            "the task; download pinned.txt into the task folder so CI checks them too.")


def pinned_ids(reader: Any, task: str) -> list[str]:
    """The task's pins, or none while the store has no pins table yet (read-only readers cannot migrate)."""
    if reader is None:
        return []
    try:
        return pins.pinned(reader, task)
    except sqlite3.OperationalError:
        return []


def set_pins(db: str | os.PathLike, task: str, add: Sequence[str] = (), remove: Sequence[str] = ()) -> None:
    """Pin and unpin items of a task: control rows, written like approval decisions."""
    store = Store(db)
    try:
        pins.pin(store, task, add)
        pins.unpin(store, task, remove)
    finally:
        store.close()


def pins_caption(task: str, n: int) -> str:
    return (f"{n} pinned item(s) of task {task}. Save pinned.txt in the task folder: "
            f"`python -m skillopt check --task {task} --skill best_skill.md` then fails when any of them fails.")

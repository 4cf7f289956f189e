"""The test split, item by item: for choice tasks, which label the best (or seed) skill
answered for each expected label (a confusion table), and each test item under the seed
and the best skill side by side (fixed, broken, unchanged).

Builders take rollout rows as the Reader returns them (with the item's expected answer)
and give back pandas frames and plotly figures; no streamlit here.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt.tasks.answers import clean_output
from skillopt.tasks.evaluators import Choice

Row = Mapping[str, Any]
NO_LABEL = "(no label)"  # the answer named no label, or more than one
MAX_LABELS = 30  # beyond this a confusion table is unreadable


def choice_labels(task_path: str | None) -> tuple[str, ...] | None:
    """The labels of a task whose evaluator is `choice`, from its task.toml; None otherwise."""
    if not task_path:
        return None
    try:
        data = tomllib.loads((Path(task_path) / "task.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    evaluator = data.get("evaluator") or {}
    labels = evaluator.get("labels")
    if evaluator.get("type") != "choice" or not isinstance(labels, list) or not 2 <= len(labels) <= MAX_LABELS:
        return None
    return tuple(str(label) for label in labels)


def answer_of(output: str | None, chooser: Choice) -> str:
    """The label an output chose, as the choice evaluator reads it."""
    chosen, _ = chooser.match(clean_output(output or ""))
    return chosen or NO_LABEL


def chooser_for(labels: Sequence[str]) -> Choice:
    return Choice("", tuple(labels), True)


def confusion(rows: Sequence[Row], labels: Sequence[str]) -> pd.DataFrame:
    """Expected label (rows) × answered label (columns): how many test items of each."""
    chooser = chooser_for(labels)
    columns = [*labels, NO_LABEL]
    table = pd.DataFrame(0, index=list(labels), columns=columns)
    for r in rows:
        if r.get("error"):
            continue  # an errored item has no answer; it is counted apart, never as a label
        expected = _label(r.get("expected"), chooser)
        if expected in table.index:
            table.loc[expected, answer_of(r.get("output"), chooser)] += 1
    return table


def _label(expected: Any, chooser: Choice) -> str:
    chosen, _ = chooser.match(str(expected or ""))
    return chosen or str(expected)


def confusion_figure(table: pd.DataFrame, skill: str) -> go.Figure:
    fig = go.Figure(go.Heatmap(
        z=table.values.tolist(), x=list(table.columns), y=list(table.index), colorscale="Blues",
        text=table.values.tolist(), texttemplate="%{text}", hovertemplate=(
            "expected %{y}<br>answered %{x}<br>%{z} item(s)<extra></extra>"), showscale=False))
    fig.update_layout(height=max(280, 34 * len(table.index) + 120), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title=f"answered ({skill} skill)", yaxis_title="expected",
                      xaxis={"type": "category", "side": "top"}, yaxis={"type": "category", "autorange": "reversed"})
    return fig


def per_label(table: pd.DataFrame) -> pd.DataFrame:
    """Per expected label: items, right, and accuracy."""
    right = [int(table.loc[label, label]) if label in table.columns else 0 for label in table.index]
    total = [int(table.loc[label].sum()) for label in table.index]
    return pd.DataFrame({"label": list(table.index), "items": total, "right": right,
                         "accuracy": [r / t if t else None for r, t in zip(right, total)]})


def seed_vs_best(seed: Sequence[Row], best: Sequence[Row], labels: Sequence[str] | None) -> pd.DataFrame:
    """Each test item under the seed and the best skill: their answers and what changed."""
    chooser = chooser_for(labels) if labels else None
    seed_of = {r["item_id"]: r for r in seed}
    rows = []
    for b in best:
        s = seed_of.get(b["item_id"])
        was, now = (s or {}).get("hard"), b.get("hard")
        rows.append({"item": b["item_id"], "expected": b.get("expected") or "",
                     "seed answer": _answer(s, chooser), "best answer": _answer(b, chooser),
                     "seed": was, "best": now, "change": change(was, now)})
    order = {"fixed": 0, "broken": 1, "still wrong": 2, "still right": 3, "": 4}
    return pd.DataFrame(rows).sort_values("change", key=lambda c: c.map(order), kind="stable") if rows \
        else pd.DataFrame(rows)


def _answer(r: Row | None, chooser: Choice | None) -> str:
    if r is None:
        return ""
    if r.get("error"):
        return "(model error)"
    return answer_of(r.get("output"), chooser) if chooser else clean_output(r.get("output") or "")[:200]


def change(was: float | None, now: float | None) -> str:
    if was is None or now is None:
        return ""
    if now > was:
        return "fixed"
    if now < was:
        return "broken"
    return "still right" if now >= 1 else "still wrong"


def change_counts(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "no test items"
    counts = frame["change"].value_counts()
    return " · ".join(f"{counts.get(k, 0)} {k}" for k in ("fixed", "broken", "still wrong", "still right"))

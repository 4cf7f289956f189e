"""The Approvals page's logic: recording a person's decisions, the trajectories behind an
edit, an edit's header, and the decisions so far.

No streamlit here; decisions are control rows written through Store.decide, the only
write the page makes.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from skillopt.patch import OPS, SOURCES
from skillopt.store.writer import Store

Row = Mapping[str, Any]

# Each approval word's icon (markdown) next to the edit.
DECISION_ICONS = {"approved": ":green[:material/check_circle:]", "edited": ":green[:material/edit:]",
                  "rejected": ":red[:material/cancel:]", "pending": ":orange[:material/hourglass_top:]"}


def decide(db: str | os.PathLike, run_id: str, step: int, decisions: Sequence[tuple[int, str, str | None]]) -> None:
    """Record (edit index, approval, edited content) for edits of the waiting step."""
    store = Store(db)
    try:
        for idx, status, content in decisions:
            store.decide(run_id, step, idx, status, content)
    finally:
        store.close()


def motivating_trajectories(reader: Any, run_id: str, step: int, edit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The step's train rollouts that the reflection behind this edit read.

    Reflections record which items each minibatch saw; an edit from failures was motivated
    by the failure minibatches (successes likewise). When the edit names its minibatches,
    only those are shown.
    """
    kind = "success" if edit.get("source") == "success" else "failure"
    wanted = set(edit.get("minibatches") or [])
    rollouts = {t["item_id"]: t for t in reader.rollouts(run_id, step, "train", "train")}
    rows = []
    for mb in reader.reflections(run_id, step):
        if mb["kind"] != kind or (wanted and mb["idx"] not in wanted):
            continue
        for item_id in json.loads(mb["item_ids"] or "[]"):
            t = rollouts.get(item_id)
            if t is None:
                continue
            rows.append({"minibatch": mb["idx"], "item": item_id, "input": t["input_json"],
                         "expected": t["expected"], "output": t["output"], "hard": t["hard"],
                         "feedback": t["feedback"]})
    return rows


def edit_header(idx: int, edit: Mapping[str, Any]) -> str:
    """"Edit n: `op` · source · support" in markdown. Only fixed vocabulary goes through
    markdown: an op or source that is not one of the known words is left out."""
    op = edit["op"] if edit["op"] in OPS else "edit"
    source = edit.get("source") if edit.get("source") in SOURCES else ""
    return f"**Edit {idx + 1}: `{op}`** · source {source} · support {int(edit.get('support') or 1)}"


def history_table(history: Sequence[Row]) -> list[dict[str, Any]]:
    """One row per step: how many of its edits got each decision."""
    table: dict[int, dict[str, Any]] = {}
    for h in history:
        table.setdefault(h["step"], {"step": h["step"]})[h["status"]] = h["n"]
    return list(table.values())

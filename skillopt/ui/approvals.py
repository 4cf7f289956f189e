"""The Approvals page's logic: recording (and undoing) a person's decisions, the
trajectories behind an edit, an edit's header, and the decisions so far with what the gate
then made of them.

No streamlit here; decisions are control rows written through Store.decide and
Store.undo_decision, the only writes the page makes.
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from skillopt.patch import OPS, SOURCES
from skillopt.store.writer import Store
from skillopt.ui.rollouts import one_line

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


def undo(db: str | os.PathLike, run_id: str, step: int, idx: int) -> bool:
    """Make a decision pending again; possible while another edit of the step still waits
    (the last decision lets the trainer go on to the gate). Returns whether it was undone."""
    store = Store(db)
    try:
        return store.undo_decision(run_id, step, idx)
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
            rows.append({"minibatch": mb["idx"], "item": item_id, "input": one_line(t["input_json"]),
                         "expected": t["expected"], "output": t["output"], "hard": t["hard"],
                         "feedback": t["feedback"]})
    return rows


def edit_header(number: int, edit: Mapping[str, Any]) -> str:
    """"Edit n: `op` · source · support" in markdown, n the edit's number on every page. Only
    fixed vocabulary goes through markdown: an op or source that is not one of the known
    words is left out."""
    op = edit["op"] if edit["op"] in OPS else "edit"
    source = edit.get("source") if edit.get("source") in SOURCES else ""
    return f"**Edit {number}: `{op}`** · source {source} · support {int(edit.get('support') or 1)}"


def history_table(history: Sequence[Row], steps: Sequence[Row] = ()) -> list[dict[str, Any]]:
    """One row per step: how many of its edits got each decision, then what the gate decided."""
    table: dict[int, dict[str, Any]] = {}
    for h in history:
        table.setdefault(h["step"], {"step": h["step"]})[h["status"]] = h["n"]
    by_step = {s["step"]: s for s in steps}
    for step, row in table.items():
        s = by_step.get(step)
        row["gate"] = s["decision"] if s else ("waits for decisions" if row.get("pending") else "gate running")
        row["selection before"] = s["current_score"] if s else None
        row["selection with the edits"] = s["candidate_score"] if s else None
    return list(table.values())


def gate_result(step: int, s: Row | None) -> str:
    """What the gate made of a step's approved edits, in one line."""
    if s is None:
        return f"Step {step}: every edit is decided; the gate is judging the candidate…"
    if s["decision"] == "skip":
        return f"Step {step}: no edit was kept, so nothing was gated (skip)."
    before, after = s["current_score"], s["candidate_score"]
    verdict = {"accept": "accepted", "accept_new_best": "accepted as the new best", "reject": "rejected"}.get(
        s["decision"], s["decision"])
    scores = "" if before is None or after is None else f": selection {before:.3f} → {after:.3f}"
    return f"Step {step}: the gate {verdict} the candidate{scores}."

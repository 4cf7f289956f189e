"""The Slow updates page's views: why a run has none, the per-epoch summary, the item
comparison classes and their tables.

Builders take rows as the Reader returns them and give back pandas frames and text; the
page only reads, calls and lays them out.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import pandas as pd

from skillopt.ui.rollouts import one_line

Row = Mapping[str, Any]

# Comparison classes as the store names them -> (tab label, what it means).
CLASSES = (
    ("improved_json", "Improved", "failed with the previous epoch's skill, pass with the current one"),
    ("regressed_json", "Regressed", "passed with the previous epoch's skill, fail with the current one"),
    ("persistent_json", "Persistent failures", "fail with both skills: what the guidance should address"),
    ("stable_json", "Stable successes", "pass with both skills: what the guidance must not break"),
)


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def class_ids(update: Row, key: str) -> list[str]:
    """The item ids of one comparison class of a slow update."""
    return json.loads(update[key] or "[]")


def none_yet(config: Mapping[str, Any], live: bool, epoch: int | None) -> str:
    """Why a run shows no slow update."""
    epochs = config.get("num_epochs", 0)
    if not config.get("use_slow_update", True):
        return ("The slow update is **off** in this run's config (`use_slow_update = false`): the skill changed "
                "only through the per-step edits.")
    if epochs < 2:
        return (f"This run has {epochs} epoch{'s' * (epochs != 1)}. A slow update compares an epoch's skill with "
                "the previous epoch's, so the first one runs at the end of epoch 2: train for at least 2 epochs "
                "to see guidance here.")
    if live:
        return f"No slow update yet: the first runs at the end of epoch 2 (the run is in epoch {epoch or 1})."
    return "This run recorded no slow update (it ended before the end of epoch 2)."


def settings_caption(updates: Sequence[Row], config: Mapping[str, Any]) -> str:
    return (f"{len(updates)} slow update(s) · {config.get('slow_update_samples', '?')} train items compared per "
            f"epoch · gate on the guidance: {'on' if config.get('slow_update_gate', True) else 'off'} · "
            f"meta skill: {'on' if config.get('use_meta_skill', True) else 'off'}")


def summary_frame(updates: Sequence[Row]) -> pd.DataFrame:
    return pd.DataFrame([{
        "epoch": u["epoch"], "after step": u["step"], "decision": u["decision"] or "—",
        "score before": u["score_before"], "score after": u["score_after"],
        **{label.lower(): len(class_ids(u, key)) for key, label, _ in CLASSES},
        "error": u["error"] or ""} for u in updates])


def tab_label(update: Row) -> str:
    """An epoch's tab: its number and the decision on its guidance."""
    return f"Epoch {update['epoch']} · {update['decision'] or '—'}"


def score_delta(update: Row) -> str | None:
    before, after = update["score_before"], update["score_after"]
    return None if after is None or before is None else f"{after - before:+.3f}"


def item_table(ids: Sequence[str], items: Sequence[Row], prev: Sequence[Row], cur: Sequence[Row]) -> pd.DataFrame:
    """Items of one comparison class with their input, expected answer and both epochs' results."""
    by_id = {i["item_id"]: i for i in items}
    prev_of = {r["item_id"]: r for r in prev}
    cur_of = {r["item_id"]: r for r in cur}
    rows = []
    for item_id in ids:
        item, p, c = by_id.get(item_id, {}), prev_of.get(item_id, {}), cur_of.get(item_id, {})
        rows.append({"item": item_id, "input": one_line(item.get("input_json")), "expected": item.get("expected", ""),
                     "previous hard": p.get("hard"), "current hard": c.get("hard"),
                     "previous output": p.get("output", ""), "current output": c.get("output", ""),
                     "current feedback": c.get("feedback", "")})
    return pd.DataFrame(rows)


def previous_meta_epoch(metas: Mapping[int, Row], epoch: int) -> int | None:
    return max((e for e in metas if e < epoch), default=None)

"""Slow updates: per epoch the guidance and its diff, the item comparison tables, the gate decision, the meta skill."""
from skillopt.ui.common import setup

setup("Slow updates")

import json  # noqa: E402

import pandas as pd  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.ui import diffview  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, show_text, simulated_banner  # noqa: E402

# Comparison classes as the store names them -> (tab label, what it means).
CLASSES = (
    ("improved_json", "Improved", "failed with the previous epoch's skill, pass with the current one"),
    ("regressed_json", "Regressed", "passed with the previous epoch's skill, fail with the current one"),
    ("persistent_json", "Persistent failures", "fail with both skills: what the guidance should address"),
    ("stable_json", "Stable successes", "pass with both skills: what the guidance must not break"),
)


def fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def item_table(run_id: str, step: int, ids: list[str]) -> pd.DataFrame:
    """Items of one comparison class with their input, expected answer and both epochs' results."""
    items = {i["item_id"]: i for i in cached("items_by_ids", run_id, ids) or []}
    prev = {r["item_id"]: r for r in cached("rollouts", run_id, step, "train", "slow_prev") or []}
    cur = {r["item_id"]: r for r in cached("rollouts", run_id, step, "train", "slow_cur") or []}
    rows = []
    for item_id in ids:
        item, p, c = items.get(item_id, {}), prev.get(item_id, {}), cur.get(item_id, {})
        rows.append({"item": item_id, "input": item.get("input_json", ""), "expected": item.get("expected", ""),
                     "previous hard": p.get("hard"), "current hard": c.get("hard"),
                     "previous output": p.get("output", ""), "current output": c.get("output", ""),
                     "current feedback": c.get("feedback", "")})
    return pd.DataFrame(rows)


st.title("Slow updates")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)
detail = cached("run", run_id) or {}
config = detail.get("config", {})
updates = cached("slow_updates", run_id) or []
metas = {m["epoch"]: m for m in cached("meta_skills", run_id) or []}

if not updates:
    epochs = config.get("num_epochs", 0)
    if not config.get("use_slow_update", True):
        st.info("The slow update is **off** in this run's config (`use_slow_update = false`): the skill changed "
                "only through the per-step edits.")
    elif epochs < 2:
        st.info(f"This run has {epochs} epoch{'s' * (epochs != 1)}. A slow update compares an epoch's skill with "
                "the previous epoch's, so the first one runs at the end of epoch 2: train for at least 2 epochs "
                "to see guidance here.")
    elif is_live(run):
        st.info(f"No slow update yet: the first runs at the end of epoch 2 (the run is in epoch "
                f"{run.get('epoch') or 1}).")
    else:
        st.info("This run recorded no slow update (it ended before the end of epoch 2).")
    st.stop()

st.caption(f"{len(updates)} slow update(s) · {config.get('slow_update_samples', '?')} train items compared per "
           f"epoch · gate on the guidance: {'on' if config.get('slow_update_gate', True) else 'off'} · "
           f"meta skill: {'on' if config.get('use_meta_skill', True) else 'off'}")
summary = pd.DataFrame([{
    "epoch": u["epoch"], "after step": u["step"], "decision": u["decision"] or "—",
    "score before": u["score_before"], "score after": u["score_after"],
    **{label.lower(): len(json.loads(u[key] or "[]")) for key, label, _ in CLASSES},
    "error": u["error"] or ""} for u in updates])
st.dataframe(summary, hide_index=True, width="stretch")

gates = {g["step"]: g for g in cached("gate_decisions", run_id) or [] if g["kind"] == "slow_update"}
tabs = st.tabs([f"Epoch {u['epoch']} · {u['decision'] or '—'}" for u in updates])
for tab, u in zip(tabs, updates):
    with tab:
        epoch, step = u["epoch"], u["step"]
        g = gates.get(step)
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Decision", u["decision"] or "—")
        m2.metric("Selection before", fmt(u["score_before"]))
        delta = (u["score_after"] - u["score_before"]
                 if u["score_after"] is not None and u["score_before"] is not None else None)
        m3.metric("Selection with new guidance", fmt(u["score_after"]),
                  delta=None if delta is None else f"{delta:+.3f}")
        m4.metric("After step", step)
        if g is not None:
            st.caption(f"Gate ({g['mode']}, {g['metric']}): {g['reason']}")
        elif u["decision"] == "skip":
            st.caption("The guidance was not gated (slow_update_gate is off, or nothing changed).")
        if u["error"]:
            st.error("The slow update failed; the skill kept its previous guidance.")
            st.text(u["error"])

        st.markdown("**Guidance written this epoch**")
        show_text(u["guidance"] or "(empty)")
        with st.expander("Diff from the previous epoch's guidance", expanded=True):
            diffview.show(u["previous_guidance"], u["guidance"], mode="inline")

        st.markdown("**Items compared** (previous epoch's skill vs the current one, same train items)")
        class_tabs = st.tabs([f"{label} ({len(json.loads(u[key] or '[]'))})" for key, label, _ in CLASSES])
        for ctab, (key, label, meaning) in zip(class_tabs, CLASSES):
            with ctab:
                ids = json.loads(u[key] or "[]")
                st.caption(f"{label}: items that {meaning}.")
                if ids:
                    st.dataframe(item_table(run_id, step, ids), hide_index=True, width="stretch")
                else:
                    st.caption("None.")

        st.markdown("**Meta skill** (the optimizer's strategy notes for the next epoch)")
        meta = metas.get(epoch)
        if meta is None:
            st.caption("No meta skill was recorded for this epoch (use_meta_skill is off).")
        else:
            if meta["error"]:
                st.error("Rewriting the meta skill failed; the previous one was kept.")
                st.text(meta["error"])
            show_text(meta["content"] or "(empty)")
            previous = max((e for e in metas if e < epoch), default=None)
            if previous is not None:
                with st.expander(f"Diff from epoch {previous}'s meta skill"):
                    diffview.show(metas[previous]["content"], meta["content"], mode="inline")

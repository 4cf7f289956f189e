"""Slow updates: per epoch the guidance and its diff, the item comparison tables, the gate decision, the meta skill."""
from skillopt.ui.common import setup

setup("Slow updates")

import streamlit as st  # noqa: E402

from skillopt.ui import diffview  # noqa: E402
from skillopt.ui import gate_timeline as gt  # noqa: E402
from skillopt.ui import slow_updates as su  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, show_text, simulated_banner  # noqa: E402


def item_table(step: int, ids: list[str]):
    return su.item_table(ids, cached("items_by_ids", run_id, ids) or [],
                         cached("rollouts", run_id, step, "train", "slow_prev") or [],
                         cached("rollouts", run_id, step, "train", "slow_cur") or [])


def head(u: dict, g: dict | None) -> None:
    """The decision, the selection scores before and with the new guidance, the gate's reason."""
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Decision", u["decision"] or "—")
    m2.metric("Selection before", su.fmt(u["score_before"]))
    m3.metric("Selection with new guidance", su.fmt(u["score_after"]), delta=su.score_delta(u))
    m4.metric("After step", u["step"])
    if g is not None:
        st.caption(f"Gate ({g['mode']}, {g['metric']}): {g['reason']}")
    elif u["decision"] == "skip":
        st.caption("The guidance was not gated (slow_update_gate is off, or nothing changed).")
    if u["error"]:
        st.error("The slow update failed; the skill kept its previous guidance.")
        st.text(u["error"])


def compared_items(u: dict) -> None:
    st.markdown("**Items compared** (previous epoch's skill vs the current one, same train items)")
    class_tabs = st.tabs([f"{label} ({len(su.class_ids(u, key))})" for key, label, _ in su.CLASSES])
    for ctab, (key, label, meaning) in zip(class_tabs, su.CLASSES):
        with ctab:
            ids = su.class_ids(u, key)
            st.caption(f"{label}: items that {meaning}.")
            if ids:
                table.show(item_table(u["step"], ids))
            else:
                st.caption("None.")


def meta_skill(epoch: int) -> None:
    st.markdown("**Meta skill** (the optimizer's strategy notes for the next epoch)")
    meta = metas.get(epoch)
    if meta is None:
        st.caption("No meta skill was recorded for this epoch (use_meta_skill is off).")
        return
    if meta["error"]:
        st.error("Rewriting the meta skill failed; the previous one was kept.")
        st.text(meta["error"])
    show_text(meta["content"] or "(empty)")
    previous = su.previous_meta_epoch(metas, epoch)
    if previous is not None:
        with st.expander(f"Diff from epoch {previous}'s meta skill"):
            diffview.show(metas[previous]["content"], meta["content"], mode="inline")


st.title("Slow updates")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)
config = (cached("run", run_id) or {}).get("config", {})
updates = cached("slow_updates", run_id) or []
metas = {m["epoch"]: m for m in cached("meta_skills", run_id) or []}

if not updates:
    st.info(su.none_yet(config, is_live(run), run.get("epoch")))
    st.stop()

st.caption(su.settings_caption(updates, config))
table.show(su.summary_frame(updates))

gates = {g["step"]: g for g in gt.slow_gates(cached("gate_decisions", run_id) or [])}
# Only the open epoch's tab is built (it opens on the latest): a 50-epoch run drew 50 epochs'
# guidance, diffs and 200 item tables on every visit, 1,500 elements for the browser to lay out.
labels = [su.tab_label(u) for u in updates]
tabs = st.tabs(labels, default=labels[-1], key="slow_epoch", on_change="rerun")
for tab, u in zip(tabs, updates):
    with tab:
        if not tab.open:
            continue
        head(u, gates.get(u["step"]))
        st.markdown("**Guidance written this epoch**")
        show_text(u["guidance"] or "(empty)")
        with st.expander("Diff from the previous epoch's guidance", expanded=True):
            diffview.show(u["previous_guidance"], u["guidance"], mode="inline")
        compared_items(u)
        meta_skill(u["epoch"])

"""Rollouts: per-item results of any step and split, filters, and the selection split's flip matrix.

Built for big runs: the table reads only the chosen (step, split) through the
rollouts_by_split index, "changed" looks up only the shown items through
rollouts_by_item, and the flip matrix reads four columns of selection rows.
"""
from skillopt.ui.common import setup

setup("Rollouts")

import json  # noqa: E402

import pandas as pd  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.tasks.task import SPLITS  # noqa: E402
from skillopt.ui import flips  # noqa: E402
from skillopt.ui import gate_timeline as gt  # noqa: E402
from skillopt.ui import rollouts as ro  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, show_text, simulated_banner  # noqa: E402


def previous_results(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(purpose, item id) -> the item's latest earlier result on the same split and purpose."""
    previous: dict[tuple[str, str], dict] = {}
    for p in sorted({r["purpose"] for r in rows}):
        ids = [r["item_id"] for r in rows if r["purpose"] == p]
        for prev in cached("previous_results", run_id, split, p, step, ids) or []:
            previous[(p, prev["item_id"])] = prev
    return previous


def trajectory(full: dict) -> None:
    d1, d2 = st.columns(2)
    with d1:
        st.markdown("**Input**")
        try:
            st.json(json.loads(full["input_json"] or "{}"), expanded=True)
        except ValueError:
            show_text(full["input_json"], language="text")
        st.markdown("**Expected**")
        show_text(full["expected"], language="text")
    with d2:
        st.markdown(f"**Output** · hard {full['hard']:.2f} · soft {full['soft']:.2f}")
        show_text(full["output"], language="text")
        st.markdown("**Evaluator feedback**")
        show_text(full["feedback"], language="text")
        if full["error"]:
            st.markdown("**Error**")
            show_text(full["error"], language="text")


def matrix() -> None:
    data = cached("selection_matrix", run_id) or []
    if not data:
        st.info("No selection rollout yet.")
        return
    decisions = {s["step"]: s["decision"] for s in cached("steps", run_id) or []}
    slow = {g["step"]: g["decision"] for g in gt.slow_gates(cached("gate_decisions", run_id) or [])}
    m = flips.build(data, decisions, slow)
    grid = st.radio("Show", list(ro.GRIDS), horizontal=True, key="matrix_grid", format_func=ro.GRIDS.get)
    lo, hi = 0, len(m.steps)
    if len(m.steps) > ro.MAX_MATRIX_STEPS:
        first, last = st.select_slider("Steps shown", options=list(m.steps),
                                       value=(m.steps[-ro.MAX_MATRIX_STEPS], m.steps[-1]), key="matrix_range")
        lo, hi = m.steps.index(first), m.steps.index(last) + 1
    st.plotly_chart(ro.matrix_figure(m, grid, lo, hi), width="stretch")
    st.caption(ro.flips_caption(m, flips.flip_counts(m)))


st.title("Rollouts")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)

steps_by_split = {s: cached("rollout_steps", run_id, s) or [] for s in SPLITS}
available = [s for s in SPLITS if steps_by_split[s]]
if not available:
    st.info("No rollout recorded yet: the seed skill is scored on the selection split first.")
    st.stop()

c1, c2, c3 = st.columns([1, 2, 2])
split = c1.radio("Split", available, key="split")
split_steps = steps_by_split[split]
step = c2.select_slider("Step", options=split_steps, value=split_steps[-1], key=f"step_{split}")
purposes = cached("rollout_purposes", run_id, split, step) or []
purpose = c3.selectbox("Purpose", ro.purpose_options(purposes), key=f"purpose_{split}", format_func=ro.purpose_label)

f1, f2, f3 = st.columns(3)
filters = ro.Filters(
    failures_only=f1.toggle("Failures only (hard < 1)", key="failures"),
    changed_only=f2.toggle("Changed since its previous result", key="changed",
                           help="The item's latest earlier result on the same split and purpose."),
    errors_only=f3.toggle("Model errors only", key="errors"))

rows = cached("rollouts", run_id, step, split, None if purpose == ro.ALL else purpose) or []
table = ro.table(rows, previous_results(rows), filters)
st.caption(ro.summary(rows, step, split, len(table)))
if table:
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch",
                 column_config={"hard": st.column_config.NumberColumn(format="%.2f"),
                                "soft": st.column_config.NumberColumn(format="%.2f")})
    pick = st.selectbox("Trajectory", [ro.row_key(t["purpose"], t["item"]) for t in table], key="trajectory")
    trajectory(next(r for r in rows if ro.row_key(r["purpose"], r["item_id"]) == pick))
else:
    st.info("No rollout matches these filters.")

st.subheader("Flip matrix (selection split)")
st.fragment(run_every=3 if is_live(run) else None)(matrix)()

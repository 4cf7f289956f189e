"""Rollouts: per-item results of any step and split, filters, and the selection split's flip matrix.

Built for big runs: the table reads only the chosen (step, split) through the
rollouts_by_split index, "changed" looks up only the shown items through
rollouts_by_item, and the flip matrix reads four columns of selection rows.
"""
from skillopt.ui.common import setup

setup("Rollouts")

import json  # noqa: E402

import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.ui import flips  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, show_text, simulated_banner  # noqa: E402

SPLITS = ("train", "selection", "test")
ALL = "(all purposes)"
PURPOSE_HELP = {
    "train": "the incumbent on the step's train batch", "gate_current": "the incumbent on the selection split",
    "gate_candidate": "the step's candidate on the selection split",
    "slow_update_candidate": "the slow-update candidate on the selection split",
    "slow_prev": "the previous epoch's skill on the slow-update sample",
    "slow_cur": "the current skill on the slow-update sample", "test_seed": "the seed skill on the test split",
    "test_best": "the best skill on the test split", "test_final": "the final skill on the test split"}
MAX_MATRIX_STEPS = 80  # wider heatmaps stop being readable; a range slider picks the window


def short(text, n: int = 160) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[:n - 1] + "…"


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
purpose = c3.selectbox("Purpose", [ALL, *purposes] if len(purposes) > 1 else purposes, key=f"purpose_{split}",
                       format_func=lambda p: p if p == ALL else f"{p} — {PURPOSE_HELP.get(p, '')}")

f1, f2, f3 = st.columns(3)
failures_only = f1.toggle("Failures only (hard < 1)", key="failures")
changed_only = f2.toggle("Changed since its previous result", key="changed",
                         help="The item's latest earlier result on the same split and purpose.")
errors_only = f3.toggle("Model errors only", key="errors")

rows = cached("rollouts", run_id, step, split, None if purpose == ALL else purpose) or []
previous: dict[tuple[str, str], dict] = {}
for p in sorted({r["purpose"] for r in rows}):
    ids = [r["item_id"] for r in rows if r["purpose"] == p]
    for prev in cached("previous_results", run_id, split, p, step, ids) or []:
        previous[(p, prev["item_id"])] = prev

table = []
for r in rows:
    prev = previous.get((r["purpose"], r["item_id"]))
    changed = prev is not None and (prev["hard"] != r["hard"] or prev["soft"] != r["soft"])
    if failures_only and r["hard"] >= 1:
        continue
    if changed_only and not changed:
        continue
    if errors_only and not r["error"]:
        continue
    table.append({
        "item": r["item_id"], "purpose": r["purpose"], "hard": r["hard"], "soft": r["soft"],
        "previous hard": prev["hard"] if prev else None, "previous step": prev["step"] if prev else None,
        "changed": changed, "input": short(r["input_json"]), "output": short(r["output"]),
        "expected": short(r["expected"]), "feedback": short(r["feedback"]), "error": r["error"] or "",
        "cached": bool(r["cached"])})

n_fail = sum(r["hard"] < 1 for r in rows)
mean_hard = sum(r["hard"] for r in rows) / len(rows) if rows else 0.0
st.caption(f"{len(rows)} rollouts at step {step} on {split} · mean hard {mean_hard:.3f} · {n_fail} failures · "
           f"{sum(bool(r['error']) for r in rows)} errors · showing {len(table)}")
if table:
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch",
                 column_config={"hard": st.column_config.NumberColumn(format="%.2f"),
                                "soft": st.column_config.NumberColumn(format="%.2f")})
    keys = [f"{t['purpose']} · {t['item']}" for t in table]
    pick = st.selectbox("Trajectory", keys, key="trajectory")
    full = next(r for r in rows if f"{r['purpose']} · {r['item_id']}" == pick)
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
else:
    st.info("No rollout matches these filters.")


def matrix() -> None:
    data = cached("selection_matrix", run_id) or []
    if not data:
        st.info("No selection rollout yet.")
        return
    decisions = {s["step"]: s["decision"] for s in cached("steps", run_id) or []}
    slow = {g["step"]: g["decision"] for g in cached("gate_decisions", run_id) or [] if g["kind"] == "slow_update"}
    m = flips.build(data, decisions, slow)
    grid = st.radio("Show", ["flips", "incumbent", "candidate"], horizontal=True, key="matrix_grid",
                    format_func={"flips": "flips (candidate − incumbent)", "incumbent": "incumbent after the step",
                                 "candidate": "candidate of the step"}.get)
    lo, hi = 0, len(m.steps)
    if len(m.steps) > MAX_MATRIX_STEPS:
        first, last = st.select_slider("Steps shown", options=list(m.steps),
                                       value=(m.steps[-MAX_MATRIX_STEPS], m.steps[-1]), key="matrix_range")
        lo, hi = m.steps.index(first), m.steps.index(last) + 1
    z = [list(row[lo:hi]) for row in getattr(m, grid)]
    if grid == "flips":
        scale, zmin, zmax = [[0, "#ef553b"], [0.5, "#f2f2f2"], [1, "#00cc96"]], -1, 1
    else:
        scale, zmin, zmax = [[0, "#ef553b"], [1, "#00cc96"]], 0, 1
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(s) for s in m.steps[lo:hi]], y=list(m.items), colorscale=scale, zmin=zmin, zmax=zmax,
        xgap=1, ygap=1, hoverongaps=False,
        hovertemplate="step %{x}<br>item %{y}<br>value %{z}<extra></extra>"))
    fig.update_layout(height=max(300, min(1200, 12 * len(m.items) + 120)),
                      margin={"l": 10, "r": 10, "t": 10, "b": 10}, xaxis_title="step", yaxis_title="selection item",
                      xaxis={"type": "category"}, yaxis={"type": "category", "autorange": "reversed"})
    st.plotly_chart(fig, width="stretch")
    counts = flips.flip_counts(m)
    moved = [(s, fixed, broken) for s, fixed, broken in counts if fixed or broken]
    st.caption(f"{len(m.items)} selection items × {len(m.steps)} steps · per step (fixed/broken): "
               + (", ".join(f"{s}: +{fixed}/−{broken}" for s, fixed, broken in moved) or "no flips"))


st.subheader("Flip matrix (selection split)")
st.fragment(run_every=3 if is_live(run) else None)(matrix)()

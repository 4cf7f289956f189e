"""Gate timeline: every gate decision on one chart, the decisions table, flipped items, the rejected buffer."""
from skillopt.ui.common import setup

setup("Gate timeline")

import streamlit as st  # noqa: E402

from skillopt.ui import evolution as evo  # noqa: E402
from skillopt.ui import gate_timeline as gt  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, simulated_banner, view, windowed  # noqa: E402

st.title("Gate timeline")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)
config = (cached("run", run_id) or {}).get("config", {})


def timeline_figure(run: str, metric: str):
    """Built once per store version: 500 steps' markers and hover texts take plotly ~0.2 s to validate."""
    return gt.timeline_figure(cached("steps", run) or [], cached("gate_decisions", run) or [], metric)


def timeline() -> None:
    steps = cached("steps", run_id) or []
    gates = cached("gate_decisions", run_id) or []
    if not steps:
        st.info("No step has completed yet: the first gate decision appears after step 1.")
        return
    st.plotly_chart(view(timeline_figure, run_id, config.get("gate_metric", "hard")), width="stretch")
    st.caption(gt.counts_caption(steps, gates, config.get("gate_mode", "?")))
    decisions = windowed(gt.decisions_frame(steps, gates), "decisions_all")
    table.show(decisions, {"margin": "%+.3f", "p-value": "%.3f"}, height=table.scrolled(len(decisions)))


st.fragment(run_every=3 if is_live(run) else None)(timeline)()

steps = cached("steps", run_id) or []
by_step = gt.step_gates(cached("gate_decisions", run_id) or [])

st.subheader("Flipped items of a step")
if not by_step:
    st.info("No step has been gated yet (a step with no applicable edit is skipped).")
else:
    flip_step = st.selectbox("Gated step", list(by_step), index=gt.default_flip_step(by_step), key="flip_step")
    flips = gt.flipped_of(by_step[flip_step])
    if not flips:
        st.caption("No selection item changed its result at this step.")
    else:
        items = cached("items_by_ids", run_id, [f[0] for f in flips]) or []
        table.show(gt.flips_frame(flips, items))

st.subheader("Edits of a step")
if not steps:
    st.info("A step's edits are listed here once it completes.")
else:
    edit_step = st.selectbox("Step", [s["step"] for s in steps], index=gt.default_edit_step(steps), key="edits_step")
    edits = cached("edits", run_id, edit_step) or []
    if not edits:
        st.caption("No edit was proposed at this step.")
    else:  # dropped edits too: each with its reason in "why"; an edit a person rewrote shows both texts
        by_edit = evo.approvals_by_edit(cached("approvals", run_id, edit_step) or [], edits)
        step_row = next((s for s in steps if s["step"] == edit_step), None)
        table.show(gt.edits_frame(edits, step_row, by_edit))
        st.caption("An edit's **effect** is what the gate measured of it: measured alone only when it was its "
                   "step's only edit or the engine attributed the gate's result to it; otherwise the table says "
                   "it was not attributed.")

st.subheader("Rejected-edit buffer")
scope = config.get("rejected_buffer_scope", "epoch")
if not steps:
    st.info("The buffer fills when the gate rejects a step's edits.")
else:
    nos = [s["step"] for s in steps]
    epoch_of = {s["step"]: s["epoch"] for s in steps}
    at = st.select_slider("As the reflection of step … saw it", options=nos, value=nos[-1], key="buffer_step")
    epoch = epoch_of[at] if scope == "epoch" else None
    buffer = cached("rejected_buffer_at", run_id, at, epoch) or []
    st.caption(gt.buffer_caption(scope, epoch))
    if not buffer:
        st.info(f"The buffer was empty at step {at}.")
    else:
        table.show(gt.buffer_frame(buffer))

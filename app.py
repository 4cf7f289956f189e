"""SkillOpt Studio home: every run in one table, filters, and one-click demo runs.

Start with `streamlit run app.py` (binds 127.0.0.1, see .streamlit/config.toml). The
dashboard never trains in its own process: the demo buttons launch `python -m skillopt
train` through skillopt.launcher and link to the Monitor page of the new run.
"""
from __future__ import annotations

import streamlit as st

from skillopt.ui.common import setup

setup("Home")

from skillopt.ui import home  # noqa: E402  (after set_page_config, which must come first)
from skillopt.ui import monitor as mon  # noqa: E402
from skillopt.ui.common import cached, db  # noqa: E402

st.title("SkillOpt Studio")
st.caption("Train a skill document — the Markdown an LLM agent reads first — the way deep learning trains "
           "weights: rollouts, reflection, edit budgets, a validation gate and checkpoints.")


def start_demo(kind: str) -> None:
    run_id, problem = home.start_demo(kind, db())
    if run_id is None:
        st.session_state["demo_error"] = problem
        return
    st.session_state["demo_started"] = run_id
    st.session_state.pop("demo_error", None)


left, right = st.columns(2)
if left.button("Start demo run (simulated, instant)", type="primary", icon=":material/science:", width="stretch",
               help="sim-rulebook with sim/target and sim/optimizer: a documented simulated world, not a real "
                    "model. Finishes in seconds."):
    start_demo("sim")
if right.button("Start demo run (embedded local model)", icon=":material/computer:", width="stretch",
                help="ticket-routing on the embedded llama.cpp model (real, offline): 2 steps of 10 tickets, "
                     "20 selection and 20 test items. Takes minutes on a CPU."):
    start_demo("local")
if st.session_state.get("demo_error"):
    st.error(f"The embedded model is not ready: {st.session_state['demo_error']}")
if st.session_state.get("demo_started"):
    new_id = st.session_state["demo_started"]
    st.success(f"Started run {new_id}.", icon=":material/rocket_launch:")
    st.page_link("pages/2_Monitor.py", label=f"Watch run {new_id} on the Monitor page", icon=":material/monitoring:",
                 query_params={"run": new_id})

st.subheader("Runs")
runs = cached("runs")
if not runs:
    st.info("No runs yet. Start a demo above, or configure one on the **New run** page.")
    st.page_link("pages/1_New_run.py", label="New run", icon=":material/add:")
    st.stop()

pids = cached("live_pids") or {}
frame = mon.runs_frame([r | {"pid": pids.get(r["id"])} for r in runs])
f1, f2, f3 = st.columns(3)
statuses = f1.multiselect("Status", sorted(frame["status"].unique()))
tasks = f2.multiselect("Task", sorted(frame["task"].unique()))
simulated = f3.selectbox("Models", ["all", "real only", "simulated only"])
shown = mon.filter_runs(frame, statuses, tasks, {"real only": "no", "simulated only": "yes"}.get(simulated, "all"))
st.dataframe(
    shown, hide_index=True, width="stretch",
    column_config={
        "monitor": st.column_config.LinkColumn("open", display_text="Monitor ↗",
                                               help="Open the run on the Monitor page"),
        "best selection": st.column_config.NumberColumn(format="%.3f"),
        "test lift": st.column_config.NumberColumn(format="%+.3f", help="best skill's test score − seed skill's"),
        "cost $": st.column_config.NumberColumn(format="$%.4f"),
        "simulated": st.column_config.TextColumn(help="yes = sim/target and sim/optimizer, not a real model"),
    })
st.caption(f"{len(shown)} of {len(frame)} runs shown · database: {db()}")

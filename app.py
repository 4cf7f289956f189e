"""SkillOpt Studio home: every run in one table (its test result, lift and duration),
filters, and one-click demo runs.

Start with `python -m skillopt dashboard` (`streamlit run app.py` with the pages' libraries
loaded before it serves; binds 127.0.0.1, see .streamlit/config.toml). The
sidebar (skillopt.ui.common.setup) names this page Home. The dashboard never trains in its
own process: the demo buttons launch `python -m skillopt train` through skillopt.launcher
and link to the Monitor page of the new run.
"""
from __future__ import annotations

import time

import streamlit as st

from skillopt.ui.common import setup

setup("Home")

REFRESH_S = 2  # the runs table follows live and starting runs


def start_demo(kind: str) -> None:
    from skillopt.ui import home
    from skillopt.ui.common import db

    run_id, problem = home.start_demo(kind, db())
    if run_id is None:
        st.session_state["demo_error"] = problem
        return
    st.session_state["demo_started"] = run_id
    # Listed at once: the trainer writes the run's row only once it has loaded the task.
    st.session_state.setdefault("starting", []).append({"id": run_id, "kind": kind, "at": time.time()})
    st.session_state.pop("demo_error", None)
    st.cache_data.clear()


def demo_buttons() -> None:
    left, right = st.columns(2)
    if left.button("Start demo run (simulated, instant)", type="primary", icon=":material/science:",
                   width="stretch", help="sim-rulebook with sim/target and sim/optimizer: a documented simulated "
                                         "world, not a real model. Finishes in seconds."):
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
        st.page_link("pages/2_Monitor.py", label=f"Watch run {new_id} on the Monitor page",
                     icon=":material/monitoring:", query_params={"run": new_id})


def runs_table() -> None:
    from skillopt.ui import home
    from skillopt.ui.common import cached, db

    runs = cached("runs") or []
    known = {r["id"] for r in runs}
    starting = [s for s in st.session_state.get("starting", []) if s["id"] not in known]
    st.session_state["starting"] = starting
    if not runs and not starting:
        st.info("No runs yet. Start a demo above, or configure one on the **New run** page.")
        st.page_link("pages/1_New_run.py", label="New run", icon=":material/add:")
        return
    frame = home.runs_frame(runs, cached("lifts") or {}, starting)
    f1, f2, f3 = st.columns(3)
    statuses = f1.multiselect("Status", sorted(frame["status"].unique()), key="home_status")
    tasks = f2.multiselect("Task", sorted(frame["task"].unique()), key="home_task")
    simulated = f3.selectbox("Models", ["all", "real only", "simulated only"], key="home_models")
    shown = home.filter_runs(frame, statuses, tasks,
                             {"real only": "no", "simulated only": "yes"}.get(simulated, "all"))
    st.dataframe(
        shown, hide_index=True, width="stretch",
        column_config={
            "monitor": st.column_config.LinkColumn("open", display_text="Monitor ↗",
                                                   help="Open the run on the Monitor page"),
            "test": st.column_config.TextColumn(help="test split: no skill / seed skill → best skill"),
            "lift": st.column_config.TextColumn(help="best skill's test score − the better of no skill and the "
                                                     "seed, with its 95% interval"),
            "test lift": None,  # the number behind "lift", kept for sorting and filtering, not shown twice
            "best selection": st.column_config.NumberColumn(format="%.3f"),
            "cost $": st.column_config.NumberColumn(format="$%.4f"),
            "simulated": st.column_config.TextColumn(help="yes = sim/target and sim/optimizer, not a real model"),
        })
    st.caption(f"{len(shown)} of {len(frame)} runs shown · database: {db()}")


def live_or_starting() -> bool:
    from skillopt.ui.common import cached
    from skillopt.ui.monitor import effective_status
    from skillopt.vocabulary import LIVE_STATUSES

    return bool(st.session_state.get("starting")) or any(effective_status(r) in LIVE_STATUSES
                                                         for r in cached("runs") or [])


def home_page() -> None:
    st.title("SkillOpt Studio")
    st.caption("Train a skill document — the Markdown an LLM agent reads first — the way deep learning trains "
               "weights: rollouts, reflection, edit budgets, a validation gate and checkpoints.")
    demo_buttons()
    st.subheader("Runs")
    st.fragment(run_every=REFRESH_S if live_or_starting() else None)(runs_table)()


home_page()

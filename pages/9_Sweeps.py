"""Sweeps: build a grid (learning_rate × lr_scheduler, or any config keys), launch it, watch each
trial, compare the cells on heatmaps (mean ± sd over seeds, calls and cost per cell), open a
trial's run, and start a new run from the best trial's skill.

Launching starts `python -m skillopt sweep start` in the background (skillopt.sweep.local); the
page only reads the store, apart from stop requests. The sweep in view is in the URL (?sweep=).
"""
from __future__ import annotations

import streamlit as st

from skillopt.ui.common import setup

setup("Sweeps", icon=":material/grid_view:")

from skillopt import launcher  # noqa: E402
from skillopt.config import LR_SCHEDULERS  # noqa: E402
from skillopt.errors import UserError  # noqa: E402
from skillopt.sweep import commands, ledger, local, procs, summary  # noqa: E402
from skillopt.store.writer import Store  # noqa: E402
from skillopt.tasks.loader import list_tasks  # noqa: E402
from skillopt.ui import sweeps as ui  # noqa: E402
from skillopt.ui.common import cached, db, show_text  # noqa: E402

REFRESH_S = 2


@st.cache_resource(ttl=30, show_spinner=False)
def task_names() -> list[str]:
    return [t.name for t in list_tasks()]


def new_sweep() -> None:
    """The grid builder: every choice becomes an argument of `sweep start`."""
    names = task_names()
    c1, c2 = st.columns(2)
    task = c1.selectbox("Task", names, index=names.index("sim-rulebook") if "sim-rulebook" in names else 0)
    choice = c2.selectbox("Models", list(ui.MODEL_CHOICES))
    target, optimizer = ui.MODEL_CHOICES[choice]
    key_env = ""
    if not target:
        m1, m2, m3 = st.columns(3)
        target = m1.text_input("Target model", placeholder="openai/gpt-4o-mini")
        optimizer = m2.text_input("Optimizer model", placeholder="openai/gpt-4o")
        key_env = m3.text_input("API key environment variable (its NAME)", placeholder="OPENAI_API_KEY")
    g1, g2 = st.columns(2)
    rates = g1.multiselect("learning_rate values", ui.LEARNING_RATES, default=ui.DEFAULT_LEARNING_RATES)
    schedulers = g2.multiselect("lr_scheduler values", LR_SCHEDULERS, default=LR_SCHEDULERS)
    a1, a2 = st.columns(2)
    extra = a1.text_area("More grid axes (one key=v1,v2 per line)", placeholder="gate_mode=strict,paired")
    settings = a2.text_area("Settings of every trial (one key=value per line)", value="num_epochs=2")
    n1, n2, n3, n4 = st.columns(4)
    seeds = n1.number_input("Seeds per grid point", 1, 10, 1)
    workers = n2.number_input("Trials at once (0 = default)", 0, 64, 0,
                              help="Default: 1 on the embedded model (llama.cpp uses every core), else 4.")
    max_calls = n3.number_input("Budget: model calls (0 = none)", 0, 10_000_000, 0)
    max_cost = n4.number_input("Budget: cost $ (0 = none)", 0.0, 100_000.0, 0.0)
    b1, b2, b3 = st.columns(3)
    backend = b1.radio("Backend", ["local", "ray"], horizontal=True,
                       help="local: processes on this machine. ray: Ray tasks (a local Ray instance on 127.0.0.1 "
                            "unless you give a cluster address).")
    address = b2.text_input("Ray cluster address (empty = local)", disabled=backend != "ray")
    name = b3.text_input("Sweep name (optional)")
    form = ui.SweepForm(task=task, target_model=target, optimizer_model=optimizer, key_env=key_env,
                        learning_rates=rates, schedulers=schedulers, extra_axes=extra, settings=settings,
                        seeds=int(seeds), workers=int(workers), backend=backend, ray_address=address,
                        max_calls=int(max_calls), max_cost_usd=float(max_cost), name=name)
    st.caption(f"{form.n_trials()} trials: each an ordinary run, tagged with this sweep.")
    if st.button("Launch sweep", type="primary", icon=":material/rocket_launch:"):
        launch(form)


def launch(form: ui.SweepForm) -> None:
    try:
        commands.plan(form.namespace())  # refuse here, in one line, what `sweep start` would refuse
    except (UserError, SystemExit) as exc:
        st.error(str(exc) or "the sweep's arguments are not valid")
        return
    sweep_id = f"sweep-{launcher.new_run_id()}"
    local.start_controller([*form.args(), "--sweep-id", sweep_id, "--db", str(db())], db(), sweep_id)
    st.session_state["sweep_started"] = sweep_id
    st.query_params["sweep"] = sweep_id
    st.cache_data.clear()
    st.rerun()


@st.fragment(run_every=REFRESH_S)
def starting(sweep_id: str) -> None:
    """A sweep just launched has no row until its controller has checked every trial."""
    if cached("sweep", sweep_id) is not None:
        st.rerun()
    st.info(f"Sweep {sweep_id} is starting… (this page follows it as soon as it appears)",
            icon=":material/hourglass_top:")
    log = local.last_line(local.controller_log(db(), sweep_id))
    if log:
        st.caption(f"Controller: {log}")


def pick_sweep(sweeps: list) -> str | None:
    wanted = st.query_params.get("sweep")
    ids = [s["id"] for s in sweeps]
    if wanted and wanted not in ids:
        if cached("sweep", wanted) is None:
            starting(wanted)
            return None
        ids.insert(0, wanted)  # newer than the cached list
        sweeps = [cached("sweep", wanted), *sweeps]
    by_id = {s["id"]: s for s in sweeps}
    choice = st.selectbox("Sweep", ids, index=ids.index(wanted) if wanted in ids else 0,
                          format_func=lambda i: f"{by_id[i]['name']} · {by_id[i]['task']} · {by_id[i]['status']}")
    if st.query_params.get("sweep") != choice:
        st.query_params["sweep"] = choice
    return choice


def controls(sweep: dict) -> None:
    live = ledger.is_live(sweep)
    orphan = live and not procs.elsewhere(sweep) and not procs.alive(sweep)
    c1, c2, _ = st.columns([1, 1, 4])
    if live and sweep["status"] != "stopping":
        if c1.button("Stop sweep", icon=":material/stop:", type="primary",
                     help="Every trial stops after its current stage; resume continues the sweep."):
            stop(sweep["id"])
    if orphan:
        st.warning("The sweep's controller is gone (killed?). Resume adopts the trial processes that still run "
                   "and continues the rest.")
    if orphan or sweep["status"] in ("stopped", "budget_exhausted"):
        if c2.button("Resume sweep", icon=":material/play_arrow:", type="primary"):
            local.start_controller(["resume", sweep["id"], "--db", str(db())], db(), sweep["id"])
            st.cache_data.clear()
            st.rerun()


def stop(sweep_id: str) -> None:
    store = Store(db())
    try:
        commands.stop_sweep(store, sweep_id)
    finally:
        store.close()
    st.cache_data.clear()
    st.rerun()


@st.fragment(run_every=REFRESH_S)
def live_view(sweep_id: str) -> None:
    sweep = cached("sweep", sweep_id)
    if sweep is None:
        return
    if not ledger.is_live(sweep):
        st.rerun()  # it ended: redraw once without the timer
    body(sweep)


def body(sweep: dict) -> None:
    trials = cached("sweep_trials", sweep["id"]) or []
    st.markdown(f"**Status:** `{sweep['status']}`" + (f" — {sweep['reason']}" if sweep["reason"] else ""))
    done = sum(t["status"] in ui.DONE for t in trials)
    st.progress(done / len(trials) if trials else 0.0, text=ui.counts_line(trials))
    axis_keys = [k for k, _ in sweep["grid"]]
    x, y = summary.heatmap_axes(axis_keys)
    cells = summary.cells(trials, x, y)
    axes = {k: v for k, v in sweep["grid"]}
    left, right = st.columns(2)
    left.markdown("**Best selection score** (mean ± sd over seeds)")
    picked = [left.plotly_chart(ui.heatmap(cells, x, y, "selection", axes), key="heat-selection",
                                on_select="rerun", selection_mode="points")]
    right.markdown("**Test score of the best skill** (mean ± sd over seeds)")
    picked.append(right.plotly_chart(ui.heatmap(cells, x, y, "test", axes), key="heat-test", on_select="rerun",
                                     selection_mode="points"))
    st.caption("Click a cell to open its trial's run.")
    for event in picked:
        open_cell(ui.cell_of(cells, event.get("selection") if event else None), trials)
    if len(axis_keys) > 2:
        st.markdown("**Every axis** (one line per trial, coloured by test score)")
        st.plotly_chart(ui.parallel(trials, axis_keys), key="parallel")
    st.markdown("**Trials**")
    st.dataframe(ui.trials_frame(trials), hide_index=True, width="stretch", column_config={
        "open": st.column_config.LinkColumn("open", display_text="Monitor ↗", help="Open the trial's run"),
        "best selection": st.column_config.NumberColumn(format="%.3f"),
        "test (best skill)": st.column_config.NumberColumn(format="%.3f"),
        "cost $": st.column_config.NumberColumn(format="$%.4f")})


def open_cell(cell, trials: list) -> None:
    """A clicked cell: its only trial's run opens at once; with several seeds, a link to each."""
    if cell is None:
        return
    started = [t for t in trials if t["run_id"] in cell.run_ids and t.get("run_status")]
    if len(started) == 1:
        st.switch_page("pages/2_Monitor.py", query_params={"run": started[0]["run_id"]})
    for t in started:
        st.page_link("pages/2_Monitor.py", label=f"Open trial {t['idx']} ({ui.point_label(t)}, seed {t['seed']})",
                     icon=":material/monitoring:", query_params={"run": t["run_id"]})


def best(sweep: dict) -> None:
    trials = cached("sweep_trials", sweep["id"]) or []
    top = summary.best_trial(trials)
    if top is None:
        return
    st.subheader("Best trial", anchor=False)
    test = "—" if top["best_test"] is None else f"{top['best_test']:.3f}"
    st.markdown(f"Trial {top['idx']} (`{ui.point_label(top)}`, seed {top['seed']}): best selection "
                f"**{top['best_score']:.3f}**, test **{test}**.")
    c1, c2 = st.columns(2)
    c1.page_link("pages/2_Monitor.py", label=f"Open trial {top['idx']} on the Monitor page",
                 icon=":material/monitoring:", query_params={"run": top["run_id"]})
    if c2.button("Use the best trial's skill as a seed", icon=":material/conversion_path:",
                 help="A new run with the trial's settings, starting from its best skill (transfer learning)."):
        skill = cached("best_skill", top["run_id"])
        new_id = launcher.launch(sweep["task_path"] or sweep["task"], ui.transfer_overrides(sweep, top), db=db(),
                                 name=f"{sweep['name']} · from trial {top['idx']}", seed_skill=skill)
        st.session_state["transfer_run"] = new_id
    if st.session_state.get("transfer_run"):
        new_id = st.session_state["transfer_run"]
        st.page_link("pages/2_Monitor.py", label=f"Watch run {new_id} (seeded with the best skill)",
                     icon=":material/rocket_launch:", query_params={"run": new_id})
    with st.expander("Its best skill"):
        show_text(cached("best_skill", top["run_id"]))


def main() -> None:
    st.title("Sweeps", anchor=False)
    sweeps = cached("sweeps") or []
    with st.expander("New sweep", expanded=not sweeps, icon=":material/add:"):
        new_sweep()
    if not sweeps and not st.query_params.get("sweep"):
        st.info("No sweeps yet. Build a grid above: each trial is an ordinary run.")
        return
    sweep_id = pick_sweep(sweeps)
    sweep = cached("sweep", sweep_id) if sweep_id else None
    if sweep is None:
        return
    st.caption(f"task **{sweep['task']}** · {sweep['backend']} backend · {sweep['workers']} at once · budget "
               f"{sweep['max_calls'] or 'unlimited'} calls · sweep id `{sweep['id']}`")
    controls(sweep)
    if ledger.is_live(sweep):
        live_view(sweep["id"])
    else:
        body(sweep)
    best(sweep)


main()

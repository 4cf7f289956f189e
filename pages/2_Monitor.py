"""Monitor: the run's result on the test split and how long it took, where it is (stage,
epoch, step, ETA), how it learns (curves, edit budget), what it costs (calls, tokens, cost
per stage), and Stop / Resume / Export.

Only the progress part refreshes, every 2 s, while the run is live or being resumed.
"""
from __future__ import annotations

import time

import streamlit as st

from skillopt.ui.common import setup

setup("Monitor", icon=":material/monitoring:")

from skillopt import launcher  # noqa: E402

from skillopt import process  # noqa: E402
from skillopt.vocabulary import LIVE_STATUSES  # noqa: E402
from skillopt.ui import monitor as mon  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.common import cached, db, lazy_expander, pick_run, reader, show_text, simulated_banner  # noqa: E402
from skillopt.ui.common import view  # noqa: E402
from skillopt.ui.plotting import plain_lines  # noqa: E402

REFRESH_S = 2
STOP_GRACE_S = 15  # a step between two stage checks takes seconds; after this, SIGTERM
FAULTS_SHOWN = 20  # the newest model calls with an error or a note
STARTING_S = 120  # a trainer writes its run's row within seconds; a log this old without one means it exited
RESUMING_S = 180  # how long a resumed trainer may take to report before the page stops waiting


@st.fragment(run_every=REFRESH_S)
def starting(run_id: str) -> None:
    """A run that was just launched has no row until its process has loaded the task."""
    if cached("run", run_id) is not None:
        st.rerun()
    log = launcher.read_log(db(), run_id)
    age = time.time() - launcher.log_path(db(), run_id).stat().st_mtime
    if age > STARTING_S:
        st.error(f"Run {run_id} never appeared in the store: its trainer stopped before creating it. "
                 "Its log says why.", icon=":material/error:")
    else:
        st.info(f"Run {run_id} is starting… (this page follows it as soon as it appears)",
                icon=":material/hourglass_top:")
    st.caption("Trainer log")
    show_text(log[-4000:] or "(empty so far)", language="text")


wanted = st.query_params.get("run")
if wanted and cached("run", wanted) is None and launcher.log_path(db(), wanted).exists():
    starting(wanted)  # launched, not yet written: an unknown id without a log is pick_run's to report
    if not (cached("runs") or []) or not st.button("Show another run instead"):
        st.stop()
    del st.query_params["run"]
    st.session_state.pop("skillopt_run", None)
    st.rerun()

picked = pick_run()
if picked is None:
    st.stop()
run_id = picked["id"]
run = cached("run", run_id)
if run is None:
    st.stop()
status = mon.effective_status(run)
live = status in LIVE_STATUSES
resuming = (st.session_state.get("resuming") or {}).get("run") == run_id and not live

st.title(run["name"] or run_id, anchor=False)
config = run["config"]
st.caption(f"task **{run['task']}** · target `{config.get('target_model')}` · optimizer "
           f"`{config.get('optimizer_model')}` · run id `{run_id}`")
simulated_banner(run)


def headline() -> None:
    """The run's story first: its test result (no skill / seed -> best, the lift and its
    interval) and how long it took."""
    r = cached("run", run_id) or run
    head, detail = mon.test_headline(r, cached("tests", run_id) or {}, cached("lift", run_id))
    with st.container(border=True):
        st.markdown(head)
        st.caption(detail)


st.fragment(run_every=REFRESH_S if live or resuming else None)(headline)()
title, parts = mon.breakdown_rows(cached("lift", run_id))
if parts:  # which fields or answers the lift came from; the page redraws once when a live run ends
    with (box := lazy_expander(title, "monitor_breakdown")):
        if box.open:
            table.show(parts, {c: "%+.3f" if c.startswith("best −") else "%.3f" for c in parts[0] if c != "items"})


# ---- controls -------------------------------------------------------------------------
def controls() -> None:
    c1, c2, c3 = st.columns([1, 1, 4])
    if live and status != "stopping":
        if c1.button("Stop", icon=":material/stop:", type="primary",
                     help="Ask the trainer to stop after the current stage (it can be resumed); SIGTERM after "
                          f"{STOP_GRACE_S}s without reaction, only to the process that started this run."):
            with st.spinner("Stopping…"):
                st.session_state["stop_outcome"] = (run_id, launcher.stop(run_id, db=db(), grace_s=STOP_GRACE_S))
            st.cache_data.clear()
            st.rerun()
    if mon.can_resume(run) and not resuming:
        if c1.button("Resume", icon=":material/play_arrow:", type="primary",
                     help="Continue from the last completed step (cached answers are not paid again)."):
            proc = launcher.resume(run_id, db=db())
            st.session_state["resuming"] = {"run": run_id, "pid": proc.pid, "at": time.time()}
            st.cache_data.clear()
            st.rerun()
    with c3.popover("Export", icon=":material/archive:"):
        for file_name, (mime, produce) in mon.export_files(reader(), run_id).items():
            st.download_button(file_name, data=produce, file_name=f"{run_id}-{file_name}", mime=mime)
    outcome = st.session_state.get("stop_outcome")
    if outcome and outcome[0] == run_id:
        st.caption(f"Stop: {outcome[1]}")


controls()


# ---- live progress ---------------------------------------------------------------------
def status_lines(r: dict, now_status: str) -> None:
    left, right = st.columns([3, 2])
    left.markdown(f"**Status:** `{now_status}`" + (f" — {r['reason']}" if r["reason"] and not live else ""))
    left.markdown(mon.stage_strip(r["stage"], now_status))
    if r["stage_detail"] and r["stage"] != "done" and now_status in LIVE_STATUSES:
        left.text(f"{mon.stage_label(r['stage'])}: {r['stage_detail']}")
    if now_status == "waiting_approval":
        right.page_link("pages/6_Approvals.py", label="Edits wait for your approval: open Approvals",
                        icon=":material/front_hand:", query_params={"run": run_id})
    if now_status == mon.INTERRUPTED:
        right.warning("The trainer process is gone without a final status (killed?). Resume continues from "
                      "the last completed step.")


def resume_note(r: dict, now_status: str) -> None:
    """While a resumed trainer starts (importing its libraries takes seconds), say so; once
    it reports, redraw the whole page: its controls follow the live run."""
    info = st.session_state.get("resuming") or {}
    if info.get("run") != run_id:
        return
    if now_status in LIVE_STATUSES:
        st.session_state.pop("resuming", None)
        st.rerun()
    if process.process_alive(info["pid"]) and time.time() - info["at"] < RESUMING_S:
        st.info(f"Resuming: the trainer process (pid {info['pid']}) is starting…", icon=":material/hourglass_top:")
        return
    st.session_state.pop("resuming", None)
    st.error("The resumed trainer exited without continuing the run; its log says why.")
    show_text(launcher.read_log(db(), run_id)[-4000:], language="text")


def metrics(r: dict, steps: list, seed: float | None, usage: dict) -> None:
    total = r["total_steps"] or 0
    m = st.columns(3) + st.columns(3)  # two rows: labels stay whole on a 1024 px screen
    m[0].metric("Epoch", f"{r['epoch'] or 0} / {r['config'].get('num_epochs', '?')}")
    m[1].metric("Step", f"{r['step'] or 0} / {total}")
    m[2].metric("ETA", mon.human_duration(mon.eta_seconds(steps, total)) if live else "—",
                help="mean step duration × steps left (slow updates and the test add a little)")
    current = r["current_score"]
    m[3].metric("Selection (current)", "—" if current is None else f"{current:.3f}",
                None if current is None or seed is None else f"{current - seed:+.3f} vs seed")
    m[4].metric("Best selection", "—" if r["best_score"] is None else f"{r['best_score']:.3f}",
                f"step {r['best_step'] or 0}", delta_color="off")
    m[5].metric("Model calls", f"{mon.total_calls(usage):,}", f"${usage.get('cost_usd', 0):.4f}", delta_color="off",
                help="real (uncached) calls of all roles; cost from litellm's cost map (local/simulated: $0)")


def curves_figure(run: str, total: int):
    """The learning curves, built once per store version (500 steps take plotly ~0.3 s to
    validate), with plain lines on a long run: 1,000 markers on the lines took the browser
    longer to draw than the rest of the page."""
    steps = cached("steps", run) or []
    return plain_lines(mon.step_curves(steps, cached("seed_score", run), cached("tests", run) or {}, total),
                       len(steps))


def budget_figure(run: str, config: dict, total: int):
    return mon.budget_chart(cached("steps", run) or [], config, total)


def charts(r: dict) -> None:
    total = r["total_steps"] or 0
    tests = cached("tests", run_id) or {}
    st.plotly_chart(view(curves_figure, run_id, total), key="curves")
    if tests:
        st.caption(mon.tests_caption(tests))
    b, u = st.columns(2)
    with b:
        st.markdown("**Edit budget per step** (learning rate)")
        st.plotly_chart(view(budget_figure, run_id, r["config"], total), key="budget")
    with u:
        st.markdown("**Calls, tokens and cost per stage**")
        table.show(mon.usage_frame(cached("usage_by_stage", run_id) or []),
                   {"cost $": "$%.4f", "model time s": "%.1f"})
        st.caption(mon.tokens_caption(cached("usage", run_id) or {}))


def activity(r: dict, usage: dict) -> None:
    e, x = st.columns(2)
    with e:
        st.markdown("**Recent events**")
        table.show(mon.events_table(cached("events", run_id, 30) or []))
    with x:
        faults = cached("call_faults", run_id, FAULTS_SHOWN) or []
        st.markdown(mon.faults_heading(usage))
        if faults:
            st.caption(f"The newest {len(faults)}. error: the call failed; note: the call answered after "
                       "faults (retried, truncated, repaired, parts dropped) or with its prompt cut to fit the "
                       "model's context window.")
            if r.get("simulated"):
                st.caption("The simulated models inject faults on purpose (malformed replies, retries) to show "
                           "how the engine copes; the **cause** column says so.")
            table.show(mon.faults_table(faults))
        else:
            st.caption("None.")


@st.fragment(run_every=REFRESH_S if live or resuming else None)
def progress() -> None:
    r = cached("run", run_id)
    if r is None:  # deleted while the page was open
        st.warning(f"Run {run_id} is no longer in the store.")
        return
    now_status = mon.effective_status(r)
    if live and now_status not in LIVE_STATUSES:
        st.rerun()  # the run ended: redraw the whole page once, without the timer and with Resume
    resume_note(r, now_status)
    steps = cached("steps", run_id) or []
    seed, usage = cached("seed_score", run_id), cached("usage", run_id) or {}
    status_lines(r, now_status)
    metrics(r, steps, seed, usage)
    charts(r)
    activity(r, usage)


progress()

# Closed sections send nothing until opened: the skill and the log as highlighted code cost the
# browser its 1.5 MB code highlighter, which nothing else on this page needs.
with (box := lazy_expander("Configuration", "monitor_config")):
    if box.open:
        st.json(config, expanded=False)
with (box := lazy_expander("Best skill so far", "monitor_best_skill")):
    if box.open:
        show_text(cached("best_skill", run_id))
if status in mon.SHOWS_LOG:
    with (box := lazy_expander("Trainer log (last lines)", "monitor_log", expanded=status == "failed")):
        if box.open:
            show_text(launcher.read_log(db(), run_id)[-6000:]
                      or "(no log: the run was not started from the dashboard)", language="text")

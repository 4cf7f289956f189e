"""Approvals: a person approves, rejects or edits each proposed edit of the waiting step,
can undo a decision until the gate runs, and sees what the gate made of the decisions.

In approval mode the trainer pauses after selecting a step's edits and polls the store;
as soon as every edit of the step has a decision it applies the approved ones and runs
the gate. Decisions are control rows written through Store.decide and Store.undo_decision,
the only writes here. An edit has the same number here as on every other page.
"""
from __future__ import annotations

import json

import streamlit as st

from skillopt.ui.common import setup

setup("Approvals", icon=":material/front_hand:")

from skillopt.ui import approvals  # noqa: E402
from skillopt.ui import monitor as mon  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.labels import approval_edit_number  # noqa: E402
from skillopt.ui.common import db, pick_run, reader, show_text, simulated_banner  # noqa: E402
from skillopt.vocabulary import LIVE_STATUSES  # noqa: E402

REFRESH_S = 2


def decide(run_id: str, step: int, decisions: list[tuple[int, str, str | None]]) -> None:
    approvals.decide(db(), run_id, step, decisions)
    st.cache_data.clear()  # the badge and other pages must see the decision at once
    st.rerun()


def last_result(r, run_id: str) -> None:
    """What the gate made of the last step a person decided in full."""
    history = r.approval_history(run_id)
    waiting = {h["step"] for h in history if h["status"] == "pending"}
    decided = [h["step"] for h in history if h["step"] not in waiting]
    if not decided:
        return
    step = max(decided)
    s = next((x for x in r.steps(run_id) if x["step"] == step), None)
    (st.info if s is None else st.success)(approvals.gate_result(step, s), icon=":material/gavel:")
    st.page_link("pages/4_Gate_timeline.py", label="See the gate's decisions on the Gate timeline",
                 icon=":material/timeline:", query_params={"run": run_id})


@st.fragment(run_every=REFRESH_S)
def watch(run_id: str) -> None:
    """While a live run has nothing pending, show the gate's verdict on the last decided step
    and look for the next step's edits."""
    r = reader()
    run = r.run(run_id)
    if r.pending_approval_step(run_id) is not None or mon.effective_status(run) not in LIVE_STATUSES:
        st.rerun()
    last_result(r, run_id)
    st.caption(f"Run is {mon.effective_status(run)} at stage {mon.stage_label(run['stage'])}; "
               "this page shows the next step's edits as soon as the trainer proposes them.")


def edit_card(run_id: str, step: int, row: dict, others_pending: bool) -> None:
    edit = json.loads(row["edit_json"])
    idx, status = row["idx"], row["status"]
    with st.container(border=True):
        head, badge = st.columns([5, 1])
        head.markdown(approvals.edit_header(approval_edit_number(row, edit), edit))
        if edit.get("section"):  # model output: shown as plain text
            head.text(f"section: {edit['section']}")
        badge.markdown(f"{approvals.DECISION_ICONS.get(status, '')} **{status}**")
        if edit.get("target"):
            st.caption("Target text")
            show_text(edit["target"])
        if edit["op"] != "delete" and status == "edited":
            st.caption("Content, as a person rewrote it (this text is applied)")
            show_text(row["content"])
            st.caption("Content as the optimizer proposed it")
            show_text(edit.get("content"))
        elif edit["op"] != "delete":
            st.caption("Content")
            show_text(edit.get("content"))
        st.caption("Rationale (from the optimizer)")
        st.text(edit.get("rationale") or "(none given)")
        st.caption("Diff in context (this edit alone, applied to the current skill)")
        st.code(row["diff"] or "(no change)", language="diff")
        trajs = approvals.motivating_trajectories(reader(), run_id, step, edit)
        with st.expander(f"Trajectories that motivated it ({len(trajs)})"):
            if trajs:
                table.show(trajs, height=table.scrolled(len(trajs)))
            else:
                st.caption("No recorded trajectories for this edit's minibatches.")
        if status != "pending":
            if others_pending and st.button("Undo this decision", key=f"undo-{step}-{idx}", icon=":material/undo:",
                                            help="Possible until the last edit of the step is decided: then the "
                                                 "trainer applies the decisions and runs the gate."):
                approvals.undo(db(), run_id, step, idx)
                st.cache_data.clear()
                st.rerun()
            return
        a, rj, ed = st.columns(3)
        if a.button("Approve", key=f"approve-{step}-{idx}", icon=":material/check:", type="primary"):
            decide(run_id, step, [(idx, "approved", None)])
        if rj.button("Reject", key=f"reject-{step}-{idx}", icon=":material/close:"):
            decide(run_id, step, [(idx, "rejected", None)])
        if edit["op"] != "delete":
            with ed.popover("Edit, then approve", icon=":material/edit:"):
                text = st.text_area("Content", value=edit.get("content") or "", key=f"content-{step}-{idx}",
                                    height=150)
                if st.button("Approve edited", key=f"edited-{step}-{idx}", type="primary"):
                    if not text.strip():
                        st.error("The content must not be empty; reject the edit instead.")
                    else:
                        decide(run_id, step, [(idx, "edited", text)])


run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)
r = reader()
full = r.run(run_id)
history = r.approval_history(run_id)
if not full["config"].get("approval_mode"):
    st.info("This run does not use approval mode: its edits go straight to the gate. Start a run with "
            "**approval mode** on from the New run page to review edits here.", icon=":material/info:")
    st.stop()

step = r.pending_approval_step(run_id)
if step is None:
    st.success("Nothing waits for approval.", icon=":material/task_alt:")
    if mon.effective_status(full) in LIVE_STATUSES:
        watch(run_id)
    else:
        last_result(r, run_id)
else:
    last_result(r, run_id)  # what the gate made of the step decided before this one
    rows = r.approvals(run_id, step)
    pending = [row for row in rows if row["status"] == "pending"]
    st.subheader(f"Step {step}: {len(pending)} of {len(rows)} edits wait for your decision")
    st.caption("The trainer continues as soon as every edit has a decision: approved and edited edits form the "
               "candidate, which then has to pass the gate; rejected ones go to the rejected-edit buffer.")
    if st.button(f"Approve all {len(pending)} pending", icon=":material/check:", type="primary",
                 key=f"approve-all-{step}"):
        decide(run_id, step, [(row["idx"], "approved", None) for row in pending])
    with st.expander("Current skill (before these edits)"):
        show_text(r.skill_at(run_id, step - 1))
    for row in rows:
        edit_card(run_id, step, row, others_pending=bool(pending))

if history:
    st.subheader("Decisions so far, and the gate's verdict")
    table.show(approvals.history_table(history, r.steps(run_id)),
               {"selection before": "%.3f", "selection with the edits": "%.3f"})

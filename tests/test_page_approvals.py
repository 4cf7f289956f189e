"""Approvals page: a real simulated run in approval mode waits, the page decides, the run goes on."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt import runner
from skillopt.config import load_config
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from tests.helpers import tables

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/6_Approvals.py"
RUN_ID = "approval-run"
EDITED = "- HUMAN EDIT: orders to a PO box always go by post."


def page(run_id: str) -> AppTest:
    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)  # app.py stays the entrypoint, so page links resolve as in the browser
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def wait_for(predicate, what: str, limit_s: float = 60.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = predicate()
        if value is not None and value is not False:
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture
def approval_run(tmp_path, monkeypatch):
    """A simulated run in approval mode, training in a thread of this process (the trainer polls the store)."""
    db = tmp_path / "approval.db"
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", "num_epochs=1",
                                "max_steps_per_epoch=2", "approval_mode=true", "approval_poll_s=0.02",
                                "lr_scheduler=constant", "learning_rate=6"])
    outcome: list = []

    def train():
        store = Store(db)
        try:
            outcome.append(runner.start(store, "sim-rulebook", config, run_id=RUN_ID, name="approval run")[1])
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            outcome.append(exc)
        finally:
            store.close()

    thread = threading.Thread(target=train, daemon=True)
    thread.start()
    yield db, thread, outcome
    if thread.is_alive():
        store = Store(db)
        store.request_stop(RUN_ID)
        store.close()
        thread.join(30)


def pending_step(db: Path):
    if not db.exists():
        return None
    reader = Reader(db)
    try:
        return reader.pending_approval_step(RUN_ID)
    except Exception:  # tables not created yet
        return None
    finally:
        reader.close()


def step_done(db: Path, step: int):
    reader = Reader(db)
    try:
        return any(s["step"] == step for s in reader.steps(RUN_ID)) or None
    finally:
        reader.close()


def test_decisions_from_the_page_drive_the_run(approval_run):
    db, thread, outcome = approval_run
    assert wait_for(lambda: pending_step(db), "step 1 to wait for approval") == 1
    reader = Reader(db)
    rows = reader.approvals(RUN_ID, 1)
    at = page(RUN_ID)
    assert at.subheader[0].value == f"Step 1: {len(rows)} of {len(rows)} edits wait for your decision"
    codes = [c.value.strip() for c in at.code]
    for row in rows:
        assert row["diff"].strip() in codes  # each edit's diff in context
        assert json.loads(row["edit_json"])["content"] in codes
    # The trajectories shown for a failure edit are the step's failed train rollouts of its minibatches.
    failures = {i for mb in reader.reflections(RUN_ID, 1) if mb["kind"] == "failure"
                for i in json.loads(mb["item_ids"])}
    shown = tables(at)[0]
    assert len(shown) and set(shown["item"]) <= failures and (shown["hard"].astype(float) < 1).all()

    at.button(key="approve-all-1").click().run()
    assert not at.exception
    assert {r["status"] for r in reader.approvals(RUN_ID, 1)} == {"approved"}
    wait_for(lambda: step_done(db, 1), "step 1 to pass the gate")
    applied = [e for e in reader.edits(RUN_ID, 1) if e["status"] == "applied"]
    assert applied and {e["approval"] for e in applied} == {"approved"}
    assert {e["gate"] for e in applied} <= {"accepted", "rejected"}

    assert wait_for(lambda: pending_step(db), "step 2 to wait for approval") == 2
    rows = reader.approvals(RUN_ID, 2)
    assert len(rows) >= 2
    at = page(RUN_ID)
    at.text_area(key="content-2-0").input(EDITED)
    at.button(key="edited-2-0").click().run()
    assert not at.exception
    at.button(key="reject-2-1").click().run()
    # A decision can be taken back while another edit of the step still waits.
    at.button(key="undo-2-1").click().run()
    assert not at.exception
    assert reader.approvals(RUN_ID, 2)[1]["status"] == "pending"
    at.button(key="reject-2-1").click().run()
    for row in rows[2:]:
        at.button(key=f"approve-2-{row['idx']}").click().run()
    assert not at.exception
    decided = {r["idx"]: (r["status"], r["content"]) for r in reader.approvals(RUN_ID, 2)}
    assert decided[0] == ("edited", EDITED) and decided[1][0] == "rejected"
    thread.join(60)
    assert outcome == ["completed"]
    recorded = {e["approval"] for e in reader.edits(RUN_ID, 2) if e["approval"]}
    assert recorded == {"edited", "rejected"} | ({"approved"} if len(rows) > 2 else set())
    candidate = reader.version(RUN_ID, 2, "candidate")
    assert candidate is not None and EDITED in candidate  # the person's text is what the gate judged
    rejected = json.loads(rows[1]["edit_json"])["content"]
    assert rejected not in candidate
    # One numbering: the edit shown as "Edit n" for approval is edit n of the step's record.
    edits = {e["idx"]: e for e in reader.edits(RUN_ID, 2)}
    for row in rows:
        proposed = json.loads(row["edit_json"])
        recorded = edits[proposed["number"]]
        assert (recorded["op"], recorded["target"]) == (proposed["op"], proposed["target"])
    assert edits[json.loads(rows[0]["edit_json"])["number"]]["content"] == EDITED

    at = page(RUN_ID)
    assert any("Nothing waits for approval" in s.value for s in at.success)
    history = tables(at)[0]
    assert list(history["step"]) == ["1", "2"]
    assert history.set_index("step").loc["2", "edited"] == "1" and history.set_index("step").loc["2", "rejected"] == "1"


def test_runs_without_approval_mode_say_so(sim_db_env):
    at = page(sim_db_env[1])
    assert any("does not use approval mode" in i.value for i in at.info)
    assert not at.button


def test_icons_and_header_use_the_vocabulary():
    from skillopt.ui import approvals
    from skillopt.vocabulary import APPROVALS

    assert set(approvals.DECISION_ICONS) == set(APPROVALS)
    header = approvals.edit_header(1, {"op": "add", "source": "failure", "support": 3})
    assert header == "**Edit 1: `add`** · source failure · support 3"
    # Model-written words outside the vocabulary never reach the markdown.
    assert approvals.edit_header(2, {"op": "**x**", "source": "<b>"}) == "**Edit 2: `edit`** · source  · support 1"
    history = [{"step": 1, "status": "approved", "n": 2}, {"step": 1, "status": "rejected", "n": 1},
               {"step": 2, "status": "edited", "n": 1}, {"step": 3, "status": "pending", "n": 2}]
    steps = [{"step": 1, "decision": "accept", "current_score": 0.5, "candidate_score": 0.6}]
    assert approvals.history_table(history, steps) == [
        {"step": 1, "approved": 2, "rejected": 1, "gate": "accept", "selection before": 0.5,
         "selection with the edits": 0.6},
        {"step": 2, "edited": 1, "gate": "gate running", "selection before": None, "selection with the edits": None},
        {"step": 3, "pending": 2, "gate": "waits for decisions", "selection before": None,
         "selection with the edits": None}]
    assert approvals.gate_result(1, steps[0]) == "Step 1: the gate accepted the candidate: selection 0.500 → 0.600."

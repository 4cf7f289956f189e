"""Approval mode: a person approves some edits and rejects others through the store."""
from __future__ import annotations

import json
import threading
import time

from tests.helpers import run_sim
from skillopt.store.reader import Reader
from skillopt.store.writer import Store


def start_approval_run(db) -> threading.Thread:
    """A one-step simulated run in approval mode, training in a thread (it polls the store)."""
    worker = threading.Thread(target=run_sim, args=(db, "num_epochs=1", "max_steps_per_epoch=1", "approval_mode=true",
                                                    "approval_poll_s=0.05", "lr_scheduler=constant", "learning_rate=6"))
    worker.start()
    return worker


def test_candidate_holds_exactly_the_approved_edits(tmp_path):
    db = tmp_path / "a.db"
    worker = start_approval_run(db)
    deadline = time.time() + 60
    pending = []
    while time.time() < deadline and not pending:
        time.sleep(0.05)
        if db.exists():
            pending = Store(db).query("SELECT * FROM approvals WHERE status = 'pending'")
    assert len(pending) >= 3, "the step should wait with several edits"
    run_id = pending[0]["run_id"]
    assert Reader(db).run(run_id)["status"] == "waiting_approval"
    store = Store(db)
    edits = [json.loads(p["edit_json"]) for p in pending]
    store.decide(run_id, 1, 0, "approved")
    store.decide(run_id, 1, 1, "rejected")
    edited = "- Human-written rule: double-check the route before answering."
    store.decide(run_id, 1, 2, "edited", edited)
    for p in pending[3:]:
        store.decide(run_id, 1, p["idx"], "rejected")
    worker.join(60)
    assert not worker.is_alive()
    r = Reader(db)
    candidate = r.version(run_id, 1, "candidate")
    assert edits[0]["content"] in candidate
    assert edits[1]["content"] not in candidate
    assert edited in candidate and edits[2]["content"] not in candidate
    for e in edits[3:]:
        assert e["content"] not in candidate
    human = [b for b in r.rejected_buffer(run_id) if b["reason"] == "human"]
    assert {json.loads(b["edit_json"])["content"] for b in human} == {e["content"] for e in edits if
                                                                       e is edits[1] or e in edits[3:]}
    outcomes = {e["content"]: e["approval"] for e in r.edits(run_id, 1) if e["approval"]}
    assert outcomes[edits[0]["content"]] == "approved" and outcomes[edits[1]["content"]] == "rejected"
    assert outcomes[edited] == "edited" and edits[2]["content"] not in outcomes  # the person's text is stored
    assert r.run(run_id)["status"] == "completed"


def test_stop_while_waiting_for_approval(tmp_path):
    db = tmp_path / "s.db"
    worker = start_approval_run(db)
    deadline = time.time() + 60
    while time.time() < deadline:
        time.sleep(0.05)
        if db.exists() and Store(db).query("SELECT 1 FROM runs WHERE status = 'waiting_approval'"):
            break
    run_id = Store(db).query("SELECT id FROM runs")[0][0]
    Store(db).request_stop(run_id)
    worker.join(30)
    assert not worker.is_alive()
    assert Reader(db).run(run_id)["status"] == "stopped"


def wait_for_pending(db) -> list:
    deadline = time.time() + 60
    pending = []
    while time.time() < deadline and not pending:
        time.sleep(0.05)
        if db.exists():
            pending = Store(db).query("SELECT * FROM approvals WHERE status = 'pending'")
    return pending


def test_the_record_is_that_of_the_apply_after_approval(tmp_path):
    """A person's version of an edit is what is stored, with the status applying it got in the
    candidate: here it repeats an approved edit, so it is a duplicate that never reaches the gate."""
    db = tmp_path / "a.db"
    worker = start_approval_run(db)
    pending = wait_for_pending(db)
    assert len(pending) >= 3
    run_id = pending[0]["run_id"]
    edits = [json.loads(p["edit_json"]) for p in pending]
    store = Store(db)
    store.decide(run_id, 1, 0, "approved")
    store.decide(run_id, 1, 1, "edited", edits[0]["content"])  # the person's text repeats edit 0
    for p in pending[2:]:
        store.decide(run_id, 1, p["idx"], "rejected")
    worker.join(60)
    assert not worker.is_alive()
    r = Reader(db)
    rows = {e["approval"]: e for e in r.edits(run_id, 1) if e["approval"] in ("approved", "edited")}
    gate = {"accept": "accepted", "accept_new_best": "accepted", "reject": "rejected"}[r.steps(run_id)[0]["decision"]]
    assert (rows["approved"]["status"], rows["approved"]["gate"]) == ("applied", gate)
    edited = rows["edited"]
    assert edited["content"] == edits[0]["content"] and edited["target"] == (edits[1]["target"] or "")
    assert (edited["status"], edited["gate"]) == ("duplicate", "")  # before approval it applied
    assert "content already in the skill" in edited["note"] and "edited by a person" in edited["note"]
    # An edit a person rejected keeps the status of the apply they were shown, and says it left the candidate.
    rejected = [e for e in r.edits(run_id, 1) if e["approval"] == "rejected"]
    assert rejected and all(e["status"] == "applied" and e["gate"] == "" for e in rejected)
    assert all(e["note"].endswith("rejected by a person: not part of the candidate") for e in rejected)
    assert r.steps(run_id)[0]["n_applied"] == 1  # the candidate holds edit 0 only
    # Each of a person's rejections is a decision on that edit alone: each blocks its own repeat.
    human = [b for b in r.rejected_buffer(run_id) if b["reason"] == "human"]
    assert len(human) == len(rejected) and all(json.loads(b["companions_json"]) == [] for b in human)

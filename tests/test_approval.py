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
    assert outcomes[edits[2]["content"]] == "edited"
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

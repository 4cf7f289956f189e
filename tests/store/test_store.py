import sqlite3
import time

import pytest

from skillopt import events as ev
from skillopt.models.llm import CallRecord
from skillopt.store.reader import Reader
from skillopt.store.schema import migrations
from skillopt.store.writer import Store
from skillopt.tasks.task import Item
from skillopt.vocabulary import FINAL_APPROVALS, FINAL_STATUSES, LIVE_STATUSES


def make(tmp_path):
    store = Store(tmp_path / "s.db")
    store.create_run(run_id="r1", name="n", task="t", task_path="/t", config_json='{"gate_mode": "strict"}',
                     simulated=True, items=[Item("a", {"q": "x"}, "y", "train")], seed_skill="# Seed\n")
    return store


def test_wal_and_migrations_are_idempotent(tmp_path):
    store = make(tmp_path)
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    applied = [m.name for m in migrations.applied(store.db)]
    Store(tmp_path / "s.db")  # opening again applies nothing twice
    assert [m.name for m in migrations.applied(store.db)] == applied == [
        "m001_initial", "m002_errors_notes_and_dropped_edits", "m003_skill_lift", "m004_process_identity",
        "m005_sweeps", "m006_pins_and_integrations", "m007_sample_intervals", "m008_dashboard_indexes",
        "m009_lift_breakdown_by"]


def test_m002_moves_old_notes_out_of_the_error_column(tmp_path):
    """A database written before llm_calls had a note column: notes on successful calls
    were stored as errors. Opening it with this version splits them apart."""
    import sqlite_utils

    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrations.apply(db, stop_before="m002_errors_notes_and_dropped_edits")
    rows = [("retried: timeout: slow | server: 500; truncated: reply reached max_tokens", ),
            ("timeout: no reply after 4 retries", ), ("retried: server: 502; invalid_json: not an object", ),
            ("invalid_json: prose (repair asked)", ), ("", )]
    db.conn.executemany("INSERT INTO llm_calls (run_id, error) VALUES ('r', ?)", rows)
    db.conn.commit()
    db.close()
    store = Store(path)
    got = [tuple(r) for r in store.query("SELECT error, note FROM llm_calls ORDER BY id")]
    assert got == [("", "retried: timeout: slow | server: 500; truncated: reply reached max_tokens"),
                   ("timeout: no reply after 4 retries", ""),
                   ("invalid_json: not an object", "retried: server: 502"),
                   ("", "invalid_json: prose (repair asked)"), ("", "")]


def test_reader_is_read_only(tmp_path):
    make(tmp_path)
    reader = Reader(tmp_path / "s.db")
    assert reader.run("r1")["seed_skill"] == "# Seed\n"
    with pytest.raises(sqlite3.OperationalError):
        reader.conn.execute("DELETE FROM runs")


def test_reader_on_missing_database_is_a_user_error(tmp_path):
    from skillopt.errors import UserError

    with pytest.raises(UserError):
        Reader(tmp_path / "none.db")


def test_stop_request_round_trip(tmp_path):
    store = make(tmp_path)
    store.set_status("r1", "running")
    assert not store.stop_requested("r1")
    store.request_stop("r1")
    assert store.stop_requested("r1") and store.run("r1")["status"] == "stopping"
    store.clear_stop("r1")
    assert not store.stop_requested("r1")


def test_caches_and_call_records(tmp_path):
    store = make(tmp_path)
    assert store.cache_get("k") is None
    store.cache_put("k", "m", {"text": "hi"})
    assert store.cache_get("k") == {"text": "hi"}
    store.record_call(CallRecord("r1", 1, "target", "rollout", "sim/target", 10, 2, 0.0, 0.01, False, "", 1,
                                 time.time()))
    store.record_call(CallRecord("r1", 1, "target", "rollout", "sim/target", 10, 2, 0.0, 0.0, True, "", 0,
                                 time.time()))
    store.flush()  # call rows are buffered until the next transaction
    usage = Reader(tmp_path / "s.db").usage("r1")
    assert usage["target_calls"] == 1 and usage["cache_hits"] == 1 and usage["prompt_tokens"] == 20


def test_usage_counts_errors_and_notes_apart(tmp_path):
    """A call that answered after faults carries a note and is no error; only a failed call
    is counted and listed as an error."""
    store = make(tmp_path)
    for error, note in (("", "retried: rate_limit: busy"), ("", "truncated: reply reached max_tokens"),
                        ("timeout: read timed out", ""), ("", "")):
        store.record_call(CallRecord("r1", 1, "target", "rollout", "m/x", 10, 2, 0.0, 0.01, False, error, 1,
                                     time.time(), note=note))
    store.flush()
    reader = Reader(tmp_path / "s.db")
    usage = reader.usage("r1")
    assert (usage["errors"], usage["notes"]) == (1, 2)
    (stage,) = reader.usage_by_stage("r1")
    assert (stage["calls"], stage["errors"], stage["notes"]) == (4, 1, 2)
    assert [c["error"] for c in reader.call_errors("r1")] == ["timeout: read timed out"]
    assert [(c["error"], c["note"]) for c in reader.call_faults("r1")] == [
        ("timeout: read timed out", ""), ("", "truncated: reply reached max_tokens"),
        ("", "retried: rate_limit: busy")]


def test_decide_rejects_unknown_status(tmp_path):
    from skillopt.errors import UserError

    store = make(tmp_path)
    for status in ("maybe", "pending"):  # only a final decision may be recorded
        with pytest.raises(UserError):
            store.decide("r1", 1, 0, status)
    for status in FINAL_APPROVALS:
        store.decide("r1", 1, 0, status)


def test_set_status_keeps_the_pid_and_stamps_the_finish(tmp_path):
    store = make(tmp_path)
    store.set_status("r1", "running", pid=4242)
    run = store.run("r1")
    assert (run["status"], run["pid"], run["finished_at"]) == ("running", 4242, None) and run["started_at"]
    store.set_status("r1", "failed", "boom")
    run = store.run("r1")
    assert (run["status"], run["reason"], run["pid"]) == ("failed", "boom", 4242) and run["finished_at"]
    assert [e["message"] for e in Reader(tmp_path / "s.db").events("r1")][:2] == ["failed: boom", "running"]


def test_stage_changes_set_waiting_approval_but_keep_stopping(tmp_path):
    store = make(tmp_path)
    store.set_status("r1", "running")
    store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="approval"))
    assert (store.run("r1")["status"], store.run("r1")["stage"]) == ("waiting_approval", "approval")
    store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="gate"))
    assert (store.run("r1")["status"], store.run("r1")["stage"]) == ("running", "gate")
    store.request_stop("r1")
    store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="approval"))
    assert store.run("r1")["status"] == "stopping"


def test_live_pids_lists_exactly_the_live_runs(tmp_path):
    store = make(tmp_path)
    statuses = (*LIVE_STATUSES, *FINAL_STATUSES)
    for n, status in enumerate(statuses):
        store.create_run(run_id=status, name="", task="t", task_path="/t", config_json="{}", simulated=True,
                         items=[], seed_skill="")
        store.set_status(status, status, pid=1000 + n)
    store.delete_run("r1")
    live = Reader(tmp_path / "s.db").live_pids()
    assert live == {status: 1000 + n for n, status in enumerate(statuses) if status in LIVE_STATUSES}


def test_delete_run_removes_every_row(tmp_path):
    store = make(tmp_path)
    store.delete_run("r1")
    assert store.run("r1") is None
    assert store.query("SELECT COUNT(*) FROM items")[0][0] == 0

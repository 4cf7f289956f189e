import sqlite3
import time

import pytest

from skillopt.models.llm import CallRecord
from skillopt.store.reader import Reader
from skillopt.store.schema import migrations
from skillopt.store.writer import Store
from skillopt.tasks.task import Item


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
    assert [m.name for m in migrations.applied(store.db)] == applied == ["m001_initial"]


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
    usage = Reader(tmp_path / "s.db").usage("r1")
    assert usage["target_calls"] == 1 and usage["cache_hits"] == 1 and usage["prompt_tokens"] == 20


def test_decide_rejects_unknown_status(tmp_path):
    from skillopt.errors import UserError

    store = make(tmp_path)
    with pytest.raises(UserError):
        store.decide("r1", 1, 0, "maybe")


def test_delete_run_removes_every_row(tmp_path):
    store = make(tmp_path)
    store.delete_run("r1")
    assert store.run("r1") is None
    assert store.query("SELECT COUNT(*) FROM items")[0][0] == 0

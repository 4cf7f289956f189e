"""Buffered store writes: call rows, response-cache and evaluation-cache entries wait in memory
and are written inside the transaction of the next event (one per event, not three per call).

Checked here: reads see buffered entries (nothing is paid twice before a flush), one COMMIT per
event however many calls came before it, an entry leaves the buffer only once its transaction
has committed, close and interpreter exit flush, concurrent writers lose nothing, and a SIGKILL
loses only what was buffered since the last event.
"""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from skillopt import events as ev
from skillopt.models.llm import CallRecord
from skillopt.store.pending import Pending
from skillopt.store.writer import Store
from skillopt.tasks.task import Evaluation, Trajectory

ROOT = Path(__file__).resolve().parents[2]


def call(step: int = 1, note: str = "") -> CallRecord:
    return CallRecord("r1", step, "target", "rollout", "sim/target", 10, 2, 0.0, 0.01, False, "", 1, time.time(),
                      note=note)


def traj(output: str = "yes") -> Trajectory:
    return Trajectory(item_id="a", prompt="Q?", output=output, expected="yes",
                      evaluation=Evaluation(hard=1.0, soft=0.75, feedback="right"))


def on_disk(db: Path) -> dict[str, int]:
    """Rows other connections see (what a reader or a resumed run would find)."""
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("llm_calls", "llm_cache", "eval_cache")}
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "s.db")
    s.create_run(run_id="r1", name="n", task="t", task_path="/t", config_json="{}", simulated=True, items=[],
                 seed_skill="# Seed\n")
    yield s
    s.close()


def test_buffered_entries_are_read_back_before_they_reach_the_file(store):
    store.cache_put("k", "m", {"text": "hi", "prompt_tokens": 3})
    store.eval_put("e", traj())
    store.record_call(call())
    assert on_disk(store.path) == {"llm_calls": 0, "llm_cache": 0, "eval_cache": 0}
    assert store.cache_get("k") == {"text": "hi", "prompt_tokens": 3}
    buffered = store.eval_get("e")
    assert (buffered["output"], buffered["hard"], buffered["soft"], buffered["feedback"], buffered["prompt"]) == \
        ("yes", 1.0, 0.75, "right", "Q?")
    store.flush()
    assert on_disk(store.path) == {"llm_calls": 1, "llm_cache": 1, "eval_cache": 1}
    row = store.eval_get("e")  # now from the file: the same fields under the same names
    assert isinstance(row, sqlite3.Row) and {k: row[k] for k in row.keys()} == buffered
    assert store.cache_get("k") == {"text": "hi", "prompt_tokens": 3}


def test_many_evaluations_are_read_in_one_query_from_the_buffer_and_the_file(store, monkeypatch):
    from skillopt.store import pending
    monkeypatch.setattr(pending, "CHUNK", 3)  # more keys than one query takes
    for i in range(5):
        store.eval_put(f"file{i}", traj())
    store.flush()
    store.eval_put("buffered", traj())
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    keys = ["buffered", "missing", *(f"file{i}" for i in range(5)), "file0"]
    found = store.eval_get_many(keys)
    assert set(found) == {"buffered", *(f"file{i}" for i in range(5))}
    assert all(found[k]["output"] == "yes" and found[k]["hard"] == 1.0 for k in found)
    assert isinstance(found["buffered"], dict) and isinstance(found["file0"], sqlite3.Row)
    selects = [s for s in statements if s.startswith("SELECT")]
    assert len(selects) == 2  # 6 keys not in the buffer (a repeat asked once), 3 a query


def test_a_cached_value_cannot_be_changed_through_what_a_read_returned(store):
    store.cache_put("k", "m", {"text": "hi"})
    store.cache_get("k")["text"] = "changed"
    assert store.cache_get("k") == {"text": "hi"}
    store.eval_put("e", traj())
    store.eval_get("e")["hard"] = 0.0
    assert store.eval_get("e")["hard"] == 1.0


def test_one_transaction_per_event_however_many_calls_came_before(store):
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    for i in range(40):
        store.record_call(call())
        store.cache_put(f"k{i}", "m", {"text": str(i)})
        store.eval_put(f"e{i}", traj(str(i)))
    assert not [s for s in statements if s == "COMMIT"]  # nothing written yet
    store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="gate"))
    store.conn.set_trace_callback(None)
    assert [s for s in statements if s.startswith(("BEGIN", "COMMIT"))] == ["BEGIN IMMEDIATE", "COMMIT"]
    assert on_disk(store.path) == {"llm_calls": 40, "llm_cache": 40, "eval_cache": 40}
    assert not store._pending  # written, so no longer buffered


def test_a_rolled_back_transaction_keeps_the_entries_for_the_next_one(store):
    store.record_call(call())
    store.cache_put("k", "m", {"text": "hi"})
    with pytest.raises(RuntimeError):
        with store.tx():
            raise RuntimeError("the event failed")
    assert on_disk(store.path)["llm_calls"] == 0 and store.cache_get("k") == {"text": "hi"}
    store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="gate"))
    assert on_disk(store.path) == {"llm_calls": 1, "llm_cache": 1, "eval_cache": 0}


def test_an_entry_put_again_during_a_flush_stays_for_the_next_one(tmp_path):
    pending = Pending()
    conn = Store(tmp_path / "p.db").conn
    pending.put_cache("k", "m", {"text": "old"})
    pending.add_call(("r1",) + (None,) * 13)
    written = pending.write(conn)
    pending.put_cache("k", "m", {"text": "new"})  # another thread, before the COMMIT
    pending.add_call(("r2",) + (None,) * 13)
    pending.forget(written)
    assert pending.get_cache("k") == {"text": "new"}
    again = pending.write(conn)
    assert (again.calls, len(again.cache)) == (1, 1)


def test_close_flushes(tmp_path):
    store = Store(tmp_path / "s.db")
    store.record_call(call())
    store.eval_put("e", traj())
    store.close()
    assert on_disk(tmp_path / "s.db") == {"llm_calls": 1, "llm_cache": 0, "eval_cache": 1}


def run_script(body: str, db: Path) -> int:
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from skillopt import events as ev
        from skillopt.models.llm import CallRecord
        from skillopt.store.writer import Store
        store = Store({str(db)!r})
        def call():
            store.record_call(CallRecord("r1", 1, "target", "rollout", "m", 1, 1, 0.0, 0.0, False, "", 1, time.time()))
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120).returncode


def test_an_interpreter_exit_without_close_flushes(tmp_path):
    """`skillopt eval` records no event: its cache entries must still reach the file."""
    db = tmp_path / "s.db"
    assert run_script("""
        call()
        store.cache_put("k", "m", {"text": "paid for"})
        sys.exit(0)
    """, db) == 0
    assert on_disk(db) == {"llm_calls": 1, "llm_cache": 1, "eval_cache": 0}


def test_a_sigkill_loses_only_what_was_buffered_since_the_last_event(tmp_path):
    db = tmp_path / "s.db"
    code = run_script("""
        store.create_run(run_id="r1", name="n", task="t", task_path="/t", config_json="{}", simulated=True,
                         items=[], seed_skill="")
        for i in range(3):
            call()
            store.cache_put(f"before{i}", "m", {"text": "x"})
        store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="gate"))
        call()
        store.cache_put("after", "m", {"text": "x"})
        os.kill(os.getpid(), signal.SIGKILL)
    """, db)
    assert code == -signal.SIGKILL
    assert on_disk(db) == {"llm_calls": 3, "llm_cache": 3, "eval_cache": 0}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert not conn.execute("SELECT 1 FROM llm_cache WHERE key = 'after'").fetchall()
    finally:
        conn.close()


def test_concurrent_writers_and_events_lose_and_duplicate_nothing(store):
    threads, per_thread = 8, 150
    done = threading.Event()

    def worker(t: int) -> None:
        for i in range(per_thread):
            store.record_call(call(step=t))
            store.cache_put(f"{t}-{i}", "m", {"text": "x"})
            assert store.cache_get(f"{t}-{i}") == {"text": "x"}  # buffered or written, never missing
            store.eval_put(f"{t}-{i}", traj())
            assert store.eval_get(f"{t}-{i}") is not None

    def events() -> None:
        while not done.is_set():
            store(ev.StageChanged(run_id="r1", step=1, epoch=1, stage="rollout"))

    recorder = threading.Thread(target=events)
    recorder.start()
    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    done.set()
    recorder.join()
    store.flush()
    n = threads * per_thread
    assert on_disk(store.path) == {"llm_calls": n, "llm_cache": n, "eval_cache": n}
    per_step = store.query("SELECT step, COUNT(*) FROM llm_calls GROUP BY step")
    assert sorted(tuple(r) for r in per_step) == [(t, per_thread) for t in range(threads)]

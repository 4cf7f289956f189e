"""The switch to WAL waits for another process that holds a fresh file."""
import sqlite3
import threading
import time

import pytest

from skillopt.store.journal import use_wal
from skillopt.store.writer import Store


def hold_fresh_file(path, seconds: float) -> threading.Thread:
    """Another writer creating its table in a file still in rollback mode, for `seconds`."""
    held = threading.Event()

    def hold():
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE other (x)")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    return thread


def test_a_store_opened_while_another_writer_holds_the_fresh_file_waits_and_ends_in_wal(tmp_path):
    path = tmp_path / "runs.db"
    holder = hold_fresh_file(path, 0.3)
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # what SQLite does without the wait
        probe = sqlite3.connect(path, isolation_level=None)
        probe.execute("PRAGMA busy_timeout = 5000")
        try:
            probe.execute("PRAGMA journal_mode = WAL")
        finally:
            probe.close()
    store = Store(path)
    holder.join()
    try:
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        tables = {row[0] for row in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"other", "runs"} <= tables  # nothing the other writer made was lost
    finally:
        store.close()


def test_a_lock_held_past_the_timeout_is_still_the_locked_error(tmp_path):
    path = tmp_path / "runs.db"
    holder = hold_fresh_file(path, 0.5)
    conn = sqlite3.connect(path, isolation_level=None)
    started = time.monotonic()
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            use_wal(conn, 0.1)
        assert time.monotonic() - started < 0.4  # it gave up at its timeout, not at the release
    finally:
        conn.close()
        holder.join()

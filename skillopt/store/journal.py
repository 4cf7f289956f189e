"""Switching a database file to WAL when other processes may be opening it too.

Changing the journal mode needs the file to itself, and SQLite answers "database is locked"
at once, without calling the busy handler, while another connection holds any lock on a
file still in rollback mode (say, a second trainer creating the schema of a fresh file).
So the switch is retried here for as long as the busy timeout would have waited.
"""
from __future__ import annotations

import sqlite3
import time

_FIRST_PAUSE_S = 0.005  # a schema transaction takes milliseconds; start just above that


def use_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Put the file behind `conn` in WAL mode, waiting up to `timeout_s` for other connections."""
    deadline = time.monotonic() + timeout_s
    pause = _FIRST_PAUSE_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)  # back off, but keep noticing a release within a quarter second

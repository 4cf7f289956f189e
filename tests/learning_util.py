"""What the learning bench's tests share: the bench folder on sys.path (as when a bench runs),
one small simulated run measured by the bench, and raw access to its store."""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

import learning  # noqa: E402

SIM = ("target_model=sim/target", "optimizer_model=sim/learner")
# Small enough to take about a second; chosen so the run accepts and rejects or skips steps and
# leaves edits unapplied (clipped by a small edit budget), or the comparisons that use it test nothing.
SIM_RUN = (*SIM, "num_epochs=2", "batch_size=20", "learning_rate=2", "min_learning_rate=1")


def measure_sim(tmp_path_factory) -> tuple[Path, dict]:
    """(store, the bench's row) of SIM_RUN on sim-rulebook, in a fresh database."""
    db = tmp_path_factory.mktemp("learning") / "runs.db"
    return db, learning.measure(db, "sim-rulebook", SIM_RUN)


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def copy_db(db: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy.db"
    src, dst = sqlite3.connect(db), sqlite3.connect(out)
    src.backup(dst)  # WAL-safe copy: the live file alone may lack committed pages
    src.close()
    dst.close()
    return out


def edited_copy(measured: tuple[Path, dict], tmp_path: Path, *statements: tuple[str, tuple]) -> Path:
    """A copy of a measured run's store with `statements` (SQL, parameters) applied to it."""
    db = copy_db(measured[0], tmp_path)
    conn = sqlite3.connect(db)
    with conn:
        for sql, params in statements:
            conn.execute(sql, params)
    conn.close()
    return db

"""Concurrency: two trainer processes write simulated runs into one fresh database while the
dashboard reads it (the Reader, the pages' cached queries and AppTest renders of Monitor).
No "database is locked" reaches a reader, and no reader ever sees half of a step.

Half a step would be: a steps row without its 'current' skill version, edits or gate
decision, or runs.step ahead of the steps table. Each check is ONE SQL statement, so it
reads one snapshot: a violation there is a torn write, not two reads that straddle a commit.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from skillopt.store.reader import Reader

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
WRITE_S = 25  # how long each writer keeps starting runs

WRITER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from skillopt import runner
from skillopt.config import load_config
from skillopt.store.writer import Store

db, seconds, tag = sys.argv[2], float(sys.argv[3]), sys.argv[4]
deadline, n = time.monotonic() + seconds, 0
while time.monotonic() < deadline:
    store = Store(db)  # a fresh connection per run, as separate `train` commands would have
    config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", "num_epochs=2",
                                "max_steps_per_epoch=3", "batch_size=20", f"seed={n}", "slow_update_samples=10"])
    runner.start(store, "sim-rulebook", config, name=f"{tag} {n}")
    store.close()
    n += 1
print(n)
"""

TORN = {
    "step without its current skill version":
        "SELECT s.run_id, s.step FROM steps s LEFT JOIN skill_versions v ON v.run_id = s.run_id "
        "AND v.step = s.step AND v.kind = 'current' WHERE v.run_id IS NULL",
    "step without all its edits":
        "SELECT s.run_id, s.step FROM steps s WHERE s.n_proposed != "
        "(SELECT COUNT(*) FROM edits e WHERE e.run_id = s.run_id AND e.step = s.step)",
    "gated step without its gate decision":
        "SELECT s.run_id, s.step FROM steps s WHERE s.decision != 'skip' AND NOT EXISTS "
        "(SELECT 1 FROM gate_decisions g WHERE g.run_id = s.run_id AND g.step = s.step AND g.kind = 'step')",
    "runs.step ahead of the steps table":
        "SELECT r.id, r.step FROM runs r WHERE r.step > "
        "COALESCE((SELECT MAX(s.step) FROM steps s WHERE s.run_id = r.id), 0)",
    "test score without its tests row":
        "SELECT r.id FROM runs r WHERE r.best_test IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM tests t WHERE t.run_id = r.id AND t.which = 'best')",
}


class ReaderLoop:
    """The dashboard's read paths in a loop, collecting every error and torn read."""

    def __init__(self, db: Path):
        self.db, self.stop = db, threading.Event()
        self.errors: list[str] = []
        self.torn: list[str] = []
        self.reads = 0
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        from skillopt.ui.common import cached

        reader = None
        while not self.stop.is_set():
            try:
                if reader is None:
                    if not self.db.exists():
                        continue
                    reader = Reader(self.db)
                self.read_once(reader, cached)
            except Exception as exc:  # noqa: BLE001 - every failure of a read is what this test looks for
                if "no such table" in str(exc):  # the first writer has not created the schema yet
                    continue
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def read_once(self, reader: Reader, cached) -> None:
        for name, sql in TORN.items():
            rows = reader.q(sql)
            if rows:
                self.torn.append(f"{name}: {rows[:3]}")
        runs = reader.runs()
        for run in runs[:3]:
            reader.run(run["id"]), reader.steps(run["id"]), reader.edits(run["id"])
            reader.usage(run["id"]), reader.usage_by_stage(run["id"]), reader.call_errors(run["id"], 20)
            reader.versions(run["id"]), reader.gate_decisions(run["id"]), reader.events(run["id"], 30)
            cached("run", run["id"]), cached("steps", run["id"]), cached("usage", run["id"])
        cached("runs"), cached("waiting_runs"), cached("live_pids")
        self.reads += 1


def test_dashboard_reads_while_two_runs_write(tmp_path, monkeypatch):
    db = tmp_path / "shared.db"
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(ROOT), str(db), str(WRITE_S), tag],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for tag in ("writer-a", "writer-b")]
    loop = ReaderLoop(db)
    loop.thread.start()
    renders, page_errors = 0, []
    try:
        while any(w.poll() is None for w in writers):
            runs = Reader(db).runs() if db.exists() and loop.reads else []
            if not runs:
                time.sleep(0.1)  # waiting for the first run row, not a timed assertion
                continue
            at = AppTest.from_file(APP, default_timeout=120)
            at.switch_page("pages/2_Monitor.py")
            at.query_params["run"] = runs[0]["id"]
            at.run()
            renders += 1
            page_errors += [str(e.value) for e in at.exception]
            page_errors += [str(e.value) for e in at.error if "locked" in str(e.value).lower()]
        outputs = [w.communicate(timeout=120) for w in writers]
    finally:
        loop.stop.set()
        loop.thread.join(60)
        for w in writers:
            if w.poll() is None:
                w.kill()
    for w, (out, err) in zip(writers, outputs):
        assert w.returncode == 0, err[-2000:]
        assert int(out.strip()) >= 2, "each writer should finish several runs"
    assert loop.errors == [] and page_errors == []
    assert loop.torn == []
    assert loop.reads >= 20 and renders >= 3
    statuses = {r["status"] for r in Reader(db).runs()}
    assert statuses == {"completed"}

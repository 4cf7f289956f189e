"""A trainer is signalled only when host, pid and process start time all match.

A pid alone names an unrelated process on a copy of a live store, on a store shared
between machines, or after a reboot. launcher.signal_run is the one place that signals a
trainer; the dashboard's Stop and the CLI's `stop` go through it.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt import cli, launcher

from skillopt import process
from skillopt.store.writer import Store


def sleeper() -> subprocess.Popen:
    """An unrelated process, in its own session like a launched trainer."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def copy_db(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def set_identity(db: Path, run_id: str, pid: int, host: str, started_at: float | None, status: str = "running"):
    store = Store(db)
    try:
        with store.tx() as c:
            c.execute("UPDATE runs SET status = ?, pid = ?, host = ?, pid_started_at = ? WHERE id = ?",
                      (status, pid, host, started_at, run_id))
    finally:
        store.close()


def wait_gone(proc: subprocess.Popen, limit_s: float = 10) -> bool:
    try:
        proc.wait(limit_s)
        return True
    except subprocess.TimeoutExpired:
        return False


@pytest.fixture
def live_copy(sim_run, tmp_path):
    db = copy_db(sim_run[0], tmp_path / "live.db")
    proc = sleeper()
    yield db, sim_run[1], proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_the_trainer_records_its_identity(sim_run):
    db, run_id = sim_run
    row = Store(db).run(run_id)
    me = process.this_process()  # run_sim trained in this process
    assert (row["host"], row["pid"]) == (me.host, me.pid)
    assert row["pid_started_at"] == pytest.approx(me.started_at, abs=process.START_TOLERANCE_S)


def test_only_the_process_that_started_the_run_is_signalled(live_copy):
    db, run_id, proc = live_copy
    started = process.process_started_at(proc.pid)
    assert started is not None
    refusals = {
        "a pid whose process started at another time": (process.host_name(), started - 3600),
        "a trainer on another host": ("another-machine.example", started),
        "a pid recorded without host and start time": ("", None),
    }
    for case, (host, at) in refusals.items():
        set_identity(db, run_id, proc.pid, host, at)
        problem = launcher.signal_run(db, run_id, signal.SIGTERM)
        assert problem and "not signalled" in problem, case
        assert proc.poll() is None, f"{case}: the unrelated process was signalled"
    set_identity(db, run_id, proc.pid, process.host_name(), started)
    assert process.trainer_alive(Store(db).run(run_id))
    assert launcher.signal_run(db, run_id, signal.SIGTERM) is None
    assert wait_gone(proc)
    assert "gone" in launcher.signal_run(db, run_id, signal.SIGTERM)


def test_stop_does_not_wait_for_or_signal_a_process_it_cannot_identify(live_copy):
    db, run_id, proc = live_copy
    set_identity(db, run_id, proc.pid, process.host_name(), process.process_started_at(proc.pid) - 3600)
    began = time.monotonic()
    outcome = launcher.stop(run_id, db=db, grace_s=30)
    assert time.monotonic() - began < 10  # nothing it could signal: no grace period to sit out
    assert "stop requested" in outcome and "not signalled" in outcome
    assert proc.poll() is None
    assert Store(db).run(run_id)["stop_requested"] == 1  # the cooperative request stays in the store


def test_stop_sends_sigterm_after_the_grace_to_the_identified_trainer(live_copy):
    db, run_id, proc = live_copy
    set_identity(db, run_id, proc.pid, process.host_name(), process.process_started_at(proc.pid))
    outcome = launcher.stop(run_id, db=db, grace_s=0.5)  # the sleeper never reacts to the request
    assert "SIGTERM sent" in outcome
    assert wait_gone(proc)


def test_cli_stop_uses_the_same_check(live_copy, capsys):
    db, run_id, proc = live_copy
    set_identity(db, run_id, proc.pid, "another-machine.example", process.process_started_at(proc.pid))
    assert cli.main(["stop", run_id, "--db", str(db), "--grace", "5"]) == 0
    out = capsys.readouterr().out
    assert "runs on host another-machine.example" in out and "not signalled" in out
    assert proc.poll() is None
    set_identity(db, run_id, proc.pid, process.host_name(), process.process_started_at(proc.pid))
    assert cli.main(["stop", run_id, "--db", str(db), "--grace", "0.5"]) == 0
    assert "SIGTERM sent" in capsys.readouterr().out
    assert wait_gone(proc)


def test_process_start_time_is_that_of_the_process():
    me = process.this_process()
    assert me.pid == os.getpid() and me.host == process.host_name()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process.process_started_at(child.pid) is None  # gone: no start time, never a match
    assert process.process_started_at(None) is None

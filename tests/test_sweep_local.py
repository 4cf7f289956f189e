"""Sweeps on the local backend, run as a user runs them (`python -m skillopt sweep ...` in
subprocesses, trial processes writing to one store): every trial an ordinary tagged run; the
controller killed with SIGKILL mid-way and resumed (no duplicate, no lost trial); a trial process
killed; stop and resume; a failing trial; the sweep budget; refusals before anything is stored."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt.store.reader import Reader
from skillopt.sweep import commands, ledger
from skillopt.store.writer import Store

ROOT = Path(__file__).resolve().parent.parent
SIM = ["--set", "target_model=sim/target", "--set", "optimizer_model=sim/optimizer"]
SMALL = [*SIM, "--set", "num_epochs=1", "--set", "max_steps_per_epoch=2"]
# Simulated models that wait like a remote API (seconds per trial), so a kill lands mid-trial.
SLOW = ["--set", "target_model=sim/target?latency=0.05", "--set", "optimizer_model=sim/optimizer",
        "--set", "num_epochs=1", "--set", "max_steps_per_epoch=2"]
GRID = ["--grid", "learning_rate=2,4", "--grid", "lr_scheduler=cosine,constant"]
# Trials slow enough that a stop sent after two CLI start-ups still finds one running on a
# loaded 2-core machine (at SLOW's pace all four could finish first).
STOPPABLE = ["--set", "target_model=sim/target?latency=0.2", *SLOW[2:]]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("SKILLOPT_DB", "SKILLOPT_TASKS_DIR")}


def cli(*args: str, db: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "skillopt", *args, "--db", str(db)], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=timeout)


def background(*args: str, db: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "skillopt", *args, "--db", str(db)], cwd=ROOT, env=env(),
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def sweep_id_of(text: str) -> str:
    return next(line.split()[2] for line in text.splitlines() if line.startswith("sweep id: "))


def wait_for(predicate, what: str, limit_s: float = 120.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # the database is being created
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


def trials(db: Path, sweep_id: str) -> list[dict]:
    r = Reader(db)
    try:
        return r.sweep_trials(sweep_id)
    finally:
        r.close()


def assert_one_clean_run_per_trial(db: Path, sweep_id: str, n: int) -> list[dict]:
    """No lost trial (all completed), no duplicate (one run each, each step recorded once)."""
    rows = trials(db, sweep_id)
    assert [t["status"] for t in rows] == ["completed"] * n, [(t["status"], t["reason"]) for t in rows]
    r = Reader(db)
    try:
        runs = r.q("SELECT id, total_steps, step, status FROM runs WHERE sweep_id = ?", (sweep_id,))
        assert sorted(x["id"] for x in runs) == sorted(t["run_id"] for t in rows)
        assert len(r.q("SELECT id FROM runs")) == n  # no stray untagged run either
        for run in runs:
            assert run["status"] == "completed" and run["step"] == run["total_steps"]
            kinds = {e["type"]: e["n"] for e in r.q("SELECT type, COUNT(*) AS n FROM events WHERE run_id = ? "
                                                     "GROUP BY type", (run["id"],))}
            assert kinds["started"] == 1, kinds  # one trainer started it; a resume says "resumed"
            assert kinds["step"] == run["total_steps"], kinds  # each step recorded exactly once
            assert len(r.steps(run["id"])) == run["total_steps"]
    finally:
        r.close()
    return rows


def test_every_trial_is_an_ordinary_run_tagged_with_its_sweep_and_point(tmp_path):
    db = tmp_path / "s.db"
    out = cli("sweep", "start", "--task", "sim-rulebook", *GRID, *SMALL, "--workers", "2", "--name", "grid", db=db)
    assert out.returncode == 0, out.stdout + out.stderr
    sweep_id = sweep_id_of(out.stdout)
    assert "(4 trials, local backend, 2 at once)" in out.stdout
    assert sum(line.startswith("trial ") and ": completed (best selection" in line
               for line in out.stdout.splitlines()) == 4
    rows = assert_one_clean_run_per_trial(db, sweep_id, 4)
    r = Reader(db)
    try:
        for t in rows:
            run = r.run(t["run_id"])
            point = json.loads(t["point_json"])
            assert run["sweep_id"] == sweep_id and run["config"]["seed"] == 42
            assert {k: run["config"][k] for k in point} == point
            assert run["name"].startswith("grid · lr=")
        assert r.sweep(sweep_id)["status"] == "completed"
    finally:
        r.close()
    shown = cli("sweep", "show", sweep_id, "--json", db=db)
    cells = json.loads(shown.stdout)["cells"]
    assert len(cells) == 4 and all(c["finished"] == 1 and c["selection_mean"] is not None for c in cells)
    listed = cli("sweep", "list", db=db)
    assert sweep_id in listed.stdout and "4/4" in listed.stdout


def test_controller_killed_mid_way_then_resume_finishes_with_no_duplicate_and_no_lost_trial(tmp_path):
    db = tmp_path / "s.db"
    log = tmp_path / "controller.log"
    proc = background("sweep", "start", "--task", "sim-rulebook", *GRID, *SLOW, "--workers", "2", db=db, log=log)
    sweep_id = wait_for(lambda: "sweep id: " in log.read_text() and sweep_id_of(log.read_text()), "the sweep id")
    # Mid-way: trials are running and at least one has recorded a step.
    wait_for(lambda: any(t["status"] == "running" and (t["step"] or 0) >= 1 for t in trials(db, sweep_id)),
             "a running trial with a recorded step")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    running = [t for t in trials(db, sweep_id) if t["status"] == "running"]
    assert running and not all(t["status"] == "completed" for t in trials(db, sweep_id))
    out = cli("sweep", "resume", sweep_id, db=db)
    assert out.returncode == 0, out.stdout + out.stderr
    # Their processes did not die with the controller: found by host, pid and start time, adopted.
    assert "still runs: adopted" in out.stdout, out.stdout
    assert_one_clean_run_per_trial(db, sweep_id, 4)


def test_a_killed_trial_process_is_resumed_from_its_last_step(tmp_path):
    db = tmp_path / "s.db"
    log = tmp_path / "controller.log"
    proc = background("sweep", "start", "--task", "sim-rulebook", "--grid", "learning_rate=2,4", *SLOW,
                      "--workers", "2", db=db, log=log)
    sweep_id = wait_for(lambda: "sweep id: " in log.read_text() and sweep_id_of(log.read_text()), "the sweep id")
    victim = wait_for(lambda: next((t for t in trials(db, sweep_id) if (t["step"] or 0) >= 1 and t["pid"]
                                    and t["status"] == "running"), None), "a trial process past its first step")
    os.kill(victim["pid"], signal.SIGKILL)
    assert proc.wait(180) == 0, log.read_text()
    rows = trials(db, sweep_id)
    assert [t["status"] for t in rows] == ["completed", "completed"]
    r = Reader(db)
    try:
        kinds = [e["type"] for e in r.events(victim["run_id"], 500)]
        steps = r.steps(victim["run_id"])
    finally:
        r.close()
    assert kinds.count("resumed") == 1 and kinds.count("started") == 1  # continued, not started over
    assert [s["step"] for s in steps] == [1, 2]


def test_stop_then_resume_continues_the_stopped_trials(tmp_path):
    db = tmp_path / "s.db"
    log = tmp_path / "controller.log"
    proc = background("sweep", "start", "--task", "sim-rulebook", *GRID, *STOPPABLE, "--workers", "2", db=db, log=log)
    sweep_id = wait_for(lambda: "sweep id: " in log.read_text() and sweep_id_of(log.read_text()), "the sweep id")
    wait_for(lambda: any((t["step"] or 0) >= 1 for t in trials(db, sweep_id)), "a trial past its first step")
    out = cli("sweep", "resume", sweep_id, db=db)  # a second controller is refused while the first lives
    assert out.returncode == 2 and f"sweep {sweep_id} is still running" in out.stderr
    out = cli("sweep", "stop", sweep_id, db=db)
    assert out.returncode == 0 and f"stop requested for sweep {sweep_id}" in out.stdout
    assert proc.wait(120) == 3, log.read_text()
    r = Reader(db)
    try:
        assert r.sweep(sweep_id)["status"] == "stopped"
    finally:
        r.close()
    rows = trials(db, sweep_id)
    stopped = [t for t in rows if t["status"] == "stopped"]
    assert stopped and all(t["status"] in ("stopped", "pending", "completed") for t in rows)
    out = cli("sweep", "resume", sweep_id, db=db)
    assert out.returncode == 0, out.stdout + out.stderr
    assert_one_clean_run_per_trial(db, sweep_id, 4)
    r = Reader(db)
    try:
        for t in stopped:  # resumed from its checkpoint, not re-run
            assert [e["type"] for e in r.events(t["run_id"], 500)].count("resumed") == 1
    finally:
        r.close()


def test_a_failing_trial_is_shown_with_its_reason_and_does_not_stop_the_others(tmp_path):
    db = tmp_path / "s.db"
    out = cli("sweep", "start", "--task", "sim-rulebook", "--grid", "target_model=sim/target,sim/target?broken=1",
              "--set", "optimizer_model=sim/optimizer", "--set", "num_epochs=1", "--set", "max_steps_per_epoch=1",
              "--set", "max_retries=0", db=db)
    assert out.returncode == 3, out.stdout + out.stderr
    rows = trials(db, sweep_id_of(out.stdout))
    assert [t["status"] for t in rows] == ["completed", "failed"]
    assert "rollouts failed" in rows[1]["reason"]
    r = Reader(db)
    try:
        sweep = r.sweep(rows[0]["sweep_id"])
    finally:
        r.close()
    assert sweep["status"] == "completed" and sweep["reason"] == "1 failed"


def test_the_sweep_budget_is_shared_by_the_trials_and_never_passed(tmp_path):
    db = tmp_path / "s.db"
    out = cli("sweep", "start", "--task", "sim-rulebook", "--grid", "learning_rate=2,4,8", *SMALL,
              "--workers", "1", "--max-calls", "300", db=db)
    sweep_id = sweep_id_of(out.stdout)
    rows = trials(db, sweep_id)
    caps = [json.loads(t["config_json"])["max_calls"] for t in rows]
    assert caps[0] == 100 and all(0 < c for c in caps)  # an equal share of what was left, at each start
    assert all(t["calls"] <= cap for t, cap in zip(rows, caps))
    assert sum(t["calls"] for t in rows) <= 300
    assert {t["status"] for t in rows} <= {"completed", "budget_exhausted"}
    # Less than a call per trial: nothing starts; raising the budget on resume runs them.
    db2 = tmp_path / "s2.db"
    out = cli("sweep", "start", "--task", "sim-rulebook", "--grid", "learning_rate=2,4", *SMALL,
              "--max-calls", "1", db=db2)
    sweep_id = sweep_id_of(out.stdout)
    assert out.returncode == 3 and f"sweep {sweep_id} budget_exhausted" in out.stdout
    assert [t["status"] for t in trials(db2, sweep_id)] == ["skipped", "skipped"]
    assert Reader(db2).q("SELECT COUNT(*) AS n FROM runs")[0]["n"] == 0
    out = cli("sweep", "resume", sweep_id, "--max-calls", "0", db=db2)
    assert out.returncode == 0, out.stdout + out.stderr
    assert_one_clean_run_per_trial(db2, sweep_id, 2)


@pytest.mark.parametrize("args, message", [
    (["--grid", "learning_rate=2,4", "--set", "approval_mode=true"], "approval_mode needs a person"),
    (["--grid", "learning_rat=2"], "unknown config key 'learning_rat'"),
    (["--grid", "learning_rate=1,2"], "lr=1 seed=42"),
    (["--seeds", "0"], "--seeds must be at least 1"),
])
def test_a_refused_sweep_is_one_line_and_stores_nothing(tmp_path, args, message):
    db = tmp_path / "s.db"
    out = cli("sweep", "start", "--task", "sim-rulebook", *SIM, *args, db=db)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_simulated_models_on_a_real_task_are_refused_before_the_sweep_exists(tmp_path):
    db = tmp_path / "s.db"
    out = cli("sweep", "start", "--task", "ticket-routing", *SIM, "--grid", "learning_rate=2,4", db=db)
    assert out.returncode == 2 and "sim/" in out.stderr and not db.exists()


def test_trials_on_the_embedded_model_run_one_at_a_time_by_default_and_say_so(tmp_path, monkeypatch, capsys):
    from skillopt.cli import parser

    monkeypatch.setattr(commands, "control", lambda store, sweep_id: 0)  # check and store; train nothing
    db = tmp_path / "s.db"
    args = parser().parse_args(["sweep", "start", "--task", "ticket-routing", "--grid", "learning_rate=2,4",
                                "--db", str(db)])
    assert commands.run(args) == 0
    out = capsys.readouterr().out
    assert "(2 trials, local backend, 1 at once)" in out and "one at a time by default" in out
    store = Store(db)
    try:
        sweep = ledger.get(store, sweep_id_of(out))
    finally:
        store.close()
    assert sweep["workers"] == 1
    args = parser().parse_args(["sweep", "start", "--task", "ticket-routing", "--grid", "learning_rate=2,4",
                                "--workers", "2", "--db", str(db)])
    assert commands.run(args) == 0 and "one at a time" not in capsys.readouterr().out

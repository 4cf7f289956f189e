"""Start, stop and resume training runs as subprocesses (for the dashboard).

The dashboard never trains in its own process: a run is `python -m skillopt train`
in its own session, logging to data/runs/logs/<run id>.log. Stopping is cooperative
through the store (the trainer checks between stages); SIGTERM is only the fallback
for a trainer that does not react in time. Whether a trainer process still lives is
answered here too, for the dashboard and for `resume`.

A trainer is identified by host, pid and process start time, recorded when it starts
(runs.host, runs.pid, runs.pid_started_at). A pid alone is not an identity: on a copy of
a live store, a store shared between machines, or after a reboot, the same pid names an
unrelated process. `signal_run` is the only place that signals a trainer, and it does so
only when all three match; the dashboard's Stop, the CLI's `stop` and any multi-run
control go through it.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from .process import runs_elsewhere, trainer_alive, why_not_signal
from .store.writer import Store, db_path
from .vocabulary import LIVE_STATUSES

ROOT = Path(__file__).resolve().parent.parent
# A live run whose trainer reacts to a stop request (a pending one has not started yet).
REACTING = tuple(s for s in LIVE_STATUSES if s != "pending")


def log_path(db: str | os.PathLike | None, run_id: str) -> Path:
    return db_path(db).parent / "logs" / f"{run_id}.log"


def seed_path(db: str | os.PathLike | None, run_id: str) -> Path:
    return db_path(db).parent / "seeds" / f"{run_id}.md"


def new_run_id() -> str:
    """Sortable by start time; the random tail keeps two runs started in one second apart."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def signal_run(db: str | os.PathLike | None, run_id: str, sig: int = signal.SIGTERM) -> str | None:
    """Send `sig` to the run's trainer, only if host, pid and start time all match.

    The one place that signals a trainer (dashboard Stop, CLI `stop`, multi-run control).
    Returns None once signalled, else why nothing was signalled (one line).
    """
    store = Store(db)
    try:
        row = store.run(run_id)
        problem = why_not_signal(dict(row) if row is not None else None)
    finally:
        store.close()
    if problem:
        return problem
    pid = int(row["pid"])
    try:
        # A trainer the launcher started leads its own process group (its workers follow);
        # one started from a terminal does not, and only it is signalled.
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return f"the trainer process (pid {pid}) is gone"
    except PermissionError:
        return f"no permission to signal pid {pid}"
    return None


def _spawn(args: list[str], db: str | os.PathLike | None, run_id: str) -> subprocess.Popen:
    log = log_path(db, run_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["SKILLOPT_DB"] = str(db_path(db).resolve())
    env.setdefault("PYTHONUNBUFFERED", "1")
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "skillopt", *args], cwd=ROOT, stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)


def start(task: str, overrides: dict[str, object], *, db: str | os.PathLike | None = None, name: str = "",
          seed_skill_file: str | None = None, run_id: str | None = None) -> tuple[str, subprocess.Popen]:
    run_id = run_id or new_run_id()
    args = ["train", "--task", task, "--run-id", run_id]
    if name:
        args += ["--name", name]
    if seed_skill_file:
        args += ["--seed-skill", seed_skill_file]
    for key, value in overrides.items():
        args += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    return run_id, _spawn(args, db, run_id)


def launch(task: str, overrides: dict[str, object], *, db: str | os.PathLike | None = None, name: str = "",
           seed_skill: str | None = None) -> str:
    """Start a run from the New run form; an edited seed skill is written where the trainer
    reads it (next to the store, one file per run). Returns the run id."""
    run_id = new_run_id()
    seed_file = None
    if seed_skill is not None:
        seed_file = seed_path(db, run_id)
        seed_file.parent.mkdir(parents=True, exist_ok=True)
        seed_file.write_text(seed_skill, encoding="utf-8")
    start(task, overrides, db=db, name=name, seed_skill_file=str(seed_file) if seed_file else None, run_id=run_id)
    return run_id


def resume(run_id: str, *, db: str | os.PathLike | None = None) -> subprocess.Popen:
    return _spawn(["resume", run_id], db, run_id)


def stop(run_id: str, *, db: str | os.PathLike | None = None, grace_s: float = 0.0) -> str:
    """Ask the run to stop; after grace_s without reaction, SIGTERM its trainer (signal_run).

    Returns what happened, in one line. A trainer that cannot be signalled (another host, a
    pid that now names another process) is not waited for: the request stays in the store.
    """
    store = Store(db)
    try:
        store.request_stop(run_id)
        row = store.run(run_id)
        if row is None:
            return f"no run {run_id}"
        problem = why_not_signal(dict(row))
        if grace_s <= 0 or row["status"] not in REACTING:
            return "stop requested"
        if problem:
            return f"stop requested; {problem}"
        deadline = time.time() + grace_s
        while time.time() < deadline:
            if store.run(run_id)["status"] not in REACTING:
                return "stopped"
            time.sleep(0.2)
    finally:
        store.close()
    problem = signal_run(db, run_id, signal.SIGTERM)
    if problem is None:
        return f"no reaction within {grace_s:g}s: SIGTERM sent to the trainer"
    if not trainer_alive(_row(db, run_id)):
        _mark_gone(db, run_id)
    return f"stop requested; {problem}"


def _row(db: str | os.PathLike | None, run_id: str) -> dict:
    store = Store(db)
    try:
        row = store.run(run_id)
        return dict(row) if row is not None else {}
    finally:
        store.close()


def _mark_gone(db: str | os.PathLike | None, run_id: str) -> None:
    store = Store(db)
    try:
        row = store.run(run_id)
        if row is not None and row["status"] in LIVE_STATUSES and not runs_elsewhere(dict(row)):
            store.set_status(run_id, "stopped", "process gone")
    finally:
        store.close()


def read_log(db: str | os.PathLike | None, run_id: str, max_bytes: int = 20_000) -> str:
    path = log_path(db, run_id)
    if not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - max_bytes))
        return fh.read().decode("utf-8", errors="replace")

"""The local backend: a pool of trial processes on this machine, all writing to the one store.

Each trial is `python -m skillopt sweep trial SWEEP IDX --attempt N` in its own session, logging
where a run launched from the dashboard logs (data/runs/logs/<run id>.log), so the Monitor page
shows it like any run. SQLite in WAL mode with one transaction per unit of work is what makes
several trainers on one database safe (tests/test_concurrency.py). The trial processes do not
die with the controller: a resumed sweep finds them by host, pid and start time and adopts
them; stopping goes through the run stop mechanism (a cooperative request in the store).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .. import launcher
from ..store.writer import Store, db_path
from . import ledger, procs
from .controller import Ended

ROOT = Path(__file__).resolve().parents[2]


def controller_log(db: str | os.PathLike | None, sweep_id: str) -> Path:
    return db_path(db).parent / "logs" / f"{sweep_id}.log"


def _env(db: str | os.PathLike | None) -> dict[str, str]:
    env = dict(os.environ)
    env["SKILLOPT_DB"] = str(db_path(db).resolve())
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def spawn(args: list[str], db: str | os.PathLike | None, log: Path) -> subprocess.Popen:
    """`python -m skillopt ARGS` in its own session, appending to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "skillopt", *args], cwd=ROOT, stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_env(db),
                                start_new_session=True)


def start_controller(args: list[str], db: str | os.PathLike | None, sweep_id: str) -> subprocess.Popen:
    """Start `sweep start ... --sweep-id ID` (or `sweep resume ID`) in the background (the dashboard)."""
    return spawn(["sweep", *args], db, controller_log(db, sweep_id))


def last_line(path: Path, max_bytes: int = 4000) -> str:
    if not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - max_bytes))
        lines = [ln.strip() for ln in fh.read().decode("utf-8", errors="replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


class LocalBackend:
    name = "local"

    def __init__(self, db: str | os.PathLike | None):
        self.db = db_path(db)
        self.procs: dict[int, subprocess.Popen] = {}
        self.adopted: dict[int, dict] = {}  # idx -> the identity of a process another controller started
        self.sweep_id = ""

    def open(self, sweep: dict, store: Store) -> None:
        self.sweep_id = sweep["id"]
        self.store = store

    def adopt(self, trial: dict) -> bool:
        """Follow a trial process that outlived its controller (its own identity, or its run's trainer)."""
        for who in (trial, self.store.run(trial["run_id"])):
            if who is not None and who["pid"] and procs.alive(dict(who)):
                self.adopted[trial["idx"]] = {k: who[k] for k in ("pid", "host", "pid_started_at")}
                return True
        return False

    def launch(self, sweep: dict, trial: dict) -> None:
        log = launcher.log_path(self.db, trial["run_id"])
        args = ["sweep", "trial", sweep["id"], str(trial["idx"]), "--attempt", str(trial["attempts"]),
                "--db", str(self.db)]
        self.procs[trial["idx"]] = spawn(args, self.db, log)

    def poll(self) -> list[Ended]:
        ended = []
        for idx, proc in list(self.procs.items()):
            if proc.poll() is not None:
                del self.procs[idx]
                note = "" if proc.returncode == 0 else f"exit {proc.returncode}: {self._last_log_line(idx)}"
                ended.append(Ended(idx, note))
        for idx, who in list(self.adopted.items()):
            if not procs.alive(who):
                del self.adopted[idx]
                ended.append(Ended(idx, "its adopted process ended"))
        return ended

    def _last_log_line(self, idx: int) -> str:
        row = ledger.trial(self.store, self.sweep_id, idx)
        return last_line(launcher.log_path(self.db, row["run_id"])) if row else ""

    def running(self) -> set[int]:
        return set(self.procs) | set(self.adopted)

    def request_stop(self, trial: dict) -> None:
        if self.store.run(trial["run_id"]) is not None:
            launcher.stop(trial["run_id"], db=self.db)  # cooperative: the trainer stops between stages

    def close(self) -> None:
        """Nothing to end: trial processes left running (Ctrl-C) stop on their own request."""

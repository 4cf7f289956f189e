"""Which process a trainer is, and whether it still lives: host, pid and start time.

A pid alone is not an identity: on a copy of a live store, a store shared between
machines, or after a reboot, the same pid names an unrelated process. So a trainer
records all three when it starts, and a process is signalled only when all three match.
Reads /proc; imports nothing of the engine, so the store and the launcher can both use it.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping


def process_alive(pid: int | None) -> bool:
    """Whether a trainer process still runs (a zombie, exited but not yet reaped, does not)."""
    if not pid:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            # The state follows the command name in parentheses, which may hold spaces.
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


# Two readings of one process's start time differ by the clock-tick rounding at most.
START_TOLERANCE_S = 0.5


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a trainer process is: the machine, its pid there, and when that process started."""
    host: str
    pid: int
    started_at: float | None  # seconds since the epoch; None where the system does not tell


def host_name() -> str:
    return socket.gethostname()


@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def process_started_at(pid: int | None) -> float | None:
    """When process `pid` of this machine started (epoch seconds), from /proc; None if unknown."""
    boot = _boot_time()
    if not pid or boot is None:
        return None
    try:
        # Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); the fields are
        # counted after the command name in parentheses, which may hold spaces.
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    return round(boot + ticks / os.sysconf("SC_CLK_TCK"), 2)


def this_process() -> ProcessIdentity:
    """The identity the trainer records when it starts (store.writer, RunStarted)."""
    pid = os.getpid()
    return ProcessIdentity(host_name(), pid, process_started_at(pid))


def identity_of(row: Mapping[str, Any]) -> ProcessIdentity | None:
    """The trainer identity a runs row (a mapping or a sqlite3.Row) records, or None when it names no pid."""
    row = dict(row)
    if not row.get("pid"):
        return None
    return ProcessIdentity(row.get("host") or "", int(row["pid"]), row.get("pid_started_at"))


def runs_elsewhere(row: Mapping[str, Any]) -> bool:
    """Whether the run's trainer was started on another machine (this one cannot see it)."""
    who = identity_of(row)
    return who is not None and bool(who.host) and who.host != host_name()


def _matches(who: ProcessIdentity) -> bool:
    if who.host != host_name() or who.started_at is None or not process_alive(who.pid):
        return False
    now = process_started_at(who.pid)
    return now is not None and abs(now - who.started_at) <= START_TOLERANCE_S


def trainer_alive(row: Mapping[str, Any]) -> bool:
    """Whether the run's trainer process lives on this machine: host, pid and start time match.

    A row written before identities were recorded (no host, no start time) falls back to the
    pid alone, for display only: `signal_run` never signals such a row.
    """
    who = identity_of(row)
    if who is None:
        return False
    if not who.host and who.started_at is None:
        return process_alive(who.pid)
    return _matches(who)


def why_not_signal(row: Mapping[str, Any] | None) -> str | None:
    """None when the run's trainer may be signalled, else why not (one line)."""
    who = identity_of(row) if row is not None else None
    if who is None:
        return "no trainer process is recorded for this run"
    if not who.host or who.started_at is None:
        return f"pid {who.pid} was recorded without its host and start time: not signalled"
    if who.host != host_name():
        return f"the trainer runs on host {who.host}, not on {host_name()}: not signalled"
    if not process_alive(who.pid):
        return f"the trainer process (pid {who.pid}) is gone"
    if not _matches(who):
        return f"pid {who.pid} now belongs to another process (its start time differs): not signalled"
    return None

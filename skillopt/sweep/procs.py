"""Process identity for the sweep: a controller or a trial process is host + pid + start time.

A pid alone may name an unrelated process after a reboot or on another machine sharing the
store; `sweep resume` adopts a trial process (instead of starting a duplicate) only when all
three match. The launcher's identity functions are the project's one definition; the small
fallbacks below keep this module working against a launcher that predates them.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Mapping

from .. import launcher

from .. import process

TOLERANCE_S = 0.5  # two readings of one start time differ by clock-tick rounding at most


def host() -> str:
    fn = getattr(launcher, "host_name", None)
    return fn() if fn else socket.gethostname()


def started_at(pid: int | None) -> float | None:
    """When process `pid` of this machine started (epoch seconds), or None if unknown."""
    fn = getattr(launcher, "process_started_at", None)
    if fn is not None:
        return fn(pid)
    try:  # /proc/<pid>/stat field 22: start time in clock ticks since boot
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return round(boot + ticks / os.sysconf("SC_CLK_TCK"), 2)


def me() -> dict[str, Any]:
    """This process's identity, as the sweeps and sweep_trials columns hold it."""
    pid = os.getpid()
    return {"pid": pid, "host": host(), "pid_started_at": started_at(pid)}


def of(pid: int) -> dict[str, Any]:
    return {"pid": pid, "host": host(), "pid_started_at": started_at(pid)}


def alive(row: Mapping[str, Any]) -> bool:
    """Whether the process a row records (pid, host, pid_started_at) still runs on this machine."""
    pid = row.get("pid")
    if not pid or row.get("host") not in ("", None, host()):
        return False
    if not process.process_alive(int(pid)):
        return False
    recorded = row.get("pid_started_at")
    if recorded is None:
        return True  # recorded without a start time: the pid is all there is
    now = started_at(int(pid))
    return now is not None and abs(now - float(recorded)) <= TOLERANCE_S


def elsewhere(row: Mapping[str, Any]) -> bool:
    """Whether the row's process runs on another machine (this one cannot tell if it lives)."""
    return bool(row.get("pid")) and row.get("host") not in ("", None, host())

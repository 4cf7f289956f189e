"""The sweep's controller: launches trials on a backend within the worker count and the budget,
records how each ends, and survives its own death.

The controller is the `sweep start` / `sweep resume` process. Everything it knows is in the
store, so a controller killed at any point (kill -9) loses nothing: `sweep resume` adopts the
trial processes that still run, resumes those whose process is gone, and starts the rest.
A trial is launched under a fencing number (sweep_trials.attempts): a trial process claims its
trial only while the number is still its own, so a process from a dead controller that had not
claimed its trial yet can never run alongside the one a resumed controller starts.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..errors import UserError
from ..integrations import notify
from ..store.writer import Store
from ..vocabulary import FINAL_STATUSES
from . import grid, ledger, procs

MAX_RETRIES = 2  # a trial whose process dies without a final status is resumed at most this often per controller
POLL_S = 0.5  # how often the controller looks at its trials; a trial takes seconds to hours


@dataclass(frozen=True)
class Ended:
    """A trial whose process (or Ray task) has ended; `note` says why when it left no status."""
    idx: int
    note: str = ""
    failed: bool = False  # the backend knows it failed for good (retrying would fail the same way)
    lost: bool = False  # its node or process was lost under it: worth running again from its start


class Backend(Protocol):
    name: str

    def open(self, sweep: dict, store: Store) -> None: ...
    def adopt(self, trial: dict) -> bool: ...
    def launch(self, sweep: dict, trial: dict) -> None: ...
    def poll(self) -> list[Ended]: ...
    def running(self) -> set[int]: ...
    def request_stop(self, trial: dict) -> None: ...
    def close(self) -> None: ...


class Controller:
    def __init__(self, store: Store, sweep_id: str, backend: Backend, *, report: Callable[[str], None] = print,
                 poll_s: float = POLL_S):
        self.store, self.sweep_id, self.backend, self.report, self.poll_s = store, sweep_id, backend, report, poll_s
        self.sweep: dict[str, Any] = {}
        self.asked_to_stop: set[int] = set()
        self.retries: Counter[int] = Counter()

    # ---- the loop ------------------------------------------------------------------------
    def run(self) -> str:
        """Run the sweep to its end (or its stop); returns the sweep's final status."""
        self.claim()
        try:
            self.backend.open(self.sweep, self.store)
            self.recover()
            while self.tick():
                time.sleep(self.poll_s)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: trials are asked to stop, the sweep is resumable
            ledger.request_stop(self.store, self.sweep_id)
            for idx in self.backend.running():
                self.backend.request_stop(self.trial(idx))
            ledger.update_sweep(self.store, self.sweep_id, status="stopped", reason="interrupted",
                                finished_at=time.time())
            raise
        finally:
            self.backend.close()
        return self.finish()

    def claim(self) -> None:
        sweep = ledger.get(self.store, self.sweep_id)
        if sweep is None:
            raise UserError(f"no sweep {self.sweep_id} in {self.store.path}")
        if ledger.is_live(sweep) and sweep["pid"] and procs.alive(sweep) and sweep["pid"] != procs.me()["pid"]:
            raise UserError(f"sweep {self.sweep_id} is still running (pid {sweep['pid']})")
        me = procs.me()
        with self.store.tx() as c:  # only if no other controller claimed it since we looked
            n = c.execute("UPDATE sweeps SET status = 'running', reason = '', finished_at = NULL, stop_requested = 0, "
                          "pid = ?, host = ?, pid_started_at = ?, updated_at = ? WHERE id = ? AND pid IS ? "
                          "AND host IS ? AND pid_started_at IS ?",
                          (me["pid"], me["host"], me["pid_started_at"], time.time(), self.sweep_id, sweep["pid"],
                           sweep["host"], sweep["pid_started_at"])).rowcount
        if n != 1:
            raise UserError(f"sweep {self.sweep_id} was just taken over by another controller")
        self.sweep = ledger.get(self.store, self.sweep_id)

    def recover(self) -> None:
        """Before the first launch: adopt live trial processes, settle dead ones, and queue again
        every trial a resume should run (stopped, incomplete, skipped for want of budget)."""
        for t in ledger.trials(self.store, self.sweep_id):
            if t["status"] == "running":
                self.recover_running(t)
            elif t["status"] in ("stopped", "incomplete", "skipped"):
                ledger.update_trial(self.store, self.sweep_id, t["idx"], status="pending", reason="")

    def recover_running(self, t: dict) -> None:
        if t["pid"] is None and fence(self.store, self.sweep_id, t["idx"], t["attempts"]):
            # Its process never claimed it (and now never will): start it afresh.
            ledger.update_trial(self.store, self.sweep_id, t["idx"], status="pending", reason="")
            return
        t = self.trial(t["idx"])
        if self.backend.adopt(t):
            self.report(f"trial {t['idx']}: its process (pid {t['pid']}) still runs: adopted")
        else:
            self.settle(Ended(t["idx"], "its process is gone"))

    def tick(self) -> bool:
        """One look at the trials; False when nothing is left to wait for."""
        stopping = ledger.stop_requested(self.store, self.sweep_id)
        for ended in self.backend.poll():
            self.settle(ended, stopping)
        if stopping:
            for idx in self.backend.running() - self.asked_to_stop:
                self.backend.request_stop(self.trial(idx))
                self.asked_to_stop.add(idx)
            return bool(self.backend.running())
        self.launch_ready()
        return bool(self.backend.running()) or any(t["status"] == "pending" for t in self.trials())

    # ---- launching -----------------------------------------------------------------------
    def launch_ready(self) -> None:
        free = int(self.sweep["workers"]) - len(self.backend.running())
        for t in [t for t in self.trials() if t["status"] == "pending"][:max(0, free)]:
            caps = self.caps(t)
            if caps is None:  # no budget left for a new trial now
                if not self.backend.running():
                    self.skip_unstarted()
                return
            config = t["config_json"] or grid.trial_config(json.loads(self.sweep["config_json"]),
                                                            ledger.as_trial(t), caps).to_json()
            row = json.loads(config)
            with self.store.tx() as c:
                c.execute("UPDATE sweep_trials SET status = 'running', reason = '', attempts = attempts + 1, "
                          "config_json = ?, max_calls = ?, max_cost_usd = ?, pid = NULL, host = '', "
                          "pid_started_at = NULL, started_at = ?, finished_at = NULL, updated_at = ? "
                          "WHERE sweep_id = ? AND idx = ?",
                          (config, row["max_calls"], row["max_cost_usd"], time.time(), time.time(),
                           self.sweep_id, t["idx"]))
            self.backend.launch(self.sweep, self.trial(t["idx"]))

    def caps(self, t: dict) -> dict[str, Any] | None:
        """The budget caps of a trial about to start for the first time (see grid.share);
        {} for a trial launched before (its caps are in its config already)."""
        if t["config_json"]:
            return {}
        trials, used = self.trials(), ledger.spent(self.store, self.sweep_id)
        base = json.loads(self.sweep["config_json"])
        waiting = sum(1 for x in trials if x["status"] == "pending" and not x["config_json"])
        caps: dict[str, Any] = {}
        for i, (key, total) in enumerate((("max_calls", self.sweep["max_calls"] or 0),
                                          ("max_cost_usd", self.sweep["max_cost_usd"] or 0.0))):
            committed = sum(max(used.get(x["run_id"], (0, 0.0))[i], x[key] if x["status"] == "running" else 0)
                            for x in trials if x["config_json"])
            cap = grid.share(total, committed, waiting, base.get(key, 0))
            if cap is None:
                return None
            caps[key] = int(cap) if key == "max_calls" else float(cap)
        return caps

    def skip_unstarted(self) -> None:
        used = sum(c for c, _ in ledger.spent(self.store, self.sweep_id).values())
        for t in self.trials():
            if t["status"] == "pending" and not t["config_json"]:
                ledger.update_trial(self.store, self.sweep_id, t["idx"], status="skipped",
                                    reason=f"the sweep's budget ran out ({used} calls spent) before it started")

    # ---- how trials end --------------------------------------------------------------------
    def settle(self, ended: Ended, stopping: bool = False) -> None:
        t = self.trial(ended.idx)
        run = self.store.run(t["run_id"])
        if ended.failed:
            status, reason = "failed", ended.note
        elif ended.lost and not stopping and self.retries[t["idx"]] < MAX_RETRIES:
            self.retries[t["idx"]] += 1
            status, reason = "pending", f"{ended.note}; running it again from its start"
        elif run is None:
            status, reason = ("pending", "") if stopping else (
                "failed", ended.note or "the trial ended before its run was created")
        elif run["status"] in FINAL_STATUSES:
            status, reason = run["status"], run["reason"] or ""
        elif stopping:
            status, reason = "stopped", "stopped with the sweep"
        elif self.retries[t["idx"]] < MAX_RETRIES:
            self.retries[t["idx"]] += 1
            status, reason = "pending", f"its process ended without a final status ({ended.note}); resuming"
        else:
            status, reason = "failed", f"its process ended without a final status {MAX_RETRIES + 1} times " \
                                       f"({ended.note})"
        ledger.update_trial(self.store, self.sweep_id, t["idx"], status=status, reason=reason,
                            finished_at=None if status == "pending" else time.time())
        self.report(trial_line(t, status, reason, run))

    def finish(self) -> str:
        trials = self.trials()
        counts = Counter(t["status"] for t in trials)
        done = sum(counts[s] for s in ("completed", "failed", "budget_exhausted", "incomplete", "skipped"))
        if ledger.stop_requested(self.store, self.sweep_id) or counts["pending"] or counts["running"]:
            status, reason = "stopped", f"{done} of {len(trials)} trials finished"
        elif counts["skipped"]:
            status, reason = "budget_exhausted", f"{counts['skipped']} trials skipped: the sweep's budget ran out"
        else:
            status = "completed"
            reason = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s != "completed")
        ledger.update_sweep(self.store, self.sweep_id, status=status, reason=reason, finished_at=time.time())
        self.report(f"sweep {self.sweep_id} {status}{': ' + reason if reason else ''}")
        notify.sweep_finished(self.store, self.sweep_id)  # the sweep config's notify targets; never raises
        return status

    def trials(self) -> list[dict]:
        return ledger.trials(self.store, self.sweep_id)

    def trial(self, idx: int) -> dict:
        return ledger.trial(self.store, self.sweep_id, idx)


def fence(store: Store, sweep_id: str, idx: int, attempt: int) -> bool:
    """Take the trial away from a launched process that has not claimed it yet (see claim)."""
    with store.tx() as c:
        n = c.execute("UPDATE sweep_trials SET attempts = attempts + 1 WHERE sweep_id = ? AND idx = ? "
                      "AND attempts = ? AND pid IS NULL", (sweep_id, idx, attempt)).rowcount
    return n == 1


def claim(store: Store, sweep_id: str, idx: int, attempt: int, identity: dict[str, Any]) -> bool:
    """A trial process claims its trial, recording who it is, only while its launch is current."""
    with store.tx() as c:
        n = c.execute("UPDATE sweep_trials SET pid = ?, host = ?, pid_started_at = ?, updated_at = ? "
                      "WHERE sweep_id = ? AND idx = ? AND attempts = ? AND pid IS NULL AND status = 'running'",
                      (identity["pid"], identity["host"], identity["pid_started_at"], time.time(), sweep_id, idx,
                       attempt)).rowcount
    return n == 1


def trial_line(t: dict, status: str, reason: str, run: Any) -> str:
    point = grid.label(ledger.as_trial(t))
    scores = ""
    if run is not None and run["best_score"] is not None:
        test = "" if run["best_test"] is None else f", test {run['best_test']:.3f}"
        scores = f" (best selection {run['best_score']:.3f}{test})"
    return f"trial {t['idx']} {point}: {status}{scores}{' — ' + reason if reason else ''}"

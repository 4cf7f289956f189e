"""Test harness: run (or resume) a simulated training run and SIGKILL it at a chosen point.

usage: python tests/killer.py DB RUN_ID KILL_AT [start|resume] [key=value ...]

KILL_AT picks the moment, counted in THIS process (a resume counts afresh):
  N               the N-th model call (cached or not); 0 = never kill
  NAME@K          right after the K-th NAME is recorded, where NAME is a stage
                  (rollout, reflect, aggregate, select, approval, gate, slow_update, meta, test)
                  or an event class (SeedScored, StepCompleted, EpochCompleted, TestEvaluated, ...)
  NAME@K+N        the N-th model call after that moment (inside the stage's work)
  EVENT@K:tx      inside the store transaction that records the K-th EVENT, before its COMMIT
  NAME@K:flush    inside the first flush of buffered call rows and cache entries after that
                  moment: they are written, the transaction of the event they ride in is not committed
  poll@K          during the K-th poll for approval decisions (approval mode)
Killing from inside at an exact point makes the kill points reproducible, unlike timers.

Imported by the tests and bench/faults.py for `run_killer` and `fingerprint`.
"""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SPEC = re.compile(r"^(?:(?P<calls>\d+)|(?P<name>\w+)@(?P<k>\d+)(?:\+(?P<after>\d+)|:(?P<inside>tx|flush))?)$")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillPlan:
    """Counts stages, events, model calls, polls and transactions; kills at the planned one."""

    def __init__(self, spec: str):
        m = _SPEC.match(spec)
        if m is None:
            raise SystemExit(f"killer: bad KILL_AT {spec!r}")
        self.calls_at = int(m["calls"]) if m["calls"] else 0
        self.name, self.k = m["name"], int(m["k"] or 0)
        self.after = int(m["after"]) if m["after"] else 0
        self.in_tx = m["inside"] == "tx"
        self.in_flush = m["inside"] == "flush"
        self.seen = 0  # how many NAMEs so far
        self.armed = False  # the point was reached; counting model calls (+N), or the next tx or flush
        self.tx_thread = None  # ':tx' kills act in the thread that records the event
        self.calls = 0

    def _reached(self) -> None:
        if self.after:
            self.armed, self.calls = True, 0
        elif self.in_tx or self.in_flush:
            self.armed = True
        else:
            _die()

    def on_call(self) -> None:
        self.calls += 1
        if self.calls_at and self.calls == self.calls_at:
            _die()
        if self.armed and self.after and self.calls == self.after:
            _die()

    def on_event(self, event) -> None:
        """Before the store records `event` (only ':tx' kills act here)."""
        kind = type(event).__name__
        if self.in_tx and kind == self.name:
            self.seen += 1
            if self.seen == self.k:
                self.armed, self.tx_thread = True, threading.get_ident()

    def after_event(self, event) -> None:
        """After the store recorded `event`."""
        if self.in_tx:
            return
        kind = type(event).__name__
        name = event.stage if kind == "StageChanged" else kind
        if self.name == name:
            self.seen += 1
            if self.seen == self.k:
                self._reached()

    def on_flush(self, rows: int) -> None:
        """After a transaction wrote `rows` buffered rows, before the event's own rows and COMMIT."""
        if self.in_flush and self.armed and rows:
            _die()

    def on_poll(self) -> None:
        if self.name == "poll":
            self.seen += 1
            if self.seen == self.k:
                _die()

    def before_commit(self) -> None:
        if self.in_tx and self.armed and self.tx_thread == threading.get_ident():
            _die()


def install(plan: KillPlan) -> None:
    """Patch the model layer, the store and the runner so `plan` sees every countable moment."""
    from skillopt.models import llm
    from skillopt import runner
    from skillopt.store.pending import Pending
    from skillopt.store.writer import Store

    complete = llm.LLM._complete

    def counting(self, *args, **kwargs):
        plan.on_call()
        return complete(self, *args, **kwargs)

    llm.LLM._complete = counting

    record = Store.__call__

    def recording(self, event):
        plan.on_event(event)
        record(self, event)
        plan.after_event(event)

    Store.__call__ = recording

    tx = Store.tx

    @contextmanager
    def guarded(self):
        with tx(self) as conn:
            yield conn
            plan.before_commit()  # still inside BEGIN IMMEDIATE: the kill must roll the write back

    Store.tx = guarded

    write = Pending.write

    def flushing(self, conn):
        written = write(self, conn)
        plan.on_flush(written.rows)
        return written

    Pending.write = flushing

    decisions = runner._decisions

    def polling(store, run_id):
        read = decisions(store, run_id)

        def poll(step):
            plan.on_poll()
            return read(step)
        return poll

    runner._decisions = polling


def main() -> None:
    db, run_id, kill_at, mode, *overrides = sys.argv[1:]
    install(KillPlan(kill_at))
    from skillopt import runner
    from skillopt.config import load_config
    from skillopt.store.writer import Store

    store = Store(db)
    if mode == "start":
        config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", *overrides])
        runner.start(store, "sim-rulebook", config, run_id=run_id)
    else:
        runner.resume(store, run_id)


# ---- helpers for the tests and bench/faults.py ------------------------------------------------

def run_killer(db: Path, run_id: str, kill_at: str | int, mode: str, *overrides: str,
               timeout: float = 300) -> int:
    """Run this script in a subprocess; its return code (-9 = killed as planned)."""
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), str(db), run_id, str(kill_at), mode,
                           *overrides], capture_output=True, timeout=timeout, cwd=ROOT).returncode


def fingerprint(db: Path, run_id: str) -> dict:
    """Everything a resumed run must share with an uninterrupted one (timings and cache flags aside)."""
    from skillopt.store.reader import Reader

    r = Reader(db)
    try:
        return {
            "steps": [(s["step"], s["epoch"], s["edit_budget"], s["decision"], s["current_score"],
                       s["candidate_score"], s["best_score"], s["n_proposed"], s["n_applied"])
                      for s in r.steps(run_id)],
            "edits": [(e["step"], e["idx"], e["op"], e["target"], e["content"], e["fate"], e["status"],
                       e["approval"], e["gate"]) for e in r.edits(run_id)],
            "versions": [(v["step"], v["kind"], v["sha"], v["score"]) for v in r.versions(run_id)],
            "gates": [(g["step"], g["kind"], g["decision"], g["current_score"], g["candidate_score"])
                      for g in r.gate_decisions(run_id)],
            "slow": [(u["epoch"], u["decision"], u["guidance"]) for u in r.slow_updates(run_id)],
            "meta": [(m["epoch"], m["content"]) for m in r.meta_skills(run_id)],
            "tests": {k: (v["score"], v["skill_sha"]) for k, v in r.tests(run_id).items()},
            "approvals": [(a["step"], a["idx"], a["status"], a["content"]) for a in r.approvals(run_id)],
            "best": r.best_skill(run_id),
            "final": r.skill_at(run_id, 10_000),
            "status": r.run(run_id)["status"],
            "rejected": [(b["step"], b["edit_json"], b["reason"]) for b in r.rejected_buffer(run_id)],
        }
    finally:
        r.close()


def after_kill(db: Path, run_id: str) -> tuple[str, str, int] | None:
    """(status, stage, step) the killed run left in the store."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT status, stage, step FROM runs WHERE id = ?", (run_id,)).fetchone()
        return tuple(row) if row else None
    finally:
        conn.close()


def survive(db: Path, run_id: str, kills: tuple[str, ...], overrides: tuple[str, ...]) -> dict:
    """Start a run killed at kills[0], resume it killed at each later point, then resume to the end.

    Returns the return codes, where each kill left the run, the final fingerprint and the
    integrity check, for the caller to compare with an uninterrupted run.
    """
    codes, left = [], []
    for n, kill in enumerate(kills):
        codes.append(run_killer(db, run_id, kill, "start" if n == 0 else "resume", *(overrides if n == 0 else ())))
        left.append(after_kill(db, run_id))
    final = run_killer(db, run_id, 0, "resume")
    return {"codes": codes, "left": left, "final_code": final, "fingerprint": fingerprint(db, run_id),
            "integrity": integrity(db)}


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


if __name__ == "__main__":
    main()

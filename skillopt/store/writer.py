"""The SQLite store: the trainer's writer, and the caches.

One database file holds every run. WAL lets the dashboard read while trainers write.
The trainer process is the only writer of its run's rows; the dashboard writes only
control rows (stop requests, approval decisions) through the small control API below.
Units of work (a step, an epoch end, a test evaluation) are written in one
transaction together with the state to resume from, so a reader or a resumed run never
sees half a step; call rows and cache entries ride in the next one (pending.py). No API key
or secret is ever written here (models/llm.py redacts errors).
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import sqlite_utils

from .. import events as ev
from ..errors import UserError
from ..process import this_process
from ..records import gate_outcome
from .journal import use_wal
from .intervals import ci, interval_of_test, sample_columns, train_interval
from .pending import BufferedCaches
from .schema import migrations
from ..skill import sha
from ..state import State, edit_json
from ..tasks.task import Item
from ..vocabulary import FINAL_APPROVALS, FINAL_STATUSES, TRIAL_NAMES

DEFAULT_DB = Path("data/runs/skillopt.db")
BUSY_TIMEOUT_MS = 30_000  # writers hold locks for milliseconds; 30 s covers any burst


def db_path(path: str | os.PathLike | None = None) -> Path:
    return Path(path or os.environ.get("SKILLOPT_DB") or DEFAULT_DB)


def connect(path: str | os.PathLike, *, readonly: bool = False) -> sqlite3.Connection:
    """A raw connection with the project's settings. Readers open the file read-only."""
    path = Path(path)
    if readonly:
        if not path.exists():
            raise UserError(f"{path}: no database yet (start a run first)")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.row_factory = sqlite3.Row
    return conn


class Store(BufferedCaches):
    """Read-write access. Thread-safe: a lock serialises this process's writes."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = db_path(path)
        self.conn = connect(self.path)
        self.db = sqlite_utils.Database(self.conn)
        self._lock = threading.RLock()
        self._start_buffer()
        with self._lock:
            use_wal(self.conn, BUSY_TIMEOUT_MS / 1000)
            self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL survives a killed process
            with self.tx():  # two processes opening a fresh file at once must not both create the schema
                migrations.apply(self.db)

    def close(self) -> None:
        self._finalizer()  # flushes what is buffered, once
        self.conn.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; it also writes every buffered row, which leaves the buffer on COMMIT."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                written = self._pending.write(self.conn)
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            self._pending.forget(written)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    # ---- runs -------------------------------------------------------------------------
    def create_run(self, *, run_id: str, name: str, task: str, task_path: str, config_json: str,
                   simulated: bool, items: Sequence[Item], seed_skill: str) -> None:
        now = time.time()
        with self.tx() as c:
            c.execute("INSERT INTO runs (id, name, task, task_path, config_json, seed_skill, status, simulated, "
                      "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                      (run_id, name, task, task_path, config_json, seed_skill, "pending", int(simulated), now, now))
            c.executemany("INSERT INTO items VALUES (?,?,?,?,?)",
                          [(run_id, it.id, it.split, json.dumps(dict(it.input), ensure_ascii=False),
                            _text(it.expected)) for it in items])

    def delete_run(self, run_id: str) -> None:
        with self.tx() as c:
            for table in ("items", "steps", "skill_versions", "edits", "rollouts", "reflections",
                          "gate_decisions", "rejected_buffer", "slow_updates", "meta_skills", "tests",
                          "llm_calls", "approvals", "events"):
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            c.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def run(self, run_id: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return rows[0] if rows else None

    def set_status(self, run_id: str, status: str, reason: str = "", pid: int | None = None) -> None:
        now = time.time()
        with self.tx() as c:
            c.execute("UPDATE runs SET status = ?, reason = ?, updated_at = ?, pid = COALESCE(?, pid), "
                      "finished_at = CASE WHEN ? THEN ? ELSE NULL END, "
                      "started_at = COALESCE(started_at, ?) WHERE id = ?",
                      (status, reason, now, pid, status in FINAL_STATUSES, now, now, run_id))
            c.execute("INSERT INTO events (run_id, step, type, message, created_at) "
                      "SELECT ?, step, 'status', ?, ? FROM runs WHERE id = ?",
                      (run_id, f"{status}: {reason}" if reason else status, now, run_id))

    def seed_skill(self, run_id: str) -> str | None:
        rows = self.query("SELECT seed_skill FROM runs WHERE id = ?", (run_id,))
        return rows[0][0] if rows else None

    def load_state(self, run_id: str) -> State | None:
        row = self.run(run_id)
        if row is None or not row["state_json"]:
            return None
        return State.from_json(json.loads(row["state_json"]))

    def discard_after(self, run_id: str, step: int) -> None:
        """Drop the partial work of an interrupted step (it is redone from the cache on resume)."""
        with self.tx() as c:
            for table in ("rollouts", "reflections", "edits", "steps", "gate_decisions", "rejected_buffer"):
                c.execute(f"DELETE FROM {table} WHERE run_id = ? AND step > ?", (run_id, step))
            c.execute("DELETE FROM skill_versions WHERE run_id = ? AND step > ?", (run_id, step))

    # ---- control rows (the only writes the dashboard makes) -------------------------
    def request_stop(self, run_id: str) -> None:
        with self.tx() as c:
            c.execute("UPDATE runs SET stop_requested = 1, status = CASE WHEN status IN "
                      "('running','waiting_approval','pending') THEN 'stopping' ELSE status END, "
                      "updated_at = ? WHERE id = ?", (time.time(), run_id))

    def stop_requested(self, run_id: str) -> bool:
        rows = self.query("SELECT stop_requested FROM runs WHERE id = ?", (run_id,))
        return bool(rows and rows[0][0])

    def clear_stop(self, run_id: str) -> None:
        with self.tx() as c:
            c.execute("UPDATE runs SET stop_requested = 0 WHERE id = ?", (run_id,))

    def decide(self, run_id: str, step: int, idx: int, status: str, content: str | None = None) -> None:
        if status not in FINAL_APPROVALS:
            raise UserError(f"approval status must be {', '.join(FINAL_APPROVALS[:-1])} or {FINAL_APPROVALS[-1]}, "
                            f"not {status!r}")
        with self.tx() as c:
            c.execute("UPDATE approvals SET status = ?, content = COALESCE(?, content), decided_at = ? "
                      "WHERE run_id = ? AND step = ? AND idx = ?",
                      (status, content, time.time(), run_id, step, idx))

    def undo_decision(self, run_id: str, step: int, idx: int) -> bool:
        """Make a decided edit pending again, while another edit of its step still waits: the
        trainer reads a step's decisions only once all are made, then runs the gate, so after
        the last decision there is nothing left to undo. Returns whether it was undone."""
        with self.tx() as c:
            cur = c.execute(
                "UPDATE approvals SET status = 'pending', content = json_extract(edit_json, '$.content'), "
                "decided_at = NULL WHERE run_id = ? AND step = ? AND idx = ? AND status != 'pending' AND EXISTS "
                "(SELECT 1 FROM approvals WHERE run_id = ? AND step = ? AND status = 'pending')",
                (run_id, step, idx, run_id, step))
            return cur.rowcount == 1

    def approvals(self, run_id: str, step: int) -> list[sqlite3.Row]:
        return self.query("SELECT * FROM approvals WHERE run_id = ? AND step = ? ORDER BY idx", (run_id, step))

    # ---- events -----------------------------------------------------------------------
    def __call__(self, event: ev.Event) -> None:
        """The store is the trainer's recording callback."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _log(self, c: sqlite3.Connection, run_id: str, step: int, kind: str, message: str) -> None:
        c.execute("INSERT INTO events (run_id, step, type, message, created_at) VALUES (?,?,?,?,?)",
                  (run_id, step, kind, message, time.time()))

    def _run_started(self, e: ev.RunStarted) -> None:

        now, me = time.time(), this_process()  # host + pid + start time: launcher.signal_run checks all three
        with self.tx() as c:
            c.execute("UPDATE runs SET status = 'running', total_steps = ?, steps_per_epoch = ?, pid = ?, "
                      "host = ?, pid_started_at = ?, "
                      "started_at = COALESCE(started_at, ?), updated_at = ?, heartbeat_at = ?, reason = '', "
                      "finished_at = NULL WHERE id = ?",
                      (e.total_steps, e.steps_per_epoch, me.pid, me.host, me.started_at, now, now, now, e.run_id))
            self._log(c, e.run_id, 0, "resumed" if e.resumed else "started",
                      f"{'resumed' if e.resumed else 'started'}: {e.total_steps} steps")

    def _seed_scored(self, e: ev.SeedScored) -> None:
        now = time.time()
        with self.tx() as c:
            self._version(c, e.run_id, 0, "seed", e.skill, e.score)
            self._log(c, e.run_id, 0, "seed", f"seed skill scores {e.score:.3f} on selection")
            if e.no_skill_score is not None:
                start = "no skill: it beats the seed" if e.state.skill != e.skill else "the seed"
                self._log(c, e.run_id, 0, "seed", f"no skill scores {e.no_skill_score:.3f} on selection; "
                                                  f"training starts from {start}")
            self._save_state(c, e.run_id, e.state, now)

    def _stage(self, e: ev.StageChanged) -> None:
        now = time.time()
        with self.tx() as c:
            status = "waiting_approval" if e.stage == "approval" else None
            c.execute("UPDATE runs SET stage = ?, stage_detail = ?, epoch = ?, updated_at = ?, heartbeat_at = ?, "
                      "status = CASE WHEN status = 'stopping' THEN status ELSE COALESCE(?, 'running') END "
                      "WHERE id = ?", (e.stage, e.detail, e.epoch, now, now, status, e.run_id))

    def _rollouts(self, e: ev.RolloutsDone) -> None:
        with self.tx() as c:
            c.executemany("INSERT OR REPLACE INTO rollouts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          [(e.run_id, e.step, e.split, e.purpose, e.skill_sha, t.item_id, t.output,
                            t.evaluation.hard, t.evaluation.soft, t.evaluation.feedback, t.error, int(hit),
                            *sample_columns(t)) for t, hit in zip(e.trajectories, e.cached)])

    def _reflections(self, e: ev.ReflectionDone) -> None:
        with self.tx() as c:
            c.executemany("INSERT OR REPLACE INTO reflections VALUES (?,?,?,?,?,?,?,?,?)",
                          [(e.run_id, e.step, m.index, m.kind, json.dumps(list(m.item_ids)), int(m.ok),
                            m.summary, m.error, len(m.edits)) for m in e.minibatches])

    def _approval_requested(self, e: ev.ApprovalRequested) -> None:
        with self.tx() as c:
            # INSERT OR IGNORE: a resumed step must keep the decisions a person already made.
            mbs = e.minibatches or tuple(() for _ in e.edits)
            numbers = e.numbers or tuple(range(len(e.edits)))  # the edit's number on every page
            c.executemany("INSERT OR IGNORE INTO approvals VALUES (?,?,?,?,?,?,?,?)",
                          [(e.run_id, e.step, i, json.dumps(edit_json(edit) | {"minibatches": list(mb), "number": n}),
                            diff, "pending", edit.content, None)
                           for i, (edit, diff, mb, n) in enumerate(zip(e.edits, e.diffs, mbs, numbers))])

    def _step_completed(self, e: ev.StepCompleted) -> None:
        now = time.time()
        s, g = e.state, e.gate
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO steps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                      (e.run_id, e.step, e.epoch, e.edit_budget, e.scheduled_budget, e.train_hard, e.train_soft,
                       g.current_score if g else s.current_score, g.candidate_score if g else None,
                       s.best_score, e.decision, len(e.outcomes) + (e.examples is not None),  # every edits row
                       sum(o.fate == "selected" for o in e.outcomes),
                       # applied to the candidate: an edit a person rejected applied only to be shown
                       sum(o.status == "applied" and o.approval != "rejected" for o in e.outcomes),
                       e.n_minibatches, e.n_failed_minibatches, e.duration_s, now, e.train_errors,
                       *train_interval(c, e.run_id, e.step, e.train_hard), *ci(g.current_ci if g else None),
                       *ci(g.candidate_ci if g else None)))
            c.execute("DELETE FROM edits WHERE run_id = ? AND step = ?", (e.run_id, e.step))
            c.executemany("INSERT INTO edits VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          [(e.run_id, e.step, i, o.edit.op, o.edit.target, o.edit.content, o.edit.section,
                            o.edit.rationale, o.edit.source, o.edit.support, json.dumps(list(o.minibatches)),
                            o.fate, o.status, o.approval, o.gate, o.note) for i, o in enumerate(e.outcomes)])
            if e.candidate is not None:
                self._version(c, e.run_id, e.step, "candidate", e.candidate, g.candidate_score if g else None)
            self._version(c, e.run_id, e.step, "current", s.skill, s.current_score)
            if g is not None:
                self._gate(c, e.run_id, e.step, "step", e.decision, g, e.flipped)
            epoch_rejected = [r for r in s.rejected if r.step == e.step]
            c.executemany("INSERT OR REPLACE INTO rejected_buffer VALUES (?,?,?,?,?,?,?,?,?)",
                          [(e.run_id, e.step, i, e.epoch, json.dumps(edit_json(r.edit)), r.score_before,
                            r.score_after, r.reason, json.dumps([edit_json(x) for x in r.companions]))
                           for i, r in enumerate(epoch_rejected)])
            refused = f" ({g.reason})" if g is not None and not g.complete else ""
            self._log(c, e.run_id, e.step, "step", f"step {e.step}: {e.decision}{refused}")
            if e.examples is not None:
                self._examples(c, e, len(e.outcomes))
            self._save_state(c, e.run_id, s, now)

    def _examples(self, c: sqlite3.Connection, e: ev.StepCompleted, index: int) -> None:
        """The step's trial (worked examples, clue rules, a seed block removed or the reply template):
        its edit (after the step's others), candidate and gate."""
        x, outcome = e.examples, gate_outcome(e.examples.decision)
        what = {"template": "the scorer's reply template", "ablation": "the skill without one block of the seed",
                "rule": f"clue rules read off the train split's answers, for train items {', '.join(x.items)}"}.get(
            x.edit.source, f"worked examples of train items {', '.join(x.items)}")
        after = "skipped" if e.decision == "skip" else "rejected"
        note = f"{what}, gated alone after the step's candidate was {after}"
        c.execute("INSERT INTO edits VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (e.run_id, e.step, index, x.edit.op, x.edit.target, x.edit.content, x.edit.section,
                   x.edit.rationale, x.edit.source, x.edit.support, "[]", "selected", "applied", "", outcome, note))
        self._version(c, e.run_id, e.step, "examples", x.candidate, x.gate.candidate_score)
        self._gate(c, e.run_id, e.step, "examples", x.decision, x.gate, x.flipped)
        trial = TRIAL_NAMES.get(x.edit.source, TRIAL_NAMES["example"])
        self._log(c, e.run_id, e.step, "step", f"step {e.step}: {trial} {x.decision}")

    def _epoch_completed(self, e: ev.EpochCompleted) -> None:
        now = time.time()
        with self.tx() as c:
            if e.ran_slow_update:
                g = e.gate
                c.execute("INSERT OR REPLACE INTO slow_updates VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          (e.run_id, e.epoch, e.step, e.previous_guidance, e.guidance,
                           json.dumps(list(e.comparison.get("improved", ()))),
                           json.dumps(list(e.comparison.get("regressed", ()))),
                           json.dumps(list(e.comparison.get("persistent_failure", ()))),
                           json.dumps(list(e.comparison.get("stable_success", ()))),
                           e.decision, g.current_score if g else None, g.candidate_score if g else None,
                           e.slow_error))
                if e.slow_candidate is not None:
                    self._version(c, e.run_id, e.step, "slow_update", e.slow_candidate,
                                  g.candidate_score if g else None)
                if g is not None:
                    self._gate(c, e.run_id, e.step, "slow_update", e.decision, g, ())
                self._version(c, e.run_id, e.step, "epoch_end", e.state.skill, e.state.current_score)
            if e.ran_meta:
                c.execute("INSERT OR REPLACE INTO meta_skills VALUES (?,?,?,?)",
                          (e.run_id, e.epoch, e.meta_skill, e.meta_error))
            self._log(c, e.run_id, e.step, "epoch", f"epoch {e.epoch} done"
                      + (f"; slow update {e.decision}" if e.ran_slow_update else ""))
            self._save_state(c, e.run_id, e.state, now)

    def _test(self, e: ev.TestEvaluated) -> None:
        now = time.time()
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO tests VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (e.run_id, e.which, e.skill_sha, e.score, e.hard, e.soft, e.n_items, e.n_errors,
                       int(e.complete), *interval_of_test(c, e.run_id, e.state.step, e.which, e.score,
                                                          self.run_config_json(c, e.run_id))))
            c.execute(f"UPDATE runs SET {e.which}_test = ? WHERE id = ?", (e.score, e.run_id))
            missing = f" ({e.n_errors} of {e.n_items} items errored{'' if e.complete else ': INCOMPLETE'})" \
                if e.n_errors else ""
            self._log(c, e.run_id, e.state.step, "test", f"test {e.which}: {e.score:.3f}{missing}")
            self._save_state(c, e.run_id, e.state, now)

    def _lift(self, e: ev.LiftMeasured) -> None:
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO lift (run_id, metric, baseline, best_score, baseline_score, lift, "
                      "ci_low, ci_high, n_items, breakdown_json, breakdown_by) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (e.run_id, e.metric, e.baseline, e.best_score, e.baseline_score, e.lift, e.ci_low, e.ci_high,
                       e.n_items, json.dumps(e.breakdown), e.breakdown_by))
            self._log(c, e.run_id, 0, "lift", f"lift {e.lift:+.3f} over {e.baseline} "
                      f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}] on {e.n_items} test items")

    def _finished(self, e: ev.RunFinished) -> None:
        self.set_status(e.run_id, e.status, e.reason)
        with self.tx() as c:
            c.execute("UPDATE runs SET stage = 'done', stop_requested = 0 WHERE id = ?", (e.run_id,))

    def _version(self, c: sqlite3.Connection, run_id: str, step: int, kind: str, text: str,
                 score: float | None) -> None:
        c.execute("INSERT OR REPLACE INTO skill_versions VALUES (?,?,?,?,?,?,?)",
                  (run_id, step, kind, sha(text), text, score, time.time()))

    def _gate(self, c: sqlite3.Connection, run_id: str, step: int, kind: str, decision: str, g: Any,
              flipped: Sequence[tuple[str, float, float]]) -> None:
        config = json.loads(self.run_config_json(c, run_id))
        c.execute("INSERT OR REPLACE INTO gate_decisions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (run_id, step, kind, config.get("gate_mode"), config.get("gate_metric"), decision,
                   g.current_score, g.candidate_score, g.margin, g.p_value, g.n_items, g.n_evaluated,
                   g.wins, g.losses, int(g.early_stop), g.reason, json.dumps([list(f) for f in flipped]),
                   g.n_errors, g.n_errors_current, int(g.complete), *ci(g.current_ci), *ci(g.candidate_ci)))

    @staticmethod
    def run_config_json(c: sqlite3.Connection, run_id: str) -> str:
        row = c.execute("SELECT config_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row[0] if row else "{}"

    def _save_state(self, c: sqlite3.Connection, run_id: str, s: State, now: float) -> None:
        c.execute("UPDATE runs SET state_json = ?, step = ?, best_step = ?, best_score = ?, current_score = ?, "
                  "updated_at = ?, heartbeat_at = ? WHERE id = ?",
                  (json.dumps(s.to_json()), s.step, s.best_step, s.best_score, s.current_score, now, now, run_id))


_HANDLERS = {
    ev.RunStarted: Store._run_started,
    ev.SeedScored: Store._seed_scored,
    ev.StageChanged: Store._stage,
    ev.RolloutsDone: Store._rollouts,
    ev.ReflectionDone: Store._reflections,
    ev.ApprovalRequested: Store._approval_requested,
    ev.StepCompleted: Store._step_completed,
    ev.EpochCompleted: Store._epoch_completed,
    ev.TestEvaluated: Store._test,
    ev.LiftMeasured: Store._lift,
    ev.RunFinished: Store._finished,
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)

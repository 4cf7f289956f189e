"""Read-only access to the store, for the dashboard, `show`, `runs` and `export`.

Every query names the run and reads only what a view shows; the indexes in schema.py
back each one. Connections are opened read-only, so a reader can never corrupt a run.
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..vocabulary import LIVE_STATUSES, TRIAL_DONE, TRIAL_NAMES
from .writer import connect, db_path

# The sources of the model-free trials' edits, as an SQL list (fixed words, never user input).
_TRIALS = "(" + ", ".join(f"'{s}'" for s in TRIAL_NAMES) + ")"


def _dicts(rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    return [dict(r) for r in rows]


@dataclass
class Reader:
    path: Path

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = db_path(path)
        self.conn = connect(self.path, readonly=True)

    def close(self) -> None:
        self.conn.close()

    def q(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        return _dicts(self.conn.execute(sql, params).fetchall())

    def one(self, sql: str, params: tuple = ()) -> dict[str, Any] | None:
        row = self.conn.execute(sql, params).fetchone()
        return dict(row) if row else None

    # ---- runs -------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        return self.q(
            "SELECT r.id, r.name, r.task, r.status, r.reason, r.simulated, r.step, r.total_steps, r.epoch, "
            "r.stage, r.best_score, r.current_score, r.seed_test, r.best_test, r.final_test, r.created_at, "
            "r.started_at, r.finished_at, r.updated_at, r.config_json, r.none_test, r.pid, r.host, r.pid_started_at, "
            "(SELECT COUNT(*) FROM llm_calls c WHERE c.run_id = r.id AND c.cached = 0) AS calls, "
            "(SELECT COALESCE(SUM(cost_usd), 0) FROM llm_calls c WHERE c.run_id = r.id) AS cost_usd "
            "FROM runs r ORDER BY r.created_at DESC")

    def run(self, run_id: str) -> dict[str, Any] | None:
        row = self.one("SELECT * FROM runs WHERE id = ?", (run_id,))
        if row is not None:
            row["config"] = json.loads(row["config_json"] or "{}")
        return row

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM steps WHERE run_id = ? ORDER BY step", (run_id,))

    def edits(self, run_id: str, step: int | None = None) -> list[dict[str, Any]]:
        """A model-free trial's edit (worked examples, clue rules, the reply template) was gated
        alone: its gate's margin is its `attribution`."""
        sql = ("SELECT e.*, g.margin AS attribution FROM edits e LEFT JOIN gate_decisions g ON g.run_id = e.run_id "
               f"AND g.step = e.step AND g.kind = 'examples' AND e.source IN {_TRIALS} "
               "WHERE e.run_id = ?")
        if step is None:
            return self.q(sql + " ORDER BY e.step, e.idx", (run_id,))
        return self.q(sql + " AND e.step = ? ORDER BY e.idx", (run_id, step))

    def versions(self, run_id: str, with_content: bool = False) -> list[dict[str, Any]]:
        cols = "step, kind, sha, score, created_at" + (", content" if with_content else "")
        return self.q(f"SELECT {cols} FROM skill_versions WHERE run_id = ? ORDER BY step, created_at", (run_id,))

    def version(self, run_id: str, step: int, kind: str) -> str | None:
        row = self.one("SELECT content FROM skill_versions WHERE run_id = ? AND step = ? AND kind = ?",
                       (run_id, step, kind))
        return row["content"] if row else None

    def skill_at(self, run_id: str, step: int) -> str | None:
        """The incumbent skill after `step` (after its epoch-end update, if any)."""
        row = self.one("SELECT content FROM skill_versions WHERE run_id = ? AND step <= ? "
                       "AND kind IN ('seed', 'current', 'epoch_end') ORDER BY step DESC, "
                       "CASE kind WHEN 'epoch_end' THEN 0 WHEN 'current' THEN 1 ELSE 2 END LIMIT 1",
                       (run_id, step))
        return row["content"] if row else None

    def best_skill(self, run_id: str) -> str | None:
        row = self.run(run_id)
        if row is None:
            return None
        if row["state_json"]:
            return json.loads(row["state_json"])["best_skill"]
        return self.version(run_id, 0, "seed")

    def gate_decisions(self, run_id: str) -> list[dict[str, Any]]:
        """`trial`: which model-free change an "examples" gate judged (the source of its edit:
        example | rule | template | ablation); None for every other gate."""
        return self.q("SELECT g.*, (SELECT e.source FROM edits e WHERE e.run_id = g.run_id AND e.step = g.step "
                      f"AND g.kind = 'examples' AND e.source IN {_TRIALS} LIMIT 1) AS trial "
                      "FROM gate_decisions g WHERE g.run_id = ? ORDER BY g.step, g.kind", (run_id,))

    def rejected_buffer(self, run_id: str) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM rejected_buffer WHERE run_id = ? ORDER BY step, idx", (run_id,))

    def reflections(self, run_id: str, step: int) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM reflections WHERE run_id = ? AND step = ? ORDER BY idx", (run_id, step))

    def slow_updates(self, run_id: str) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM slow_updates WHERE run_id = ? ORDER BY epoch", (run_id,))

    def meta_skills(self, run_id: str) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM meta_skills WHERE run_id = ? ORDER BY epoch", (run_id,))

    def lift(self, run_id: str) -> dict[str, Any] | None:
        """The run's skill lift (None until its test scores are complete)."""
        row = self.one("SELECT * FROM lift WHERE run_id = ?", (run_id,))
        if row is not None:
            row["breakdown"] = json.loads(row.pop("breakdown_json") or "{}")
        return row

    def lifts(self) -> dict[str, dict[str, Any]]:
        """Every run's skill lift by run id (the Home page's table), without the breakdown."""
        return {r["run_id"]: r for r in self.q("SELECT run_id, metric, baseline, best_score, baseline_score, lift, "
                                                "ci_low, ci_high, n_items FROM lift")}

    def tests(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {r["which"]: r for r in self.q("SELECT * FROM tests WHERE run_id = ?", (run_id,))}

    def events(self, run_id: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.q("SELECT * FROM events WHERE run_id = ? ORDER BY id DESC LIMIT ?", (run_id, limit))

    def approvals(self, run_id: str, step: int | None = None) -> list[dict[str, Any]]:
        if step is None:
            return self.q("SELECT * FROM approvals WHERE run_id = ? ORDER BY step, idx", (run_id,))
        return self.q("SELECT * FROM approvals WHERE run_id = ? AND step = ? ORDER BY idx", (run_id, step))

    def waiting_runs(self) -> list[dict[str, Any]]:
        return self.q("SELECT id, name, step, status, pid, host, pid_started_at FROM runs "
                      "WHERE status = 'waiting_approval'")

    # ---- rollouts ---------------------------------------------------------------------
    def rollouts(self, run_id: str, step: int, split: str, purpose: str | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT r.*, i.input_json, i.expected FROM rollouts r JOIN items i "
               "ON i.run_id = r.run_id AND i.item_id = r.item_id WHERE r.run_id = ? AND r.step = ? AND r.split = ?")
        params: tuple = (run_id, step, split)
        if purpose:
            sql += " AND r.purpose = ?"
            params += (purpose,)
        return self.q(sql + " ORDER BY r.purpose, r.item_id", params)

    def rollout_steps(self, run_id: str, split: str) -> list[int]:
        return [r["step"] for r in self.q("SELECT DISTINCT step FROM rollouts WHERE run_id = ? AND split = ? "
                                          "ORDER BY step", (run_id, split))]

    # ---- usage ------------------------------------------------------------------------
    # `errors` counts calls that failed (llm_calls.error); `notes` counts calls that gave a
    # usable reply after faults (llm_calls.note: retried, truncated, repaired, dropped parts).
    def usage_by_stage(self, run_id: str) -> list[dict[str, Any]]:
        return self.q("SELECT stage, role, COUNT(*) AS calls, SUM(cached) AS cache_hits, "
                      "SUM(error != '') AS errors, SUM(note != '') AS notes, SUM(prompt_tokens) AS prompt_tokens, "
                      "SUM(completion_tokens) AS completion_tokens, SUM(cost_usd) AS cost_usd, "
                      "SUM(latency_s) AS latency_s FROM llm_calls WHERE run_id = ? GROUP BY stage, role "
                      "ORDER BY stage, role", (run_id,))

    def usage(self, run_id: str) -> dict[str, Any]:
        row = self.one(
            "SELECT SUM(role = 'target' AND cached = 0) AS target_calls, "
            "SUM(role = 'optimizer' AND cached = 0) AS optimizer_calls, "
            "SUM(role = 'judge' AND cached = 0) AS judge_calls, "
            "COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, "
            "COALESCE(SUM(completion_tokens), 0) AS completion_tokens, "
            "COALESCE(SUM(cost_usd), 0) AS cost_usd, COALESCE(SUM(cached), 0) AS cache_hits, "
            "SUM(error != '') AS errors, SUM(note != '') AS notes FROM llm_calls WHERE run_id = ?",
            (run_id,)) or {}
        cache_row = self.one("SELECT COUNT(*) AS n, COALESCE(SUM(cached), 0) AS hits FROM rollouts WHERE run_id = ?",
                             (run_id,)) or {}
        row = {k: (v or 0) for k, v in row.items()}
        row["eval_cache_hits"] = cache_row.get("hits", 0)
        return row

    def call_errors(self, run_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The newest calls that failed."""
        return self.q("SELECT * FROM llm_calls WHERE run_id = ? AND error != '' ORDER BY id DESC LIMIT ?",
                      (run_id, limit))

    def call_faults(self, run_id: str, limit: int = 200) -> list[dict[str, Any]]:
        """The newest calls that failed or carry a note: every fault a model made."""
        return self.q("SELECT * FROM llm_calls WHERE run_id = ? AND (error != '' OR note != '') "
                      "ORDER BY id DESC LIMIT ?", (run_id, limit))

    # ---- pages: Skill evolution, Gate timeline, Slow updates, Rollouts -----------------
    # Each query is bounded by the run and, where a table grows with the run (rollouts),
    # by one step or one split, so the pages stay fast on runs with 100,000+ rollouts.
    def applied_edits(self, run_id: str) -> list[dict[str, Any]]:
        """Every edit that changed a candidate (blame attributes lines to them)."""
        return self.q("SELECT step, idx, op, target, content, section, gate FROM edits "
                      "WHERE run_id = ? AND status = 'applied' ORDER BY step, idx", (run_id,))

    def rejected_buffer_at(self, run_id: str, step: int, epoch: int | None = None) -> list[dict[str, Any]]:
        """The rejected-edit buffer as step `step` saw it: rows of earlier steps (of `epoch` if given)."""
        sql = "SELECT * FROM rejected_buffer WHERE run_id = ? AND step < ?"
        params: tuple = (run_id, step)
        if epoch is not None:
            sql += " AND epoch = ?"
            params += (epoch,)
        return self.q(sql + " ORDER BY step, idx", params)

    def items_by_ids(self, run_id: str, item_ids: list[str]) -> list[dict[str, Any]]:
        """Items (input, expected) by id; primary-key lookups in chunks under SQLite's variable limit."""
        out: list[dict[str, Any]] = []
        ids = list(dict.fromkeys(item_ids))
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out += self.q(f"SELECT item_id, split, input_json, expected FROM items WHERE run_id = ? "
                          f"AND item_id IN ({','.join('?' * len(chunk))})", (run_id, *chunk))
        order = {item_id: n for n, item_id in enumerate(ids)}
        return sorted(out, key=lambda r: order[r["item_id"]])

    def rollout_purposes(self, run_id: str, split: str, step: int) -> list[str]:
        return [r["purpose"] for r in self.q("SELECT DISTINCT purpose FROM rollouts WHERE run_id = ? AND split = ? "
                                             "AND step = ? ORDER BY purpose", (run_id, split, step))]

    def previous_results(self, run_id: str, split: str, purpose: str, step: int,
                         item_ids: list[str]) -> list[dict[str, Any]]:
        """Each item's latest result before `step` on the same split and purpose (item index lookups)."""
        out: list[dict[str, Any]] = []
        ids = list(dict.fromkeys(item_ids))
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            # Bare columns with MAX() come from the row holding the maximum (documented SQLite behaviour).
            out += self.q(f"SELECT item_id, MAX(step) AS step, hard, soft FROM rollouts INDEXED BY rollouts_by_item "
                          f"WHERE run_id = ? AND item_id IN ({','.join('?' * len(chunk))}) AND split = ? "
                          f"AND purpose = ? AND step < ? GROUP BY item_id",
                          (run_id, *chunk, split, purpose, step))
        return out

    def selection_matrix(self, run_id: str) -> list[tuple[int, str, str, float]]:
        """(step, purpose, item_id, hard) of every selection rollout: the flip matrix's only input."""
        rows = self.conn.execute("SELECT step, purpose, item_id, hard FROM rollouts "
                                 "WHERE run_id = ? AND split = 'selection' ORDER BY step", (run_id,)).fetchall()
        return [tuple(r) for r in rows]

    # ---- pages: Home, Monitor, Approvals, Compare --------------------------------------
    def live_pids(self) -> dict[str, int | None]:
        """pid of every run that claims to be live (runs_by_status index), to spot dead trainers."""
        return {r["id"]: r["pid"] for r in self.q(
            f"SELECT id, pid FROM runs WHERE status IN ({','.join('?' * len(LIVE_STATUSES))})", LIVE_STATUSES)}

    def pending_approval_step(self, run_id: str) -> int | None:
        """The step whose edits wait for a decision (approvals_pending index), or None."""
        row = self.one("SELECT MIN(step) AS step FROM approvals WHERE status = 'pending' AND run_id = ?", (run_id,))
        return row["step"] if row else None

    def approval_history(self, run_id: str) -> list[dict[str, Any]]:
        """Decisions per step of an approval-mode run: one row per step and status."""
        return self.q("SELECT step, status, COUNT(*) AS n FROM approvals WHERE run_id = ? GROUP BY step, status "
                      "ORDER BY step, status", (run_id,))

    def seed_score(self, run_id: str) -> float | None:
        row = self.one("SELECT score FROM skill_versions WHERE run_id = ? AND step = 0 AND kind = 'seed'", (run_id,))
        return row["score"] if row else None

    # ---- sweeps (skillopt/sweep): the Sweeps page and `sweep show` ----------------------
    def sweeps(self) -> list[dict[str, Any]]:
        return self.q(f"SELECT s.*, COUNT(t.idx) AS n_trials, SUM(t.status IN ({','.join('?' * len(TRIAL_DONE))})) "
                      "AS n_done FROM sweeps s LEFT JOIN sweep_trials t ON t.sweep_id = s.id GROUP BY s.id "
                      "ORDER BY s.created_at DESC", TRIAL_DONE)

    def sweep(self, sweep_id: str) -> dict[str, Any] | None:
        row = self.one("SELECT * FROM sweeps WHERE id = ?", (sweep_id,))
        if row is not None:
            row["grid"] = json.loads(row["grid_json"] or "[]")
            row["config"] = json.loads(row["config_json"] or "{}")
        return row

    def sweep_trials(self, sweep_id: str) -> list[dict[str, Any]]:
        """Each trial with its run's progress, scores, calls and cost (sweep_trials_by_run, llm_calls_by_run)."""
        return self.q(
            "SELECT t.*, r.name AS run_name, r.status AS run_status, r.step, r.total_steps, r.best_score, "
            "r.seed_test, r.best_test, r.final_test, r.pid AS run_pid, r.host AS run_host, "
            "r.pid_started_at AS run_pid_started_at, "
            "(SELECT COUNT(*) FROM llm_calls c WHERE c.run_id = t.run_id AND c.cached = 0) AS calls, "
            "(SELECT COALESCE(SUM(cost_usd), 0) FROM llm_calls c WHERE c.run_id = t.run_id) AS cost_usd "
            "FROM sweep_trials t LEFT JOIN runs r ON r.id = t.run_id WHERE t.sweep_id = ? ORDER BY t.idx",
            (sweep_id,))

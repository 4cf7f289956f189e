"""The store's schema, as sqlite-utils migrations. Append new migrations; never edit old ones:
a database created by an older version is brought up to date on open.
"""
from __future__ import annotations

import sqlite_utils
from sqlite_utils.migrations import Migrations

migrations = Migrations("skillopt")


@migrations()
def m001_initial(db: sqlite_utils.Database) -> None:
    db.executescript(_SCHEMA)



@migrations()
def m002_errors_notes_and_dropped_edits(db: sqlite_utils.Database) -> None:
    """Errors are data: every gate and test row counts its errored items and says whether
    its score is complete; llm_calls keeps notes on successful calls apart from errors;
    edits keep why they got their fate; a rejected edit remembers the edits rejected with it."""
    db.executescript(_M002)
    for row in db.execute("SELECT id, error FROM llm_calls WHERE error != ''").fetchall():
        error, note = split_notes(row[1])
        db.execute("UPDATE llm_calls SET error = ?, note = ? WHERE id = ?", (error, note, row[0]))



@migrations()
def m003_skill_lift(db: sqlite_utils.Database) -> None:
    """The test score with no skill at all, and the lift of the best skill over the better
    of no skill and the seed, with its interval and breakdown."""
    db.executescript(_M003)


@migrations()
def m004_process_identity(db: sqlite_utils.Database) -> None:
    """A trainer process is identified by host, pid and start time: a pid alone may name an
    unrelated process on another machine or after a reboot."""
    db.executescript(_M004)


@migrations()
def m005_sweeps(db: sqlite_utils.Database) -> None:
    """Grid searches: a sweep, its grid and its trials (each trial is an ordinary run)."""
    db.executescript(_M005)


@migrations()
def m006_pins_and_integrations(db: sqlite_utils.Database) -> None:
    """Pinned must-not-regress items per task, and a run's MLflow run id (a resumed run
    continues the same MLflow run)."""
    db.executescript(_M006)


@migrations()
def m007_sample_intervals(db: sqlite_utils.Database) -> None:
    """Sampled scores (samples_per_item > 1): each rollout's and each cached result's samples
    and their spread, and the 95% sampling-noise interval of every train, gate and test
    score. All NULL for a score taken once per item."""
    db.executescript(_M007)


@migrations()
def m008_dashboard_indexes(db: sqlite_utils.Database) -> None:
    """Covering indexes for the dashboard's per-run totals, which otherwise read every row of
    a big run: evaluation-cache hits (Monitor, Compare: 120,000 rollouts, 0.24 s -> 0.01 s)
    and each run's calls and cost (the run list of every page)."""
    db.executescript(_M008)


@migrations()
def m009_lift_breakdown_by(db: sqlite_utils.Database) -> None:
    """What the lift's breakdown groups by: "field" on a task graded field by field (JSON),
    "answer" on a label task (every breakdown stored before this one), "" with none."""
    db.executescript(_M009)


# Notes a successful call may carry, as the first word of one "; "-separated part.
NOTE_KINDS = ("retried", "truncated", "dropped")


def split_notes(text: str) -> tuple[str, str]:
    """(error, note) of an old llm_calls.error value: notes on a successful call were stored
    there, joined by "; ". An invalid_json part whose repair was asked is a note (the repair
    decided); any other part is an error."""
    errors, notes = [], []
    for part in (p for p in text.split("; ") if p):
        kind = part.split(":", 1)[0].strip()
        is_note = kind in NOTE_KINDS or (kind == "invalid_json" and part.endswith("(repair asked)"))
        (notes if is_note else errors).append(part)
    return "; ".join(errors), "; ".join(notes)


_M002 = """
ALTER TABLE llm_calls ADD COLUMN note TEXT DEFAULT '';
ALTER TABLE gate_decisions ADD COLUMN n_errors INTEGER DEFAULT 0;
ALTER TABLE gate_decisions ADD COLUMN n_errors_current INTEGER DEFAULT 0;
ALTER TABLE gate_decisions ADD COLUMN complete INTEGER DEFAULT 1;
ALTER TABLE tests ADD COLUMN n_errors INTEGER DEFAULT 0;
ALTER TABLE tests ADD COLUMN complete INTEGER DEFAULT 1;
ALTER TABLE steps ADD COLUMN train_errors INTEGER DEFAULT 0;
ALTER TABLE edits ADD COLUMN note TEXT DEFAULT '';
ALTER TABLE rejected_buffer ADD COLUMN companions_json TEXT DEFAULT '[]';
"""

_SCHEMA = """
CREATE TABLE runs (
  id TEXT PRIMARY KEY, name TEXT, task TEXT, task_path TEXT, config_json TEXT, seed_skill TEXT,
  status TEXT, reason TEXT DEFAULT '', simulated INTEGER DEFAULT 0,
  total_steps INTEGER DEFAULT 0, steps_per_epoch INTEGER DEFAULT 0, step INTEGER DEFAULT 0,
  epoch INTEGER DEFAULT 0, stage TEXT DEFAULT '', stage_detail TEXT DEFAULT '',
  best_step INTEGER DEFAULT 0, best_score REAL, current_score REAL,
  seed_test REAL, best_test REAL, final_test REAL,
  pid INTEGER, stop_requested INTEGER DEFAULT 0, state_json TEXT,
  created_at REAL, started_at REAL, updated_at REAL, finished_at REAL, heartbeat_at REAL
);
CREATE TABLE items (
  run_id TEXT, item_id TEXT, split TEXT, input_json TEXT, expected TEXT,
  PRIMARY KEY (run_id, item_id)
);
CREATE TABLE steps (
  run_id TEXT, step INTEGER, epoch INTEGER, edit_budget INTEGER, scheduled_budget INTEGER,
  train_hard REAL, train_soft REAL, current_score REAL, candidate_score REAL, best_score REAL,
  decision TEXT, n_proposed INTEGER, n_selected INTEGER, n_applied INTEGER,
  n_minibatches INTEGER, n_failed_minibatches INTEGER, duration_s REAL, finished_at REAL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE skill_versions (
  run_id TEXT, step INTEGER, kind TEXT, sha TEXT, content TEXT, score REAL, created_at REAL,
  PRIMARY KEY (run_id, step, kind)
);
CREATE TABLE edits (
  run_id TEXT, step INTEGER, idx INTEGER, op TEXT, target TEXT, content TEXT, section TEXT,
  rationale TEXT, source TEXT, support INTEGER, minibatches TEXT, fate TEXT, status TEXT,
  approval TEXT, gate TEXT,
  PRIMARY KEY (run_id, step, idx)
);
CREATE TABLE rollouts (
  run_id TEXT, step INTEGER, split TEXT, purpose TEXT, skill_sha TEXT, item_id TEXT,
  output TEXT, hard REAL, soft REAL, feedback TEXT, error TEXT, cached INTEGER,
  PRIMARY KEY (run_id, step, purpose, item_id)
);
CREATE INDEX rollouts_by_split ON rollouts (run_id, split, step);
CREATE INDEX rollouts_by_item ON rollouts (run_id, item_id);
CREATE TABLE reflections (
  run_id TEXT, step INTEGER, idx INTEGER, kind TEXT, item_ids TEXT, ok INTEGER,
  summary TEXT, error TEXT, n_edits INTEGER,
  PRIMARY KEY (run_id, step, idx)
);
CREATE TABLE gate_decisions (
  run_id TEXT, step INTEGER, kind TEXT, mode TEXT, metric TEXT, decision TEXT,
  current_score REAL, candidate_score REAL, margin REAL, p_value REAL, n_items INTEGER,
  n_evaluated INTEGER, wins INTEGER, losses INTEGER, early_stop INTEGER, reason TEXT,
  flipped_json TEXT,
  PRIMARY KEY (run_id, step, kind)
);
CREATE TABLE rejected_buffer (
  run_id TEXT, step INTEGER, idx INTEGER, epoch INTEGER, edit_json TEXT,
  score_before REAL, score_after REAL, reason TEXT,
  PRIMARY KEY (run_id, step, idx)
);
CREATE TABLE slow_updates (
  run_id TEXT, epoch INTEGER, step INTEGER, previous_guidance TEXT, guidance TEXT,
  improved_json TEXT, regressed_json TEXT, persistent_json TEXT, stable_json TEXT,
  decision TEXT, score_before REAL, score_after REAL, error TEXT,
  PRIMARY KEY (run_id, epoch)
);
CREATE TABLE meta_skills (
  run_id TEXT, epoch INTEGER, content TEXT, error TEXT,
  PRIMARY KEY (run_id, epoch)
);
CREATE TABLE tests (
  run_id TEXT, which TEXT, skill_sha TEXT, score REAL, hard REAL, soft REAL, n_items INTEGER,
  PRIMARY KEY (run_id, which)
);
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY, run_id TEXT, step INTEGER, role TEXT, stage TEXT, model TEXT,
  prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL, latency_s REAL,
  cached INTEGER, error TEXT, attempts INTEGER, created_at REAL
);
CREATE INDEX llm_calls_by_run ON llm_calls (run_id, stage);
CREATE INDEX llm_calls_by_step ON llm_calls (run_id, step);
CREATE TABLE llm_cache (key TEXT PRIMARY KEY, model TEXT, value_json TEXT, created_at REAL);
CREATE TABLE eval_cache (
  key TEXT PRIMARY KEY, output TEXT, hard REAL, soft REAL, feedback TEXT, prompt TEXT, created_at REAL
);
CREATE TABLE approvals (
  run_id TEXT, step INTEGER, idx INTEGER, edit_json TEXT, diff TEXT, status TEXT,
  content TEXT, decided_at REAL,
  PRIMARY KEY (run_id, step, idx)
);
CREATE INDEX approvals_pending ON approvals (status, run_id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY, run_id TEXT, step INTEGER, type TEXT, message TEXT, created_at REAL
);
CREATE INDEX events_by_run ON events (run_id, id);
CREATE INDEX runs_by_status ON runs (status);
"""

_M003 = """
ALTER TABLE runs ADD COLUMN none_test REAL;
CREATE TABLE lift (
  run_id TEXT PRIMARY KEY, metric TEXT, baseline TEXT, best_score REAL, baseline_score REAL,
  lift REAL, ci_low REAL, ci_high REAL, n_items INTEGER, breakdown_json TEXT DEFAULT '{}'
);
"""

_M004 = """
ALTER TABLE runs ADD COLUMN host TEXT DEFAULT '';
ALTER TABLE runs ADD COLUMN pid_started_at REAL;
"""

_M005 = """
CREATE TABLE sweeps (
  id TEXT PRIMARY KEY, name TEXT, task TEXT, task_path TEXT DEFAULT '', seed_skill TEXT, grid_json TEXT,
  config_json TEXT, seeds INTEGER, backend TEXT, workers INTEGER, ray_address TEXT DEFAULT '', max_calls INTEGER,
  max_cost_usd REAL, status TEXT, reason TEXT DEFAULT '',
  pid INTEGER, host TEXT DEFAULT '', pid_started_at REAL, stop_requested INTEGER DEFAULT 0,
  created_at REAL, updated_at REAL, finished_at REAL
);
CREATE TABLE sweep_trials (
  sweep_id TEXT, idx INTEGER, point_json TEXT, seed INTEGER, run_id TEXT, status TEXT,
  reason TEXT DEFAULT '', attempts INTEGER DEFAULT 0, updated_at REAL,
  config_json TEXT DEFAULT '', max_calls INTEGER DEFAULT 0, max_cost_usd REAL DEFAULT 0,
  pid INTEGER, host TEXT DEFAULT '', pid_started_at REAL, node TEXT DEFAULT '',
  started_at REAL, finished_at REAL,
  PRIMARY KEY (sweep_id, idx)
);
CREATE INDEX sweep_trials_by_run ON sweep_trials (run_id);
ALTER TABLE runs ADD COLUMN sweep_id TEXT DEFAULT '';
CREATE INDEX runs_by_sweep ON runs (sweep_id);
"""

_M006 = """
CREATE TABLE pins (task TEXT, item_id TEXT, created_at REAL, PRIMARY KEY (task, item_id));
ALTER TABLE runs ADD COLUMN mlflow_run_id TEXT DEFAULT '';
"""

_M007 = """
ALTER TABLE rollouts ADD COLUMN n_samples INTEGER;
ALTER TABLE rollouts ADD COLUMN hard_sd REAL;
ALTER TABLE rollouts ADD COLUMN soft_sd REAL;
ALTER TABLE rollouts ADD COLUMN samples_json TEXT;
ALTER TABLE eval_cache ADD COLUMN samples_json TEXT;
ALTER TABLE steps ADD COLUMN train_lo REAL;
ALTER TABLE steps ADD COLUMN train_hi REAL;
ALTER TABLE steps ADD COLUMN current_lo REAL;
ALTER TABLE steps ADD COLUMN current_hi REAL;
ALTER TABLE steps ADD COLUMN candidate_lo REAL;
ALTER TABLE steps ADD COLUMN candidate_hi REAL;
ALTER TABLE gate_decisions ADD COLUMN current_lo REAL;
ALTER TABLE gate_decisions ADD COLUMN current_hi REAL;
ALTER TABLE gate_decisions ADD COLUMN candidate_lo REAL;
ALTER TABLE gate_decisions ADD COLUMN candidate_hi REAL;
ALTER TABLE tests ADD COLUMN score_lo REAL;
ALTER TABLE tests ADD COLUMN score_hi REAL;
"""

_M008 = """
CREATE INDEX rollouts_by_cached ON rollouts (run_id, cached);
CREATE INDEX llm_calls_by_cached ON llm_calls (run_id, cached, cost_usd);
"""

_M009 = """
ALTER TABLE lift ADD COLUMN breakdown_by TEXT DEFAULT '';
UPDATE lift SET breakdown_by = 'answer' WHERE breakdown_json NOT IN ('', '{}');
"""

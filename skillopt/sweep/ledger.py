"""The sweep's bookkeeping in the store: the sweeps and sweep_trials rows (migration m005).

Each trial's run id is fixed when the sweep is created (`<sweep id>-<idx>`), so however often a
controller dies and a sweep is resumed, a trial can only ever create one run: a second start
of the same trial finds the run and resumes it, never duplicates it. Every write is one
transaction through the Store's public API; the controller, `sweep stop`, the dashboard and
the trial processes may all write here at once.
"""
from __future__ import annotations

import json
import time
from typing import Any, Iterable, Mapping, Sequence

from ..errors import UserError
from ..store.writer import Store
from ..vocabulary import SWEEP_LIVE
from .grid import Axis, Trial, point_json

TRIAL_COLUMNS = ("status", "reason", "attempts", "config_json", "max_calls", "max_cost_usd", "pid", "host",
                 "pid_started_at", "node", "started_at", "finished_at")
SWEEP_COLUMNS = ("status", "reason", "pid", "host", "pid_started_at", "workers", "max_calls", "max_cost_usd",
                 "finished_at", "stop_requested")


def trial_run_id(sweep_id: str, idx: int) -> str:
    return f"{sweep_id}-{idx:03d}"


def create(store: Store, *, sweep_id: str, name: str, task: str, task_path: str, seed_skill: str | None,
           axes: Sequence[Axis], base: Mapping[str, Any], seeds: int, backend: str, workers: int,
           ray_address: str, max_calls: int, max_cost_usd: float, trials: Iterable[Trial]) -> None:
    now = time.time()
    grid = json.dumps([[a.key, list(a.values)] for a in axes])
    with store.tx() as c:
        if c.execute("SELECT 1 FROM sweeps WHERE id = ?", (sweep_id,)).fetchone():
            raise UserError(f"sweep {sweep_id} already exists")
        c.execute("INSERT INTO sweeps (id, name, task, task_path, seed_skill, grid_json, config_json, seeds, backend, "
                  "workers, ray_address, max_calls, max_cost_usd, status, created_at, updated_at) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (sweep_id, name, task, task_path, seed_skill, grid, json.dumps(dict(base), sort_keys=True), seeds,
                   backend, workers, ray_address, max_calls, max_cost_usd, "pending", now, now))
        c.executemany("INSERT INTO sweep_trials (sweep_id, idx, point_json, seed, run_id, status, updated_at) "
                      "VALUES (?,?,?,?,?,?,?)",
                      [(sweep_id, t.idx, point_json(t), t.seed, trial_run_id(sweep_id, t.idx), "pending", now)
                       for t in trials])


def get(store: Store, sweep_id: str) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM sweeps WHERE id = ?", (sweep_id,))
    return dict(rows[0]) if rows else None


def trials(store: Store, sweep_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in store.query("SELECT * FROM sweep_trials WHERE sweep_id = ? ORDER BY idx", (sweep_id,))]


def trial(store: Store, sweep_id: str, idx: int) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM sweep_trials WHERE sweep_id = ? AND idx = ?", (sweep_id, idx))
    return dict(rows[0]) if rows else None


def as_trial(row: Mapping[str, Any]) -> Trial:
    return Trial(row["idx"], tuple(json.loads(row["point_json"]).items()), row["seed"])


def update_trial(store: Store, sweep_id: str, idx: int, **values: Any) -> None:
    bad = set(values) - set(TRIAL_COLUMNS)
    if bad:
        raise ValueError(f"not a sweep_trials column: {sorted(bad)}")
    cols = ", ".join(f"{k} = ?" for k in values)
    with store.tx() as c:
        c.execute(f"UPDATE sweep_trials SET {cols}, updated_at = ? WHERE sweep_id = ? AND idx = ?",
                  (*values.values(), time.time(), sweep_id, idx))


def update_sweep(store: Store, sweep_id: str, **values: Any) -> None:
    bad = set(values) - set(SWEEP_COLUMNS)
    if bad:
        raise ValueError(f"not a sweeps column: {sorted(bad)}")
    cols = ", ".join(f"{k} = ?" for k in values)
    with store.tx() as c:
        c.execute(f"UPDATE sweeps SET {cols}, updated_at = ? WHERE id = ?", (*values.values(), time.time(), sweep_id))


def request_stop(store: Store, sweep_id: str) -> None:
    with store.tx() as c:
        c.execute("UPDATE sweeps SET stop_requested = 1, status = CASE WHEN status IN ('pending', 'running') "
                  "THEN 'stopping' ELSE status END, updated_at = ? WHERE id = ?", (time.time(), sweep_id))


def stop_requested(store: Store, sweep_id: str) -> bool:
    rows = store.query("SELECT stop_requested FROM sweeps WHERE id = ?", (sweep_id,))
    return bool(rows and rows[0][0])


def tag_run(store: Store, run_id: str, sweep_id: str) -> None:
    """Mark a run as a trial of the sweep (runs.sweep_id), so every view can tell."""
    with store.tx() as c:
        c.execute("UPDATE runs SET sweep_id = ? WHERE id = ?", (sweep_id, run_id))


def spent(store: Store, sweep_id: str) -> dict[str, tuple[int, float]]:
    """(real calls, cost) of each trial's run so far."""
    rows = store.query("SELECT c.run_id, SUM(c.cached = 0), COALESCE(SUM(c.cost_usd), 0) FROM llm_calls c "
                       "WHERE c.run_id IN (SELECT run_id FROM sweep_trials WHERE sweep_id = ?) GROUP BY c.run_id",
                       (sweep_id,))
    return {r[0]: (int(r[1] or 0), float(r[2] or 0.0)) for r in rows}


def is_live(sweep: Mapping[str, Any]) -> bool:
    return sweep.get("status") in SWEEP_LIVE

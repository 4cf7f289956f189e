"""Wiring of one run: task + config + store + models -> trainer. Used by the CLI.

`start` validates everything BEFORE the run is written to the store, so bad input never
leaves a partial run behind; `resume` continues from the state of the last completed
unit of work.
"""
from __future__ import annotations

import json
import os
from typing import Callable

from . import integrations
from .config import RunConfig, load_mapping
from .errors import UserError
from .events import RunFinished, emit
from .launcher import new_run_id
from .process import trainer_alive
from .models.limits import Meter
from .models.llm import build_models
from .plan import Plan
from .preflight import check_run
from .skill import validate as validate_skill
from .state import State
from .store.writer import Store
from .tasks.loader import load_task
from .trainer import ApprovalDecision, Hooks, fit
from .vocabulary import LIVE_STATUSES


def _decisions(store: Store, run_id: str) -> Callable[[int], list[ApprovalDecision]]:
    def read(step: int) -> list[ApprovalDecision]:
        return [ApprovalDecision(status=r["status"], content=r["content"] or "") for r in store.approvals(run_id, step)]
    return read


def _meter(store: Store, run_id: str, config: RunConfig) -> Meter:
    """Budgets count what the run already spent before an interruption."""
    row = store.query("SELECT COUNT(*), COALESCE(SUM(cost_usd), 0) FROM llm_calls "
                      "WHERE run_id = ? AND cached = 0", (run_id,))[0]
    meter = Meter(max_calls=config.max_calls, max_cost_usd=config.max_cost_usd)
    meter.calls, meter.cost_usd = int(row[0]), float(row[1])
    return meter


def _train(store: Store, run_id: str, task, config: RunConfig, state: State | None,
           callbacks: tuple = ()) -> str:
    meter = _meter(store, run_id, config)
    models = build_models(config, store, run_id, meter)
    # MLflow and notifications, as the config asks: after the store, so they see committed work.
    extra = integrations.callbacks(store, run_id, config)
    hooks = Hooks(callbacks=(store, *extra, *callbacks), should_stop=lambda: store.stop_requested(run_id),
                  decisions=_decisions(store, run_id), cache=store)
    try:
        return fit(task, config, models, hooks, run_id=run_id, state=state)
    except KeyboardInterrupt:  # Ctrl-C or the dashboard's SIGTERM fallback: resumable, not failed
        store.set_status(run_id, "stopped", "interrupted")
        emit(extra, RunFinished(run_id=run_id, status="stopped", reason="interrupted"))
        raise


def prepare(task_ref, config: RunConfig, seed_skill: str | None = None):
    """Load and check everything a run needs; raises UserError with one line.

    task_ref: a task name or folder, or a task prepare() returned (the CLI checks before it
    opens the store, then starts with that task: checked again, loaded once)."""
    task = load_task(task_ref) if isinstance(task_ref, (str, os.PathLike)) else task_ref
    if seed_skill is not None:
        validate_skill(seed_skill, origin="seed skill")
        task = task.with_seed_skill(seed_skill)
    Plan.make(task, config)  # empty splits and the like fail here, before anything is stored
    check_run(task, config)  # unknown providers, simulated models on a real task
    return task


def start(store: Store, task_ref, config: RunConfig, *, name: str = "", run_id: str | None = None,
          seed_skill: str | None = None, callbacks: tuple = ()) -> tuple[str, str]:
    task = prepare(task_ref, config, seed_skill)
    config = config.for_task(task)  # stored resolved: readers and a resume see the metric it ran on
    run_id = run_id or new_run_id()
    if store.run(run_id) is not None:
        raise UserError(f"run {run_id} already exists")
    plan = Plan.make(task, config)
    store.create_run(run_id=run_id, name=name or f"{task.name} {run_id[-6:]}", task=task.name,
                     task_path=str(task.path), config_json=config.to_json(), simulated=config.simulated,
                     items=plan.all_items(), seed_skill=task.seed_skill)
    return run_id, _train(store, run_id, task, config, None, callbacks)


def resume(store: Store, run_id: str, callbacks: tuple = ()) -> str:
    row = store.run(run_id)
    if row is None:
        raise UserError(f"no run {run_id} in {store.path}")
    if row["status"] == "completed":
        raise UserError(f"run {run_id} is already completed")
    if row["status"] in LIVE_STATUSES and row["pid"] and row["pid"] != os.getpid() and trainer_alive(dict(row)):
        raise UserError(f"run {run_id} is still running (pid {row['pid']})")
    config = load_mapping(json.loads(row["config_json"]), origin=f"run {run_id}")
    task = load_task(row["task_path"] or row["task"])
    seed = store.seed_skill(run_id)
    if seed is not None and seed != task.seed_skill:
        task = task.with_seed_skill(seed)
    state = store.load_state(run_id)
    store.discard_after(run_id, state.step if state else 0)
    store.clear_stop(run_id)
    return _train(store, run_id, task, config, state, callbacks)

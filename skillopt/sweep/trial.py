"""One trial, in the process that trains it: an ordinary run with a fixed id, tagged with its sweep.

The local backend runs `run_local` in a trial process (`python -m skillopt sweep trial SWEEP
IDX`); the Ray backend runs the same `train_trial` on a worker node, against a store local to
that node. A trial that finds its run already stored resumes it (a killed trial process, a
stopped sweep): the run id belongs to the trial, so one trial never makes a second run.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from .. import events as ev
from .. import runner
from ..config import RunConfig, load_mapping
from ..errors import UserError
from ..store.writer import Store
from . import ledger
from .grid import label


class Tag:
    """A trainer callback: at every (re)start, tag the run with its sweep, and pass on a sweep
    stop that was requested before this run existed (nothing else could reach it)."""

    def __init__(self, store: Store, sweep_id: str):
        self.store, self.sweep_id = store, sweep_id

    def __call__(self, e: ev.Event) -> None:
        if isinstance(e, ev.RunStarted):
            ledger.tag_run(self.store, e.run_id, self.sweep_id)
            if ledger.stop_requested(self.store, self.sweep_id):
                self.store.request_stop(e.run_id)


def run_name(sweep: Mapping[str, Any], trial_row: Mapping[str, Any]) -> str:
    return f"{sweep['name']} · {label(ledger.as_trial(trial_row))}"


def config_of(trial_row: Mapping[str, Any]) -> RunConfig:
    if not trial_row.get("config_json"):
        raise UserError(f"trial {trial_row['idx']} has not been launched by its sweep yet")
    return load_mapping(json.loads(trial_row["config_json"]), origin=f"trial {trial_row['idx']}")


def train_trial(store: Store, *, run_id: str, task_ref: str, config: RunConfig, name: str,
                seed_skill: str | None, callbacks: tuple = ()) -> str:
    """Start the trial's run, or resume it when the store holds it already; the run's status."""
    row = store.run(run_id)
    if row is None:
        _, status = runner.start(store, task_ref, config, name=name, run_id=run_id, seed_skill=seed_skill,
                                 callbacks=callbacks)
        return status
    if row["status"] == "completed":
        return "completed"
    return runner.resume(store, run_id, callbacks=callbacks)


def run_local(store: Store, sweep_id: str, idx: int, callbacks: tuple = ()) -> str:
    """The body of a local trial process."""
    sweep, row = ledger.get(store, sweep_id), ledger.trial(store, sweep_id, idx)
    if sweep is None or row is None:
        raise UserError(f"no trial {idx} of sweep {sweep_id} in {store.path}")
    if ledger.stop_requested(store, sweep_id) and store.run(row["run_id"]) is None:
        return "stopped"  # stopped before it began: resume starts it
    return train_trial(store, run_id=row["run_id"], task_ref=sweep["task_path"] or sweep["task"],
                       config=config_of(row), name=run_name(sweep, row), seed_skill=sweep["seed_skill"],
                       callbacks=(Tag(store, sweep_id), *callbacks))

"""The Home page: the runs table (each run's test result, lift and duration), its filters,
and the one-click demo runs.

The simulated world is instant and labelled as simulated everywhere; the embedded local
model trains a real task, kept small enough to finish in minutes on a CPU. A demo run is
listed the moment its trainer starts, before the trainer has written its row.
No streamlit here.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from skillopt import launcher
from skillopt.config import DEFAULTS
from skillopt.ui.monitor import effective_status, human_duration, lift_cell, run_seconds, when

LOCAL_MODEL = DEFAULTS["target_model"].default  # the local demo keeps the default (embedded) models


@dataclass(frozen=True)
class Demo:
    task: str
    overrides: dict[str, object]
    name: str


DEMOS = {
    "sim": Demo("sim-rulebook", {"target_model": "sim/target", "optimizer_model": "sim/optimizer", "num_epochs": 2},
                "Demo (simulated)"),
    "local": Demo("ticket-routing", {"batch_size": 10, "num_epochs": 1, "max_steps_per_epoch": 2,
                                     "selection_size": 20, "test_size": 20}, "Demo (embedded local model)"),
}


def start_demo(kind: str, db: str | os.PathLike) -> tuple[str | None, str]:
    """(run id, "") once the demo's trainer is started, or (None, why it cannot start)."""
    demo = DEMOS[kind]
    if kind == "local":
        from skillopt.models import llm  # the model layer loads only when a real model is asked for

        problem = llm.preflight(LOCAL_MODEL)
        if problem:
            return None, problem
    run_id, _ = launcher.start(demo.task, demo.overrides, db=db, name=demo.name)
    return run_id, ""


# ---- the runs table -------------------------------------------------------------------

COLUMNS = ["monitor", "name", "task", "simulated", "models", "status", "step", "test", "lift", "test lift",
           "duration", "best selection", "calls", "cost $", "started", "id"]


def models_of(config: Mapping[str, Any]) -> str:
    target, optimizer = config.get("target_model", ""), config.get("optimizer_model", "")
    return target if target == optimizer else f"{target} → {optimizer}"


def test_cell(r: Mapping[str, Any]) -> str:
    """"no skill / seed → best" of the test split, the run's headline result."""
    if r.get("best_test") is None:
        return ""
    before = " / ".join(f"{r[k]:.3f}" for k in ("none_test", "seed_test") if r.get(k) is not None)
    return f"{before} → {r['best_test']:.3f}" if before else f"{r['best_test']:.3f}"


def lift_value(r: Mapping[str, Any], lift: Mapping[str, Any] | None) -> float | None:
    """The stored lift (over the better of no skill and the seed), else best − seed."""
    if lift and lift.get("lift") is not None:
        return lift["lift"]
    if r.get("best_test") is not None and r.get("seed_test") is not None:
        return r["best_test"] - r["seed_test"]
    return None


def runs_frame(runs: Sequence[Mapping[str, Any]], lifts: Mapping[str, Mapping[str, Any]] | None = None,
               starting: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    lifts = lifts or {}
    rows = [starting_row(s) for s in starting]
    for r in runs:
        config = json.loads(r.get("config_json") or "{}")
        lift = lifts.get(r["id"])
        rows.append({
            "monitor": f"Monitor?run={r['id']}", "name": r.get("name") or r["id"], "task": r["task"],
            "models": models_of(config), "status": effective_status(r),
            "step": f"{r.get('step') or 0}/{r.get('total_steps') or 0}", "test": test_cell(r),
            "lift": lift_cell(lift), "test lift": lift_value(r, lift), "duration": human_duration(run_seconds(r)),
            "best selection": r.get("best_score"), "calls": r.get("calls") or 0,
            "cost $": r.get("cost_usd") or 0.0, "started": when(r.get("started_at") or r.get("created_at")),
            "simulated": "yes" if r.get("simulated") else "no", "id": r["id"],
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def starting_row(s: Mapping[str, Any]) -> dict[str, Any]:
    """A run launched from this session whose trainer has not written its row yet."""
    demo = DEMOS.get(s.get("kind", ""))
    return {"monitor": f"Monitor?run={s['id']}", "name": demo.name if demo else s["id"],
            "task": demo.task if demo else "",
            "models": models_of({"target_model": LOCAL_MODEL, "optimizer_model": LOCAL_MODEL} | demo.overrides)
            if demo else "",
            "status": "starting", "step": "", "test": "", "lift": "", "test lift": None, "duration": "",
            "best selection": None, "calls": 0, "cost $": 0.0, "started": when(s.get("at")),
            "simulated": "yes" if s.get("kind") == "sim" else "no", "id": s["id"]}


def filter_runs(frame: pd.DataFrame, statuses: Sequence[str], tasks: Sequence[str], simulated: str) -> pd.DataFrame:
    out = frame
    if statuses:
        out = out[out["status"].isin(statuses)]
    if tasks:
        out = out[out["task"].isin(tasks)]
    if simulated in ("yes", "no"):
        out = out[out["simulated"] == simulated]
    return out

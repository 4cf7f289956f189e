"""The Home page's one-click demo runs: what each one trains, and starting it.

The simulated world is instant and labelled as simulated everywhere; the embedded local
model trains a real task, kept small enough to finish in minutes on a CPU.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from skillopt import launcher
from skillopt.config import DEFAULTS

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

"""Helpers the test files (and bench/ scripts) import: a simulated configuration and a
real simulated training run. Fixtures and pytest hooks stay in conftest.py, which pytest
loads by itself; test code imports from here (`from tests.helpers import run_sim`), which
works from every folder under tests/ because conftest.py puts the repository root on
sys.path (bench/ scripts put it there themselves).
"""
from __future__ import annotations

from pathlib import Path

# The simulated target and optimizer: deterministic, offline, and free.
SIM = ("target_model=sim/target", "optimizer_model=sim/optimizer")


def sim_config(*overrides: str):
    from skillopt.config import load_config

    return load_config(None, [*SIM, *overrides])


def run_sim(db: Path, *overrides: str, task: str = "sim-rulebook", name: str = "") -> str:
    """Train on the simulated world into `db`; returns the run id."""
    from skillopt import runner
    from skillopt.store.writer import Store

    store = Store(db)
    try:
        run_id, _ = runner.start(store, task, sim_config(*overrides), name=name)
    finally:
        store.close()
    return run_id

"""Shared fixtures: a store filled by a REAL simulated run (not hand-written rows)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory) -> tuple[Path, str]:
    """(db path, run id) of a completed 3-epoch default simulated run (strict gate)."""
    db = tmp_path_factory.mktemp("simrun") / "skillopt.db"
    return db, run_sim(db, "num_epochs=3", name="fixture run")


@pytest.fixture
def sim_db_env(sim_run, monkeypatch):
    """Point the dashboard at the simulated run's database."""
    db, run_id = sim_run
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    return db, run_id


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: loads the real embedded local model (CI runs these too)")
    config.addinivalue_line("markers", "browser: drives Debian's chromium through Playwright")


@pytest.fixture(autouse=True)
def fresh_streamlit_caches():
    """The dashboard's caches live per process and tests point SKILLOPT_DB at different
    databases: clear them around every test that has loaded streamlit."""
    def clear():
        st = sys.modules.get("streamlit")
        if st is not None:
            st.cache_data.clear()
            st.cache_resource.clear()
    clear()
    yield
    clear()

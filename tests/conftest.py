"""Shared fixtures and pytest hooks: a store filled by a REAL simulated run (not hand-written
rows). Helpers that test files import live in tests/helpers.py, not here."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import run_sim  # noqa: E402  (needs the root on sys.path)


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory) -> tuple[Path, str]:
    """(db path, run id) of a completed 3-epoch default simulated run (paired gate)."""
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

"""Home page (app.py): the runs table against a real simulated run, filters, demo buttons."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt import launcher
from skillopt.models import llm
from skillopt.store.reader import Reader
from skillopt.ui import monitor as mon

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def home() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def runs_table(at: AppTest):
    return at.dataframe[0].value


def test_runs_table_shows_the_stored_run(sim_db_env):
    db, run_id = sim_db_env
    reader = Reader(db)
    run = reader.run(run_id)
    listed = {r["id"]: r for r in reader.runs()}[run_id]
    at = home()
    frame = runs_table(at)
    row = frame[frame["id"] == run_id].iloc[0]
    assert row["name"] == "fixture run"
    assert row["task"] == "sim-rulebook"
    assert row["status"] == "completed"
    assert row["step"] == f"{run['step']}/{run['total_steps']}"
    assert row["best selection"] == pytest.approx(run["best_score"])
    lift = reader.lift(run_id) if hasattr(reader, "lift") else None
    if lift:  # the lift over the better of no skill and the seed, with its interval
        assert row["test lift"] == pytest.approx(lift["lift"])
        assert row["lift"] == f"{lift['lift']:+.3f} [{lift['ci_low']:+.2f}, {lift['ci_high']:+.2f}]"
    else:
        assert row["test lift"] == pytest.approx(run["best_test"] - run["seed_test"])
    before = " / ".join(f"{run[k]:.3f}" for k in ("none_test", "seed_test") if run.get(k) is not None)
    assert row["test"] == f"{before} → {run['best_test']:.3f}"
    assert row["duration"] == mon.human_duration(run["finished_at"] - run["started_at"])
    assert row["calls"] == listed["calls"] > 0
    assert row["simulated"] == "yes"
    assert row["models"] == "sim/target → sim/optimizer"
    assert row["monitor"] == f"Monitor?run={run_id}"


def test_filters_narrow_the_table(sim_db_env):
    at = home()
    total = len(runs_table(at))
    assert total >= 1
    at.selectbox[0].select("real only").run()
    assert len(runs_table(at)) == 0
    at.selectbox[0].select("simulated only").run()
    assert len(runs_table(at)) == total
    at.multiselect[0].select("completed").run()
    assert set(runs_table(at)["status"]) == {"completed"}
    at.multiselect[1].select("sim-rulebook").run()
    assert set(runs_table(at)["task"]) == {"sim-rulebook"}


def test_empty_store_invites_a_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOPT_DB", str(tmp_path / "none.db"))
    at = home()
    assert any("No runs yet" in i.value for i in at.info)
    assert [b.label for b in at.button][:2] == ["Start demo run (simulated, instant)",
                                                 "Start demo run (embedded local model)"]


def test_demo_buttons_launch_the_documented_runs(sim_db_env, monkeypatch):
    calls = []

    def fake_start(task, overrides, **kwargs):
        calls.append((task, overrides, kwargs))
        return "run-new", None

    monkeypatch.setattr(launcher, "start", fake_start)
    monkeypatch.setattr(llm, "preflight", lambda model, *a: None)
    at = home()
    at.button[0].click().run()
    assert calls[-1][0] == "sim-rulebook"
    assert calls[-1][1] == {"target_model": "sim/target", "optimizer_model": "sim/optimizer", "num_epochs": 2}
    assert calls[-1][2]["db"] == sim_db_env[0]
    links = [p for p in at.get("page_link") if "run-new" in p.value]
    assert links and links[0].proto.page.endswith("Monitor")
    at.button[1].click().run()
    assert calls[-1][0] == "ticket-routing"
    assert calls[-1][1] == {"batch_size": 10, "num_epochs": 1, "max_steps_per_epoch": 2, "selection_size": 20,
                            "test_size": 20}


def test_a_demo_run_is_listed_the_moment_it_starts(sim_db_env, monkeypatch):
    """The trainer writes the run's row only once it has loaded the task: the row is shown before."""
    monkeypatch.setattr(launcher, "start", lambda task, overrides, **kwargs: ("20990101-000000-000001", None))
    at = home()
    at.button[0].click().run()
    assert not at.exception
    frame = runs_table(at)
    row = frame[frame["id"] == "20990101-000000-000001"].iloc[0]
    assert (row["status"], row["name"], row["task"], row["simulated"]) == ("starting", "Demo (simulated)",
                                                                           "sim-rulebook", "yes")
    assert row["monitor"] == "Monitor?run=20990101-000000-000001"


def test_local_demo_reports_a_missing_model_instead_of_launching(sim_db_env, monkeypatch):
    calls = []
    monkeypatch.setattr(launcher, "start", lambda *a, **k: calls.append(a) or ("x", None))
    monkeypatch.setattr(llm, "preflight", lambda model, *a: f"{model}: not installed")
    at = home()
    at.button[1].click().run()
    assert not calls
    assert any("not installed" in e.value for e in at.error)


def wait_for(predicate, what: str, limit_s: float = 120.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def test_simulated_demo_really_trains_in_a_subprocess(tmp_path, monkeypatch):
    db = tmp_path / "demo.db"
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = home()
    at.button[0].click().run()
    assert not at.exception
    run_id = at.session_state["demo_started"]

    def finished():
        if not db.exists():
            return None
        reader = Reader(db)
        try:
            run = reader.run(run_id)
        except sqlite3.OperationalError:  # the trainer has created the file but not yet the tables
            return None
        finally:
            reader.close()
        return run if run and run["status"] not in ("pending", "running") else None

    run = wait_for(finished, f"demo run {run_id}")
    assert run["status"] == "completed", launcher.read_log(db, run_id)
    assert run["simulated"] == 1 and run["config"]["num_epochs"] == 2
    st.cache_data.clear()
    at.run()
    assert run_id in set(runs_table(at)["id"])

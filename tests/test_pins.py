"""Pinned items: control rows in the store, pinned and unpinned on the Rollouts page (AppTest),
downloaded as pinned.txt, and read back by `check` as the same ids."""
from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt.check import read_pinned
from skillopt.store import pins
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.tasks.loader import load_task
from skillopt.ui import rollouts as ro
from tests.helpers import run_sim

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "7_Rollouts.py")


@pytest.fixture
def small_run(tmp_path, monkeypatch):
    db = tmp_path / "pins.db"
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1")
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()
    return db, run_id


def page(run_id: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def test_pins_are_per_task_ordered_and_round_trip_through_pinned_txt(tmp_path):
    store = Store(tmp_path / "p.db")
    pins.pin(store, "sim-rulebook", ["tes-003", "tes-001"])
    pins.pin(store, "sim-rulebook", ["tes-003", "tra-010"])  # pinning twice keeps one row
    pins.pin(store, "ticket-routing", ["t-1"])
    pins.unpin(store, "sim-rulebook", ["tes-001"])
    r = Reader(tmp_path / "p.db")
    ids = pins.pinned(r, "sim-rulebook")
    assert sorted(ids) == ["tes-003", "tra-010"] and pins.pinned(r, "ticket-routing") == ["t-1"]
    (tmp_path / "pinned.txt").write_text(pins.pinned_file("sim-rulebook", ids))
    assert read_pinned(tmp_path / "pinned.txt", list(load_task("sim-rulebook").items())) == tuple(ids)
    store.close()


def test_pin_and_unpin_from_the_rollouts_page(small_run):
    db, run_id = small_run
    at = page(run_id)
    item = at.selectbox(key="trajectory").value.split(" · ")[-1]
    assert not [b for b in at.button if b.key == "unpin"]
    assert any("No item of task sim-rulebook is pinned" in c.value for c in at.caption)
    at.button(key="pin").click().run()
    assert not at.exception
    assert pins.pinned(Reader(db), "sim-rulebook") == [item]
    assert at.button(key="unpin").label == f"Unpin {item}"
    assert at.multiselect(key="pins_remove").options == [item]
    download = at.get("download_button")
    assert download and "pinned.txt" in str(download[0].proto)
    at.multiselect(key="pins_remove").set_value([item]).run()
    at.button(key="pins_unpin").click().run()
    assert not at.exception
    assert pins.pinned(Reader(db), "sim-rulebook") == []
    assert at.button(key="pin").label == f"Pin {item} (must not regress)"


def test_the_page_reads_pins_from_a_store_without_a_pins_table(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    sqlite3.connect(path).execute("CREATE TABLE runs (id TEXT)").connection.close()
    assert ro.pinned_ids(Reader(path), "sim-rulebook") == []
    assert ro.pinned_ids(None, "sim-rulebook") == []

"""Slow updates page (AppTest) against stores filled by real simulated runs."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.helpers import run_sim, tables
from skillopt.store.reader import Reader

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "5_Slow_updates.py")
CLASSES = ("improved_json", "regressed_json", "persistent_json", "stable_json")


def _open(monkeypatch, db: Path, run_id: str) -> AppTest:
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()  # the pages' data cache is keyed by run id, not by database: tests switch databases
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def _epochs(at: AppTest, updates: list[dict]):
    """Open each epoch's tab in turn (only the open one is built), yielding the update shown."""
    for u in updates:
        at.session_state["slow_epoch"] = f"Epoch {u['epoch']} · {u['decision']}"
        at.run()
        assert not at.exception
        yield u


def test_each_epoch_shows_guidance_tables_gate_and_meta_skill(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    updates, metas = r.slow_updates(run_id), r.meta_skills(run_id)
    r.close()
    assert len(updates) == 2  # a 3-epoch run: slow updates at the end of epochs 2 and 3
    summary = tables(at)[0]
    assert list(summary["epoch"]) == [str(u["epoch"]) for u in updates]
    assert list(summary["decision"]) == [u["decision"] for u in updates]
    assert list(summary["stable successes"]) == [str(len(json.loads(u["stable_json"]))) for u in updates]
    epoch_tabs = [t.label for t in at.tabs if t.label.startswith("Epoch ")]
    assert epoch_tabs == [f"Epoch {u['epoch']} · {u['decision']}" for u in updates]
    meta_of = {m["epoch"]: m["content"] for m in metas}
    for u in _epochs(at, updates):
        codes = [c.value for c in at.code]
        assert u["guidance"] in codes
        if u["epoch"] in meta_of:
            assert meta_of[u["epoch"]] in codes
        diffs = [m.value for m in at.markdown if 'class="skillopt-diff"' in m.value]
        shown = html.unescape(re.sub(r"<del\b[^>]*>.*?</del>|<[^>]+>", "", diffs[0]))
        assert shown == u["guidance"]
        # Every non-empty comparison class is a table of exactly its items, with their inputs.
        frames = tables(at)[1:]
        assert [list(f["item"]) for f in frames] == [json.loads(u[key]) for key in CLASSES if json.loads(u[key])]
        for frame in frames:
            assert all(frame["input"].str.len() > 0)
            assert set(frame["current hard"]) <= {"0", "1"}


def test_opens_on_the_latest_epoch_and_builds_only_that_one(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    updates = r.slow_updates(run_id)
    r.close()
    last, first = updates[-1], updates[0]
    assert at.session_state["slow_epoch"] == f"Epoch {last['epoch']} · {last['decision']}"
    codes = [c.value for c in at.code]
    assert last["guidance"] in codes and first["guidance"] not in codes  # distinct guidances per epoch
    assert [m.value for m in at.metric if m.label == "After step"] == [str(last["step"])]
    assert len(tables(at)) == 1 + sum(bool(json.loads(last[key])) for key in CLASSES)


def test_item_classes_match_both_epochs_results(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    updates = r.slow_updates(run_id)
    r.close()
    rules = {"improved_json": lambda p, c: p < 1 <= c, "regressed_json": lambda p, c: c < 1 <= p,
             "persistent_json": lambda p, c: p < 1 and c < 1, "stable_json": lambda p, c: p >= 1 and c >= 1}
    checked = 0
    for u in _epochs(at, updates):
        frames = iter(tables(at)[1:])  # one table per non-empty class, in page order
        for key in CLASSES:
            ids = json.loads(u[key])
            if ids:
                frame = next(frames)
                assert list(frame["item"]) == ids
                assert all(rules[key](float(p), float(c))
                           for p, c in zip(frame["previous hard"], frame["current hard"])), key
                checked += len(ids)
    assert checked > 0


@pytest.fixture(scope="module")
def one_epoch_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("oneepoch") / "skillopt.db"
    return db, run_sim(db, "num_epochs=1", "max_steps_per_epoch=2")


def test_clear_empty_state_with_one_epoch(one_epoch_run, monkeypatch):
    db, run_id = one_epoch_run
    at = _open(monkeypatch, db, run_id)
    assert any("This run has 1 epoch." in i.value and "end of epoch 2" in i.value for i in at.info)
    assert not tables(at) and not at.tabs


def test_run_stopped_before_its_first_slow_update(tmp_path, monkeypatch):
    db = tmp_path / "skillopt.db"
    run_id = run_sim(db, "num_epochs=2", "max_calls=70")
    at = _open(monkeypatch, db, run_id)
    assert any("recorded no slow update" in i.value for i in at.info)

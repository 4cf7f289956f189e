"""Rollouts page (AppTest) against a store filled by a real simulated run, plus its query plans."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt.store.reader import Reader
from skillopt.ui import labels
from tests.helpers import tables

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "7_Rollouts.py")


@pytest.fixture
def page(sim_db_env):
    db, run_id = sim_db_env
    st.cache_data.clear()  # the pages' data cache is keyed by run id, not by database: tests switch databases
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    r = Reader(db)
    yield at, r, run_id
    r.close()


def _table(at: AppTest):
    frames = [d.value for d in at.dataframe if "purpose" in d.value.columns]
    return frames[0] if frames else None


def _matrix(at: AppTest) -> dict:
    """The flip matrix: the last chart of the page (a choice task's confusion table comes before it),
    in an expander built only once opened."""
    if not at.session_state["rollouts_matrix"]:
        at.session_state["rollouts_matrix"] = True
        at.run()
        assert not at.exception
    return json.loads(at.get("plotly_chart")[-1].proto.spec)["data"][0]


def test_default_view_is_the_failures_of_the_last_train_step(page):
    at, r, run_id = page
    last = r.rollout_steps(run_id, "train")[-1]
    assert at.radio(key="split").value == "train" and at.select_slider(key="step_train").value == last
    assert at.toggle(key="failures").value  # failures first: what a person looks for
    rows = r.rollouts(run_id, last, "train")
    failing = [x for x in rows if x["hard"] < 1]
    table = _table(at)
    assert sorted(zip(table["purpose"], table["item"])) == sorted((labels.purpose_label(x["purpose"]), x["item_id"])
                                                                  for x in failing)
    assert not {x["purpose"] for x in rows} & set(table["purpose"])  # labels on screen, never internal names
    assert f"{len(rows)} rollouts at step {last} on train" in at.caption[0].value
    at.toggle(key="failures").set_value(False).run()
    assert list(_table(at)["hard"]) == [x["hard"] for x in rows]


def test_search_finds_items_by_their_input_words(page):
    at, r, run_id = page
    at.toggle(key="failures").set_value(False).run()
    first = _table(at).iloc[0]
    word = next(w for w in first["input"].split() if len(w) > 4)
    at.text_input(key="search").input(word.upper()).run()  # any case
    table = _table(at)
    assert first["item"] in set(table["item"])
    assert all(word.lower() in (row["input"] + row["output"] + row["expected"] + row["item"]).lower()
               or word.lower() in row["feedback"].lower() for _, row in table.iterrows())


def test_selection_split_failures_and_changed_filters(page):
    at, r, run_id = page
    at.radio(key="split").set_value("selection").run()
    steps = r.rollout_steps(run_id, "selection")
    gated = [g["step"] for g in r.gate_decisions(run_id) if g["kind"] == "step" and json.loads(g["flipped_json"])]
    assert gated, "the fixture run has a gated step that flipped items"
    step = gated[-1]
    at.select_slider(key="step_selection").set_value(step).run()
    at.selectbox(key="purpose_selection").set_value("gate_candidate")
    at.toggle(key="failures").set_value(False).run()
    rows = r.rollouts(run_id, step, "selection", "gate_candidate")
    assert len(_table(at)) == len(rows) and step in steps
    at.toggle(key="failures").set_value(True).run()
    failing = [x["item_id"] for x in rows if x["hard"] < 1]
    table = _table(at)
    assert (list(table["item"]) if table is not None else []) == failing
    at.toggle(key="failures").set_value(False)
    at.toggle(key="changed").set_value(True).run()
    previous = {p["item_id"]: p for p in r.previous_results(run_id, "selection", "gate_candidate", step,
                                                            [x["item_id"] for x in rows])}
    changed = [x["item_id"] for x in rows if x["item_id"] in previous
               and (previous[x["item_id"]]["hard"], previous[x["item_id"]]["soft"]) != (x["hard"], x["soft"])]
    table = _table(at)
    assert (list(table["item"]) if table is not None else []) == changed
    if table is not None:
        assert all(table["previous step"] < step)


def test_trajectory_detail_shows_the_whole_rollout(page):
    at, r, run_id = page
    first = _table(at).iloc[0]
    row = next(x for x in r.rollouts(run_id, at.select_slider(key="step_train").value, "train")
               if x["item_id"] == first["item"] and labels.purpose_label(x["purpose"]) == first["purpose"])
    codes = [c.value for c in at.code]
    assert row["output"] in codes and row["expected"] in codes and row["feedback"] in codes
    # The input as readable text: one "field: value" line per field, no JSON escapes.
    fields = json.loads(row["input_json"])
    assert "\n".join(f"{k}: {v}" for k, v in fields.items()) in codes
    assert not at.json


def test_flip_matrix_is_one_cell_per_item_and_step(page):
    at, r, run_id = page
    assert len(at.get("plotly_chart")) == 1  # the confusion table only: the matrix waits for its expander
    heat = _matrix(at)
    assert heat["type"] == "heatmap"
    items = sorted({x[2] for x in r.selection_matrix(run_id)})
    steps = r.steps(run_id)
    assert heat["y"] == items and heat["x"] == [str(s) for s in range(0, len(steps) + 1)]
    # "flips" (default): each gated step's column holds exactly its gate's flipped items.
    for g in r.gate_decisions(run_id):
        if g["kind"] != "step":
            continue
        col = heat["x"].index(str(g["step"]))
        got = {items[i]: row[col] for i, row in enumerate(heat["z"]) if row[col]}
        assert got == {f[0]: f[2] - f[1] for f in json.loads(g["flipped_json"])}
    at.radio(key="matrix_grid").set_value("incumbent").run()
    heat = _matrix(at)
    current = {v["step"]: v["score"] for v in r.versions(run_id) if v["kind"] in ("seed", "current")}
    for step, score in current.items():  # strict gate on hard: the incumbent's mean is its stored score
        col = [row[heat["x"].index(str(step))] for row in heat["z"]]
        assert math.isclose(sum(col) / len(col), score)


def test_queries_use_indexes(sim_run):
    """The page must stay fast on 100,000+ rollouts: none of its rollout queries scans the table."""
    db, run_id = sim_run
    r = Reader(db)
    seen: list[str] = []
    r.conn.set_trace_callback(seen.append)  # the SQL as executed, parameters inlined
    try:
        rows = r.rollouts(run_id, 1, "train", "train")
        r.rollouts(run_id, 1, "train")
        r.rollout_steps(run_id, "selection")
        r.rollout_purposes(run_id, "train", 1)
        r.previous_results(run_id, "train", "train", 3, [x["item_id"] for x in rows])
        r.selection_matrix(run_id)
        r.conn.set_trace_callback(None)
        assert len(seen) == 6
        for sql in seen:
            plan = " | ".join(row[3] for row in r.conn.execute("EXPLAIN QUERY PLAN " + sql))
            assert not any(part.strip().startswith(("SCAN r", "SCAN rollouts")) and "INDEX" not in part
                           for part in plan.split("|")), plan
            assert "rollouts_by_split" in plan or "rollouts_by_item" in plan or "sqlite_autoindex_rollouts" in plan, plan
    finally:
        r.close()


@pytest.mark.parametrize("max_calls, rollouts", [(1, False), (70, True)])
def test_run_stopped_early(tmp_path, monkeypatch, max_calls, rollouts):
    from tests.helpers import run_sim

    db = tmp_path / "skillopt.db"
    run_id = run_sim(db, "num_epochs=2", f"max_calls={max_calls}")
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    if rollouts:  # only the seed's selection rollouts: one matrix column, no flips
        assert at.radio(key="split").options == ["selection"]
        heat = _matrix(at)
        assert heat["x"] == ["0"] and all(row == [None] for row in heat["z"])
    else:
        assert any(i.value.startswith("No rollout recorded yet") for i in at.info)


def test_test_split_confusion_and_seed_vs_best(page):
    at, r, run_id = page
    step = r.rollout_steps(run_id, "test")[-1]
    best = {x["item_id"]: x for x in r.rollouts(run_id, step, "test", "test_best")}
    seed = {x["item_id"]: x for x in r.rollouts(run_id, step, "test", "test_seed")}
    per_label = next(t for t in tables(at) if "accuracy" in t.columns)
    assert per_label["items"].astype(int).sum() == len(best)
    assert per_label["right"].astype(int).sum() == sum(x["hard"] >= 1 for x in best.values())  # the diagonal
    confusion = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert confusion["y"] == list(per_label["label"]) and confusion["x"][-1] == "(no label)"
    items = next(d.value for d in at.dataframe if "change" in d.value.columns)
    fixed = {i for i in best if best[i]["hard"] > seed[i]["hard"]}
    broken = {i for i in best if best[i]["hard"] < seed[i]["hard"]}
    assert set(items[items["change"] == "fixed"]["item"]) == fixed
    assert set(items[items["change"] == "broken"]["item"]) == broken
    assert list(items["change"])[:len(fixed)] == ["fixed"] * len(fixed)  # what the training changed comes first
    right = items[items["best"] >= 1]
    assert (right["best answer"] == right["expected"]).all()
    at.radio(key="confusion_skill").set_value("seed").run()
    per_label = next(t for t in tables(at) if "accuracy" in t.columns)
    assert per_label["right"].astype(int).sum() == sum(x["hard"] >= 1 for x in seed.values())

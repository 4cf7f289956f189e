"""Gate timeline page (AppTest) against stores filled by real simulated runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.helpers import run_sim
from skillopt.store.reader import Reader

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "4_Gate_timeline.py")


def _open(monkeypatch, db: Path, run_id: str) -> AppTest:
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()  # the pages' data cache is keyed by run id, not by database: tests switch databases
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def _early_rejection(r: Reader, run_id: str) -> dict | None:
    """A buffered rejection with a later step in the same epoch (whose reflection saw it)."""
    last_of_epoch: dict[int, int] = {}
    for s in r.steps(run_id):
        last_of_epoch[s["epoch"]] = s["step"]
    return next((b for b in r.rejected_buffer(run_id) if b["step"] < last_of_epoch[b["epoch"]]), None)


@pytest.fixture(scope="module")
def rejecting_run(tmp_path_factory):
    """A run whose gate rejects a step early in an epoch, so later steps see a non-empty buffer."""
    for seed in (7, 3, 11, 5, 13, 17, 19, 23):
        db = tmp_path_factory.mktemp(f"reject{seed}") / "skillopt.db"
        run_id = run_sim(db, "num_epochs=3", "batch_size=20", f"seed={seed}")
        r = Reader(db)
        try:
            if _early_rejection(r, run_id):
                return db, run_id
        finally:
            r.close()
    pytest.fail("no simulated run with an early gate rejection among the tried seeds")


def test_one_point_per_step_with_its_decision(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    steps, gates = r.steps(run_id), r.gate_decisions(run_id)
    r.close()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    step_traces = [t for t in spec["data"] if t["name"].startswith("step: ")]
    assert sum(len(t["x"]) for t in step_traces) == len(steps)
    plotted = {x: t["name"] for t in step_traces for x in t["x"]}
    labels = {"accept_new_best": "step: accept (new best)", "accept": "step: accept", "reject": "step: reject",
              "skip": "step: skip (no applicable edit)"}
    assert plotted == {s["step"]: labels[s["decision"]] for s in steps}
    slow = [g for g in gates if g["kind"] == "slow_update"]
    slow_points = [x for t in spec["data"] if t["name"].startswith("slow update: ") for x in t["x"]]
    assert sorted(slow_points) == sorted(g["step"] + 0.5 for g in slow) and slow
    gated = next(g for g in gates if g["kind"] == "step")
    hovers = [h for t in step_traces for h in t["hovertext"] if h.startswith(f"<b>step {gated['step']} ")]
    assert f"margin {gated['margin']:+.3f}" in hovers[0] and f"flipped {len(json.loads(gated['flipped_json']))}" in hovers[0]
    table = at.dataframe[0].value
    assert len(table) == len(steps) + len(slow)
    assert list(table[table["kind"] == "step"]["decision"]) == [s["decision"] for s in steps]


def test_flipped_items_of_a_step(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    gate = {g["step"]: g for g in r.gate_decisions(run_id) if g["kind"] == "step"}
    r.close()
    step = at.selectbox(key="flip_step").value
    flips = json.loads(gate[step]["flipped_json"])
    assert flips
    frame = at.dataframe[1].value
    assert list(frame["item"]) == [f[0] for f in flips]
    assert list(frame["change"]) == ["fixed" if f[2] > f[1] else "broken" for f in flips]
    assert all(frame["input"].str.len() > 0)


def test_rejected_buffer_as_it_stood(rejecting_run, monkeypatch):
    db, run_id = rejecting_run
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    buffer, steps = r.rejected_buffer(run_id), r.steps(run_id)
    r.close()
    epoch_of = {s["step"]: s["epoch"] for s in steps}
    r = Reader(db)
    first = _early_rejection(r, run_id)
    r.close()
    later_same_epoch = [s["step"] for s in steps if s["step"] > first["step"] and s["epoch"] == first["epoch"]]
    at.select_slider(key="buffer_step").set_value(later_same_epoch[-1]).run()
    assert not at.exception
    expected = [b for b in buffer if b["step"] < later_same_epoch[-1] and b["epoch"] == first["epoch"]]
    frame = at.dataframe[-1].value
    assert list(frame["step"]) == [b["step"] for b in expected]
    assert list(frame["content"]) == [json.loads(b["edit_json"])["content"] for b in expected]
    # At the rejected step itself its own rejection is not in the buffer yet.
    at.select_slider(key="buffer_step").set_value(first["step"]).run()
    earlier = [b for b in buffer if b["step"] < first["step"] and b["epoch"] == epoch_of[first["step"]]]
    if earlier:
        assert len(at.dataframe[-1].value) == len(earlier)
    else:
        assert any(f"empty at step {first['step']}" in i.value for i in at.info)
    # Scope "epoch": the next epoch starts with an empty buffer.
    next_epoch = [s["step"] for s in steps if s["epoch"] == first["epoch"] + 1]
    if next_epoch:
        at.select_slider(key="buffer_step").set_value(next_epoch[0]).run()
        assert any(f"empty at step {next_epoch[0]}" in i.value for i in at.info)


def test_run_stopped_before_its_first_step(tmp_path, monkeypatch):
    db = tmp_path / "skillopt.db"
    run_id = run_sim(db, "num_epochs=2", "max_calls=70")  # the budget runs out after the seed is scored
    at = _open(monkeypatch, db, run_id)
    assert any(i.value.startswith("No step has completed yet") for i in at.info)
    assert not at.get("plotly_chart") and not at.dataframe


def test_styles_name_every_decision_of_the_vocabulary():
    from skillopt.ui import gate_timeline as gt
    from skillopt.vocabulary import DECISIONS

    assert set(gt.STEP_STYLE) == set(DECISIONS) - {"failed"}  # a step's gate never fails
    assert set(gt.SLOW_STYLE) == set(DECISIONS)
    assert gt.SLOW_STYLE["accept_new_best"] == gt.STEP_STYLE["accept_new_best"][1]


def test_decisions_frame_puts_a_slow_update_after_its_step(sim_run):
    from skillopt.ui import gate_timeline as gt

    db, run_id = sim_run
    r = Reader(db)
    try:
        steps, gates = r.steps(run_id), r.gate_decisions(run_id)
    finally:
        r.close()
    frame = gt.decisions_frame(steps, gates)
    slow = gt.slow_gates(gates)
    assert slow and len(frame) == len(steps) + len(slow)
    for g in slow:
        at = list(frame["step"]).index(g["step"])
        assert frame.iloc[at]["kind"] == "step" and frame.iloc[at + 1]["kind"] == "slow update after the step"

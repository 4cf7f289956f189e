"""Gate timeline page (AppTest) against stores filled by real simulated runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.helpers import run_sim, tables
from skillopt.store.reader import Reader
from skillopt.vocabulary import DROP_REASONS, TRIAL_NAMES

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
        run_id = run_sim(db, "num_epochs=3", "batch_size=20", f"seed={seed}", "check_evidence=false")
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
    table = tables(at)[0]
    trials = [g for g in gates if g["kind"] == "examples"]
    assert len(table) == len(steps) + len(slow) + len(trials)
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
    frame = tables(at)[1]
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
    frame = tables(at)[-1]
    assert list(frame["step"]) == [str(b["step"]) for b in expected]
    assert list(frame["content"]) == [json.loads(b["edit_json"])["content"] for b in expected]
    # At the rejected step itself its own rejection is not in the buffer yet.
    at.select_slider(key="buffer_step").set_value(first["step"]).run()
    earlier = [b for b in buffer if b["step"] < first["step"] and b["epoch"] == epoch_of[first["step"]]]
    if earlier:
        assert len(tables(at)[-1]) == len(earlier)
    else:
        assert any(f"empty at step {first['step']}" in i.value for i in at.info)
    # Scope "epoch": the next epoch starts with an empty buffer.
    next_epoch = [s["step"] for s in steps if s["epoch"] == first["epoch"] + 1]
    if next_epoch:
        at.select_slider(key="buffer_step").set_value(next_epoch[0]).run()
        assert any(f"empty at step {next_epoch[0]}" in i.value for i in at.info)


def _frame_with(at: AppTest, column: str):
    return next(t for t in tables(at) if column in t.columns)


def test_edits_of_a_step_list_dropped_edits_with_their_reason(sim_db_env, monkeypatch):
    db, run_id = sim_db_env
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    steps = r.steps(run_id)
    dropped_at = [s["step"] for s in steps if any(e["fate"] == "dropped" for e in r.edits(run_id, s["step"]))]
    assert dropped_at, "the simulated optimizer names lines and headings the skill lacks"
    edits = r.edits(run_id, dropped_at[0])
    r.close()
    at.selectbox(key="edits_step").set_value(dropped_at[0]).run()
    assert not at.exception
    frame = _frame_with(at, "fate")
    assert list(frame["edit"]) == [str(e["idx"] + 1) for e in edits] and list(frame["fate"]) == [e["fate"] for e in edits]
    assert list(frame["why"]) == [e["note"] for e in edits]
    shown = frame[frame["fate"] == "dropped"]
    assert len(shown) and all(w.split(": ", 1)[0] in DROP_REASONS for w in shown["why"])
    assert list(frame["patch"]) == [e["status"] for e in edits] and list(frame["gate"]) == [e["gate"] for e in edits]


def test_the_buffer_says_whether_an_edit_was_rejected_alone_or_with_others(rejecting_run, monkeypatch):
    db, run_id = rejecting_run
    at = _open(monkeypatch, db, run_id)
    r = Reader(db)
    steps, buffer, first = r.steps(run_id), r.rejected_buffer(run_id), _early_rejection(r, run_id)
    r.close()
    last = max(s["step"] for s in steps if s["epoch"] == first["epoch"])
    shown = [b for b in buffer if b["step"] < last and b["epoch"] == first["epoch"]]
    at.select_slider(key="buffer_step").set_value(last).run()
    frame = _frame_with(at, "rejected")

    def label(b) -> str:
        n = len(json.loads(b["companions_json"]))
        return "rejected alone" if n == 0 else f"rejected together with {n} other{'s' if n > 1 else ''}"
    assert list(frame["rejected"]) == [label(b) for b in shown]
    assert any(x.startswith("rejected together") for x in frame["rejected"])  # the gate rejects multi-edit candidates
    together = [(row["together with"], b) for (_, row), b in zip(frame.iterrows(), shown) if row["together with"]]
    assert together and all(t == " | ".join(c["content"] or c["target"] for c in json.loads(b["companions_json"]))
                            for t, b in together)


def test_buffer_frame_of_a_lone_and_a_joint_rejection():
    from skillopt.ui import gate_timeline as gt

    edit = lambda c: {"op": "add", "target": "", "content": c}
    rows = [{"step": 1, "epoch": 1, "reason": "human", "edit_json": json.dumps(edit("- a")), "score_before": 0.5,
             "score_after": 0.5, "companions_json": "[]"},
            {"step": 2, "epoch": 1, "reason": "gate", "edit_json": json.dumps(edit("- b")), "score_before": 0.5,
             "score_after": 0.4, "companions_json": json.dumps([edit("- c"), edit("- d")])}]
    frame = gt.buffer_frame(rows)
    assert list(frame["rejected"]) == ["rejected alone", "rejected together with 2 others"]
    assert list(frame["together with"]) == ["", "- c | - d"]


def test_run_stopped_before_its_first_step(tmp_path, monkeypatch):
    db = tmp_path / "skillopt.db"
    run_id = run_sim(db, "num_epochs=2", "max_calls=70")  # the budget runs out after the seed is scored
    at = _open(monkeypatch, db, run_id)
    assert any(i.value.startswith("No step has completed yet") for i in at.info)
    assert not at.get("plotly_chart") and not tables(at)


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
    assert slow and len(frame) == len(steps) + len(slow) + len(gt.examples_gates(gates))
    for g in slow:  # the step, its model-free trial if one ran, then the slow update
        kinds = list(frame[frame["step"] == g["step"]]["kind"])
        assert kinds in (["step", "slow update after the step"],
                         *(["step", f"{name}, gated alone", "slow update after the step"]
                           for name in TRIAL_NAMES.values()))


def test_a_long_run_keeps_every_epoch_line_and_decision_with_fewer_labels_and_markers():
    """500 steps, 50 epochs: every step keeps its decision's marker and every epoch its dotted
    line; the incumbent's line drops its per-step markers and segments, and at most 12 epochs are labelled
    (the browser draws each as an SVG element; 49 labels overlapped anyway)."""
    from skillopt.ui import gate_timeline as gt

    def steps(n: int) -> list[dict]:
        return [{"step": i, "epoch": (i - 1) // 10 + 1, "decision": "accept" if i % 4 == 0 else "reject",
                 "current_score": 0.5, "candidate_score": 0.6} for i in range(1, n + 1)]

    fig = gt.timeline_figure(steps(500), [], "hard")
    traces = {t.name: t for t in fig.data}
    assert traces["incumbent before the step"].mode == "lines" and not traces["change"].x  # no segments either
    assert len(traces["step: accept"].x) + len(traces["step: reject"].x) == 500
    assert len(fig.layout.shapes) == 49  # a line before each epoch after the first
    labels = [a.text for a in fig.layout.annotations]
    assert 8 <= len(labels) <= 12 and labels[0] == "epoch 2" and all(a.x + 0.5 in range(11, 500, 10)
                                                                  for a in fig.layout.annotations)
    short = gt.timeline_figure(steps(30), [], "hard")
    assert {t.name: t for t in short.data}["incumbent before the step"].mode == "lines+markers"
    assert len({t.name: t for t in short.data}["change"].x) == 30 * 3  # a segment (and a gap) per gated step
    assert [a.text for a in short.layout.annotations] == ["epoch 2", "epoch 3"]


def _long_table():
    import pandas as pd
    import streamlit as st

    from skillopt.ui.common import windowed

    rows = st.session_state.get("rows", 250)
    st.dataframe(windowed(pd.DataFrame({"step": range(1, rows + 1)}), "all_rows"))


def test_a_long_table_shows_its_latest_rows_says_how_many_and_can_show_all():
    """The decisions table of a 500-step run (and Skill evolution's 1,000 versions): the
    latest 100 rows, a caption with the total, and a toggle for the whole table."""
    at = AppTest.from_function(_long_table)
    at.run()
    assert list(at.dataframe[0].value["step"]) == list(range(151, 251))
    assert [c.value for c in at.caption] == ["The latest 100 of 250 rows."]
    at.toggle(key="all_rows").set_value(True).run()
    assert list(at.dataframe[0].value["step"]) == list(range(1, 251)) and not at.caption
    at.session_state["rows"] = 100  # a short table: all of it, no toggle
    at.run()
    assert len(at.dataframe[0].value) == 100 and not at.toggle and not at.caption


def test_worked_examples_trials_are_drawn_listed_and_counted(tmp_path, monkeypatch):
    db = tmp_path / "skillopt.db"
    # seed 6: trials kept and rejected (examples at the gate's own 0.5 level, see test_examples)
    run_id = run_sim(db, "worked_examples=true", "worked_examples_alpha=1.0", "seed=6")
    r = Reader(db)
    gates = [g for g in r.gate_decisions(run_id) if g["kind"] == "examples"]
    example_edits = [e for e in r.edits(run_id) if e["source"] == "example"]
    r.close()
    # the first trial tried the scorer's reply template (rejected on the simulated world), the
    # rest clue rules (where the train split offers some), seed blocks removed or examples
    [template] = [g for g in gates if g["trial"] == "template"]
    trials = [g for g in gates if g["trial"] == "example"]
    rules = [g for g in gates if g["trial"] == "rule"]
    ablations = [g for g in gates if g["trial"] == "ablation"]
    assert rules and ablations and template["step"] < min(g["step"] for g in trials + rules + ablations)
    assert len(trials) + len(rules) + len(ablations) + 1 == len(gates)
    kept = [g for g in trials if g["decision"] in ("accept", "accept_new_best")]
    kept_rules = [g for g in rules if g["decision"] in ("accept", "accept_new_best")]
    assert kept + kept_rules and len(kept + kept_rules) < len(trials + rules)  # the timeline shows both
    at = _open(monkeypatch, db, run_id)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    drawn = {x: t["name"] for t in spec["data"] if t["name"].startswith("worked examples: ") for x in t["x"]}
    assert drawn == {g["step"] + 0.25: f"worked examples: {g['decision']}" for g in trials}
    drawn = {x: t["name"] for t in spec["data"] if t["name"].startswith("reply template: ") for x in t["x"]}
    assert drawn == {template["step"] + 0.25: f"reply template: {template['decision']}"}
    drawn = {x: t["name"] for t in spec["data"] if t["name"].startswith("clue rules: ") for x in t["x"]}
    assert drawn == {g["step"] + 0.25: f"clue rules: {g['decision']}" for g in rules}
    drawn = {x: t["name"] for t in spec["data"] if t["name"].startswith("seed ablation: ") for x in t["x"]}
    assert drawn == {g["step"] + 0.25: f"seed ablation: {g['decision']}" for g in ablations}
    table = tables(at)[0]
    rows = table[table["kind"] == "worked examples, gated alone"]
    assert sorted(rows["step"].astype(int)) == sorted(g["step"] for g in trials)
    assert list(table[table["kind"] == "reply template, gated alone"]["step"]) == [str(template["step"])]
    assert sorted(table[table["kind"] == "clue rules, gated alone"]["step"].astype(int)) == [g["step"] for g in rules]
    caption = " ".join(c.value for c in at.caption)
    assert f"worked examples tried {len(trials)}, kept {len(kept)}" in caption
    assert f"clue rules tried {len(rules)}, kept {len(kept_rules)}" in caption
    kept_ablations = sum(g["decision"] in ("accept", "accept_new_best") for g in ablations)
    assert f"seed ablation tried {len(ablations)}, kept {kept_ablations}" in caption
    assert sorted(table[table["kind"] == "seed ablation, gated alone"]["step"].astype(int)) == [
        g["step"] for g in ablations]
    assert f"reply template {'kept' if template['decision'].startswith('accept') else 'rejected'}" in caption
    # each example edit's effect is its own gate's margin, attributed to it
    by_step = {g["step"]: g for g in trials}
    assert example_edits and all(e["attribution"] == by_step[e["step"]]["margin"] for e in example_edits)


def test_every_trial_kind_has_its_own_marker():
    """A trial kind added to the vocabulary without a marker would be missing from the chart."""
    from skillopt.ui import gate_timeline as gt

    assert list(gt.TRIAL_MARKERS) and set(gt.TRIAL_MARKERS) == set(TRIAL_NAMES)
    assert len(set(gt.TRIAL_MARKERS.values())) == len(gt.TRIAL_MARKERS)

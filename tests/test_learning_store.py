"""Reading a learning-bench run back from the store (bench/learning_store.py): every figure is
what the store of a real simulated run holds, an edit that was not applied always has a reason,
and the lift and hard-accuracy figures are read as stored."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.learning_util import edited_copy, measure_sim, query

import learning_store  # noqa: E402  (bench/ on sys.path: tests.learning_util put it there)


@pytest.fixture(scope="module")
def sim_bench(tmp_path_factory) -> tuple[Path, dict]:
    return measure_sim(tmp_path_factory)


def test_the_figures_are_what_the_store_holds(sim_bench):
    db, row = sim_bench
    run_id = row["run_id"]
    assert row["status"] == "completed" and row["type"] == "classification"
    tests = {w: s for w, s in query(db, "SELECT which, score FROM tests WHERE run_id = ?", (run_id,))}
    for which in learning_store.WHICH:
        expected = tests.get(which)
        assert row["test"][which] == (None if expected is None else pytest.approx(expected, abs=1e-4))
    decisions = [d for (d,) in query(db, "SELECT decision FROM steps WHERE run_id = ?", (run_id,))]
    assert row["steps"]["accepted"] == sum(d in ("accept", "accept_new_best") for d in decisions)
    assert row["steps"]["rejected"] == decisions.count("reject")
    assert row["steps"]["skipped"] == decisions.count("skip")
    assert row["steps"]["accepted"] >= 1 and row["steps"]["rejected"] + row["steps"]["skipped"] >= 1
    (n, ok), = query(db, "SELECT COUNT(*), SUM(ok) FROM reflections WHERE run_id = ?", (run_id,))
    assert row["optimizer_replies"] == {"usable": ok, "all": n, "share": pytest.approx(ok / n, abs=1e-4)}
    roles = dict(query(db, "SELECT role, COUNT(*) FROM llm_calls WHERE run_id = ? AND cached = 0 GROUP BY role",
                       (run_id,)))
    assert row["calls"]["target"] == roles["target"] > 0 and row["calls"]["optimizer"] == roles["optimizer"] > 0


def test_every_edit_is_applied_or_has_a_reason(sim_bench):
    db, row = sim_bench
    edits = query(db, "SELECT status, gate FROM edits WHERE run_id = ?", (row["run_id"],))
    e = row["edits"]
    assert e["proposed"] == len(edits) and e["applied"] == sum(s == "applied" for s, _ in edits)
    assert e["accepted"] == sum(s == "applied" and g == "accepted" for s, g in edits)
    assert e["not_applied"] and e["applied"] + sum(e["not_applied"].values()) == e["proposed"]


@pytest.mark.parametrize("edit, reason", [
    ({"fate": "dropped", "status": "", "note": "bad_anchor: line 40 is past the skill's end"}, "bad_anchor"),
    ({"fate": "dropped", "status": "", "note": "contradicted: 5 of 6 train items with 'eur' expect 6100"},
     "contradicted"),
    ({"fate": "clipped", "status": "", "note": ""}, "clipped"),
    ({"fate": "selected", "status": "anchor_not_found", "note": "no line like it"}, "anchor_not_found"),
])
def test_why_an_edit_was_not_applied(edit, reason):
    assert learning_store.not_applied_reason(edit) == reason


def test_the_lift_row_is_read_as_stored(sim_bench, tmp_path):
    run_id = sim_bench[1]["run_id"]
    db = edited_copy(sim_bench, tmp_path, ("DELETE FROM lift WHERE run_id = ?", (run_id,)),
                     ("INSERT INTO lift VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      (run_id, "hard", "seed", 0.62, 0.5, 0.12, 0.031, 0.2, 96,
                       json.dumps({"bulky": {"n": 12, "best": 0.75, "seed": 0.25, "none": 0.3333333}}), "answer")))
    lift = learning_store.read_run(db, run_id)["lift"]
    assert lift == {"metric": "hard", "baseline": "seed", "best": 0.62, "baseline_score": 0.5, "lift": 0.12,
                    "ci_low": 0.031, "ci_high": 0.2, "n_items": 96,
                    "breakdown": {"bulky": {"n": 12, "best": 0.75, "seed": 0.25, "none": 0.333}},
                    "breakdown_by": "answer"}


def test_hard_figures_are_read_from_the_test_rollouts_and_match_a_hard_run(sim_bench):
    db, first = sim_bench[0], sim_bench[1]
    row = learning_store.read_run(db, first["run_id"])
    assert row["metric"] == "hard"  # sim-rulebook's choice scorer is all or nothing
    # on a run gated on hard the recomputed figures are the stored ones, interval included
    assert row["test_hard"] == row["test"]
    assert {k: row["lift_hard"][k] for k in ("baseline", "best", "lift", "ci_low", "ci_high", "n_items")} == \
        {k: row["lift"][k] for k in ("baseline", "best", "lift", "ci_low", "ci_high", "n_items")}


def test_the_trial_log_and_the_stages_add_up_to_the_runs_calls(sim_bench):
    """Each trial is one "examples" gate row with the calls its step paid for it; the stages hold
    every target call of the run."""
    db, row = sim_bench
    run_id = row["run_id"]
    gates = query(db, "SELECT step, decision, wins, losses, n_evaluated FROM gate_decisions "
                      "WHERE run_id = ? AND kind = 'examples' ORDER BY step", (run_id,))
    log = row["trial_log"]
    assert gates and [(t["step"], t["decision"], t["wins"], t["losses"], t["evaluated"]) for t in log] == gates
    assert {t["trial"] for t in log} <= {"example", "rule", "template", "ablation"}
    kept = sum(row[f"{k}_trials"]["accepted"] for k in ("examples", "rule", "template", "ablation"))
    assert kept == sum(t["decision"] in ("accept", "accept_new_best") for t in log)
    stages = row["target_calls_by_stage"]
    assert sum(stages.values()) == row["calls"]["target"]
    assert sum(t["target_calls"] for t in log) == stages["examples"] > 0
    assert all(t["target_calls"] >= t["evaluated"] > 0 or t["evaluated"] == 0 for t in log)

"""Skill lift: the best skill against the better of no skill and the seed, with a paired
bootstrap interval; measured at the end of every run and shown by `show` and run.json."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.lift import bootstrap_interval, field_values, lift_summary, measure
from skillopt.store.reader import Reader
from tests.helpers import run_sim

ROOT = Path(__file__).resolve().parents[1]


def test_the_baseline_is_the_better_of_no_skill_and_the_seed():
    best = {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0}
    weak_seed = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}
    none = {"a": 1.0, "b": 0.0, "c": 0.0, "d": 0.0}
    lift = measure(best, weak_seed, none, {})
    assert lift.baseline == "none" and lift.baseline_score == 0.25 and lift.lift == 0.5
    lift = measure(best, none, weak_seed, {})  # the roles swapped: the seed is now the better one
    assert lift.baseline == "seed" and lift.lift == 0.5


def test_a_tie_between_seed_and_no_skill_takes_no_skill_as_the_bar():
    same = {"a": 1.0, "b": 0.0}
    assert measure({"a": 1.0, "b": 1.0}, same, dict(same), {}).baseline == "none"


def test_only_items_scored_by_all_three_count():
    lift = measure({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 0.0, "b": 0.0}, {"a": 0.0, "c": 0.0}, {})
    assert lift.n_items == 1 and lift.lift == 1.0
    assert measure({"a": 1.0}, {"b": 0.0}, {"a": 0.0}, {}) is None


def test_the_bootstrap_interval_brackets_the_mean_and_is_reproducible():
    diffs = [1.0] * 30 + [0.0] * 60 + [-1.0] * 10
    low, high = bootstrap_interval(diffs, seed=3)
    assert low < 0.2 < high and (low, high) == bootstrap_interval(diffs, seed=3)
    assert bootstrap_interval([0.5] * 10) == (0.5, 0.5)
    wide_low, wide_high = bootstrap_interval(diffs[:10] + diffs[30:40])
    assert wide_high - wide_low > high - low  # fewer items, a wider interval


def test_the_breakdown_is_by_expected_answer_for_label_tasks_only():
    best, seed, none = {"a": 1.0, "b": 0.0, "c": 1.0}, {"a": 0.0, "b": 0.0, "c": 1.0}, {"a": 0.0, "b": 1.0, "c": 0.0}
    lift = measure(best, seed, none, {"a": "legal", "b": "billing", "c": "legal"})
    assert lift.breakdown == {"billing": {"n": 1, "best": 0.0, "seed": 0.0, "none": 1.0},
                              "legal": {"n": 2, "best": 1.0, "seed": 0.5, "none": 0.0}}
    many = {str(i): str(i) for i in range(20)}  # every answer distinct: numbers, not labels
    values = {i: 1.0 for i in many}
    assert measure(values, values, values, many).breakdown == {}


def test_every_run_scores_no_skill_and_stores_its_lift(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "num_epochs=2", "max_steps_per_epoch=2", "batch_size=16", "selection_size=20",
                     "test_size=30")
    r = Reader(db)
    tests, lift = r.tests(run_id), r.lift(run_id)
    assert set(tests) == {"seed", "best", "final", "none"}
    assert lift["baseline"] in ("none", "seed") and lift["n_items"] == 30
    bar = max(tests["none"]["score"], tests["seed"]["score"])
    assert lift["baseline_score"] == pytest.approx(bar) and lift["best_score"] == pytest.approx(tests["best"]["score"])
    assert lift["ci_low"] <= lift["lift"] <= lift["ci_high"]
    assert lift["lift"] == pytest.approx(tests["best"]["score"] - bar)
    none_rows = r.q("SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND purpose = 'test_none'", (run_id,))
    assert none_rows[0]["n"] == 30
    shown = subprocess.run([sys.executable, "-m", "skillopt", "show", run_id, "--db", str(db)], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout
    assert f"lift: best {lift['best_score']:.3f} vs {lift['baseline']}" in shown
    doc = json.loads(subprocess.run([sys.executable, "-m", "skillopt", "show", run_id, "--db", str(db), "--json"],
                                    cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert doc["lift"]["lift"] == pytest.approx(lift["lift"]) and doc["test"]["none"] == tests["none"]["score"]


FIELDS = {"best": {"a": {"date": 1.0, "room": 1.0}, "b": {"date": 1.0, "room": 0.0}},
          "seed": {"a": {"date": 0.0, "room": 1.0}, "b": {"date": 0.0, "room": 0.0}},
          "none": {"a": {"date": 0.0, "room": 0.0}, "b": {"date": 1.0, "room": 0.0}}}


def test_a_field_graded_task_breaks_the_lift_down_by_field_in_the_tasks_order():
    best, seed, none = {"a": 1.0, "b": 0.5}, {"a": 0.5, "b": 0.0}, {"a": 0.0, "b": 0.5}
    lift = measure(best, seed, none, {"a": "x", "b": "y"}, fields=FIELDS)
    assert lift.breakdown_by == "field" and list(lift.breakdown) == ["date", "room"]
    assert lift.breakdown["date"] == {"n": 2, "best": 1.0, "seed": 0.0, "none": 0.5}
    assert lift.breakdown["room"] == {"n": 2, "best": 0.5, "seed": 0.5, "none": 0.0}
    # one skill's field scores missing (an old checkpoint): the answer breakdown, said so
    fallback = measure(best, seed, none, {"a": "x", "b": "y"}, fields={**FIELDS, "none": {}})
    assert fallback.breakdown_by == "answer" and set(fallback.breakdown) == {"x", "y"}
    assert measure(best, seed, none, {}).breakdown_by == ""  # neither: no breakdown


def test_field_values_leave_errored_items_out_and_need_a_field_scorer():
    from skillopt.tasks.task import Evaluation, Item, Trajectory

    items = [Item("a", {}, {"f": 1}, "test"), Item("b", {}, {"f": 2}, "test")]
    rolled = [Trajectory("a", "", "1", "", Evaluation(1.0, 1.0, "")),
              Trajectory("b", "", "", "", Evaluation(0.0, 0.0, ""), error="timeout")]
    assert field_values(lambda item, out: {"f": float(out == "1")}, items, rolled) == {"a": {"f": 1.0}}
    assert field_values(lambda item, out: None, items, rolled) == {}


def test_the_summary_prints_the_lift_and_its_breakdown():
    row = {"best_score": 0.75, "baseline": "seed", "baseline_score": 0.25, "lift": 0.5, "ci_low": 0.1,
           "ci_high": 0.9, "n_items": 2, "breakdown_by": "field",
           "breakdown": {"date": {"n": 2, "best": 1.0, "seed": 0.0, "none": 0.5}}}
    assert lift_summary(row).splitlines() == [
        "lift: best 0.750 vs seed 0.250: +0.500 (95% interval +0.100 to +0.900, 2 test items)",
        "by field (share of test items with it right): best / seed / no skill",
        "  date  1.000 / 0.000 / 0.500  (2 items)"]
    assert lift_summary({**row, "breakdown": {}}).count("\n") == 0


def test_a_run_on_a_json_task_stores_shows_and_exports_its_lift_by_field(tmp_path, capsys):
    """The codes task of tests/test_partial_credit.py: field a is always right, b only once the
    skill says how (the best skill does, the seed does not), c never."""
    from skillopt.cli import main
    from skillopt.store.export import run_document
    from tests.test_partial_credit import _run

    r, run_id = _run(tmp_path)
    lift = r.lift(run_id)
    assert lift["breakdown_by"] == "field" and list(lift["breakdown"]) == ["a", "b", "c"]
    assert {f: (g["best"], g["seed"], g["none"]) for f, g in lift["breakdown"].items()} == {
        "a": (1.0, 1.0, 1.0), "b": (1.0, 0.0, 0.0), "c": (0.0, 0.0, 0.0)}
    assert run_document(r, run_id)["lift"]["breakdown"] == lift["breakdown"]
    assert main(["show", run_id, "--db", str(tmp_path / "s.db")]) == 0
    out = capsys.readouterr().out
    assert "by field (share of test items with it right): best / seed / no skill" in out
    assert "  b  1.000 / 0.000 / 0.000  (8 items)" in out


def test_the_field_scores_of_the_tests_survive_a_checkpoint():
    from skillopt.state import State

    state = State(step=3, skill="s", current_score=0.5, best_skill="s", best_score=0.5, best_step=1,
                  epoch_start_skill="s", meta_skill="", test_fields=FIELDS)
    assert State.from_json(json.loads(json.dumps(state.to_json()))).test_fields == FIELDS
    old = {k: v for k, v in state.to_json().items() if k != "test_fields"}  # written before the field existed
    assert State.from_json(old).test_fields == {}

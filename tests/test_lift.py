"""Skill lift: the best skill against the better of no skill and the seed, with a paired
bootstrap interval; measured at the end of every run and shown by `show` and run.json."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.lift import bootstrap_interval, measure
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

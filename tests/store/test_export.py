"""Export of a run: best_skill.md, steps.csv and run.json (the keys its readers rely on), from a real
simulated run."""
from __future__ import annotations

import csv
import io
import json

import pytest

from skillopt.errors import UserError
from skillopt.store.export import STEP_COLUMNS, export_run, run_document
from skillopt.store.reader import Reader

RUN_KEYS = {"id", "status", "task", "config"}
STEP_KEYS = {"step", "epoch", "edit_budget", "train_hard", "train_soft", "selection_score", "candidate_score",
             "decision", "edits"}
EDIT_KEYS = {"op", "target", "content", "source", "support", "status"}
USAGE_KEYS = {"target_calls", "optimizer_calls", "prompt_tokens", "completion_tokens", "cost_usd", "cache_hits"}


@pytest.fixture(scope="module")
def exported(sim_run, tmp_path_factory):
    db, run_id = sim_run
    out = tmp_path_factory.mktemp("export")
    paths = export_run(Reader(db), run_id, out)
    return db, run_id, out, paths


def test_writes_the_three_files_and_nothing_else(exported):
    _, _, out, paths = exported
    assert sorted(p.name for p in paths) == ["best_skill.md", "run.json", "steps.csv"]
    assert sorted(p.name for p in out.iterdir()) == ["best_skill.md", "run.json", "steps.csv"]  # no .tmp left


def test_best_skill_is_the_runs_best(exported):
    db, run_id, out, _ = exported
    r = Reader(db)
    best = (out / "best_skill.md").read_text(encoding="utf-8")
    assert best == r.best_skill(run_id) and best.strip()
    assert best == r.version(run_id, r.run(run_id)["best_step"], "current")


def test_run_json_has_the_expected_keys(exported):
    db, run_id, out, _ = exported
    doc = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert {"run", "steps", "slow_updates", "meta_skills", "test", "usage"} <= set(doc)
    assert RUN_KEYS <= set(doc["run"]) and doc["run"]["id"] == run_id and doc["run"]["status"] == "completed"
    assert doc["run"]["task"] == "sim-rulebook" and doc["run"]["config"]["num_epochs"] == 3
    assert [s["step"] for s in doc["steps"]] == list(range(1, 10))
    for s in doc["steps"]:
        assert STEP_KEYS <= set(s)
        assert s["decision"] in ("accept", "accept_new_best", "reject", "skip")
        for e in s["edits"]:
            assert EDIT_KEYS <= set(e) and e["op"] in ("add", "replace", "delete")
    assert sum(len(s["edits"]) for s in doc["steps"]) > 0
    assert any(e["status"] == "applied" for s in doc["steps"] for e in s["edits"])
    assert [u["epoch"] for u in doc["slow_updates"]] == [2, 3]
    assert all({"epoch", "guidance", "decision"} <= set(u) for u in doc["slow_updates"])
    assert [m["epoch"] for m in doc["meta_skills"]] == [2, 3]
    assert all(m["content"].strip() for m in doc["meta_skills"])
    assert set(doc["test"]) == {"seed", "best", "final", "none"} and all(isinstance(v, float) for v in doc["test"].values())
    assert USAGE_KEYS <= set(doc["usage"])


def test_run_json_agrees_with_the_store(exported):
    db, run_id, out, _ = exported
    doc = json.loads((out / "run.json").read_text(encoding="utf-8"))
    r = Reader(db)
    calls = r.one("SELECT SUM(role = 'target' AND cached = 0) AS t, SUM(role = 'optimizer' AND cached = 0) AS o "
                  "FROM llm_calls WHERE run_id = ?", (run_id,))
    assert doc["usage"]["target_calls"] == calls["t"] > 0 and doc["usage"]["optimizer_calls"] == calls["o"] > 0
    assert doc["test"]["seed"] == r.tests(run_id)["seed"]["score"]
    n_edits = r.one("SELECT COUNT(*) AS n FROM edits WHERE run_id = ?", (run_id,))["n"]
    assert sum(len(s["edits"]) for s in doc["steps"]) == n_edits
    assert [s["decision"] for s in doc["steps"]] == [s["decision"] for s in r.steps(run_id)]


def test_steps_csv_has_one_row_per_step(exported):
    db, run_id, out, _ = exported
    rows = list(csv.DictReader(io.StringIO((out / "steps.csv").read_text(encoding="utf-8"))))
    assert tuple(rows[0].keys()) == STEP_COLUMNS
    assert [int(r["step"]) for r in rows] == list(range(1, 10))
    assert [r["decision"] for r in rows] == [s["decision"] for s in Reader(db).steps(run_id)]


def test_export_is_repeatable(exported, tmp_path):
    db, run_id, out, _ = exported
    export_run(Reader(db), run_id, tmp_path)
    for name in ("best_skill.md", "run.json", "steps.csv"):
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes()


def test_unknown_run_is_a_user_error(sim_run, tmp_path):
    db, _ = sim_run
    with pytest.raises(UserError, match="no run nope"):
        run_document(Reader(db), "nope")
    with pytest.raises(UserError):
        export_run(Reader(db), "nope", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written for a bad run id

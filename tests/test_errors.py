"""A model failure is never a score: errored items (target or judge) are retried by the call
layer, then left out of every mean and counted; the gate compares skills only on items both
were scored on and never accepts on an incomplete score; a run whose test scores are
incomplete ends `incomplete`, saying how many items are missing; nothing errored is cached.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from skillopt import gate
from skillopt.config import load_config
from skillopt.models import llm
from skillopt.models.providers import HandlerResult, ProviderError, register_provider
from skillopt.rollout import Batch, Evaluator
from skillopt.store.reader import Reader
from skillopt.tasks.task import Evaluation, Item, Trajectory
from skillopt.validation import Validator
from tests.helpers import run_sim, tables, write_task

ROOT = Path(__file__).resolve().parents[1]
SMALL = ("num_epochs=2", "max_steps_per_epoch=2", "batch_size=16", "slow_update_samples=8",
         "selection_size=20", "test_size=20")


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(llm, "_sleep", lambda s: None)


def traj(item_id: str, hard: float, error: str = "") -> Trajectory:
    return Trajectory(item_id, "p", "" if error else "out", "x", Evaluation(hard, hard, "f"), error=error)


# ---- the units -------------------------------------------------------------------------------

def test_a_batch_mean_leaves_errored_items_out_and_says_whether_it_is_complete():
    batch = Batch(trajectories=(traj("a", 1.0), traj("b", 0.0), traj("c", 0.0, error="timeout")),
                  cached=(False,) * 3)
    assert batch.mean("hard") == 0.5  # not 1/3: the errored item is not a zero
    assert batch.n_errors == 1 and [t.item_id for t in batch.scored] == ["a", "b"]
    assert batch.complete(0.34) and not batch.complete(0.05)


class StubEvaluate:
    """The trainer's evaluate(): fixed per-skill results, recording what was asked."""

    def __init__(self, results: dict[str, dict[str, Trajectory]]):
        self.results, self.calls = results, []

    def __call__(self, skill, items, *, step, split, purpose, stage):
        self.calls.append((skill, purpose, [it.id for it in items]))
        return Batch(trajectories=tuple(self.results[skill][it.id] for it in items), cached=(False,) * len(items))

    run = __call__  # the rollout Evaluator's run(), which the gate calls for second tries


def validator(results, *overrides: str) -> tuple[Validator, StubEvaluate]:
    config = load_config(None, ["gate_mode=strict", "gate_metric=hard", *overrides])  # resolved, as a run's is
    plan = SimpleNamespace(selection=tuple(Item(i, {}, "x", "selection") for i in "abcd"), step_seed=lambda s: 1)
    stub = StubEvaluate(results)
    return Validator(config, plan, evaluator=stub, evaluate=stub, emit=lambda e: None, run_id="r"), stub


def test_the_strict_gate_compares_only_items_both_skills_were_scored_on():
    # On the common items (a, b, c) the candidate ties the incumbent; counting its errored
    # item d as 0 would make it lose, counting the incumbent's d (1.0) would too.
    results = {"cand": {"a": traj("a", 1), "b": traj("b", 0), "c": traj("c", 1), "d": traj("d", 0, "timeout")}}
    v, _ = validator(results, "max_error_rate=0.5")
    result = v.run(1, "cur", "cand", {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0}, "gate")
    d = result.decision
    assert (d.current_score, d.candidate_score, d.n_items) == (2 / 3, 2 / 3, 3)
    assert (d.n_errors, d.n_errors_current, d.complete) == (1, 0, True)
    assert not d.accept and "tie" in d.reason
    assert dict(result.candidate_values) == {"a": 1.0, "b": 0.0, "c": 1.0}


def test_the_strict_gate_scores_the_incumbents_missing_items_again_before_comparing():
    results = {"cand": {i: traj(i, 1) for i in "abcd"}, "cur": {"d": traj("d", 1)}}
    v, stub = validator(results)
    d = v.run(1, "cur", "cand", {"a": 0.0, "b": 0.0, "c": 0.0}, "slow_update").decision
    assert ("cur", "slow_update_current", ["d"]) in stub.calls
    assert d.n_errors_current == 0 and d.complete and d.accept


def test_the_gate_never_accepts_on_an_incomplete_score():
    results = {"cand": {"a": traj("a", 1), "b": traj("b", 1), "c": traj("c", 1), "d": traj("d", 0, "server")}}
    v, _ = validator(results, "use_gate=false")  # even with the gate switched off
    d = v.run(1, "cur", "cand", {i: 0.0 for i in "abcd"}, "gate").decision
    assert not d.accept and not d.complete
    assert d.reason.startswith("incomplete: model errors on 1 candidate and 0 incumbent items of 4")


def test_the_paired_gate_drops_an_item_the_candidate_errored_on():
    g = gate.PairedGate({"a": 0.0, "b": 0.0, "c": 1.0}, ["a", "b", "c"]).observe("a", 1.0).drop("b")
    assert g.items == ("a", "c") and g.remaining == ("c",)
    with pytest.raises(ValueError):
        g.drop("a")


def test_the_judge_model_is_part_of_the_cache_key_only_when_the_task_uses_a_judge():
    def key(uses_judge: bool, judge_model: str) -> str:
        task = SimpleNamespace(name="t", evaluator_version="v", uses_judge=uses_judge)
        target = SimpleNamespace(model="m", settings=SimpleNamespace(temperature=0.0, max_tokens=9))
        judge = SimpleNamespace(model=judge_model)
        ev = Evaluator(task, target, judge=judge, cache=None, use_cache=True, workers=1, run_id="r", emit=print)
        return ev.key("sha", Item("i", {}, "x", "train"))

    assert key(True, "judge/a") != key(True, "judge/b")
    assert key(False, "judge/a") == key(False, "judge/b")  # exact-match tasks keep their cache


# ---- fault-injected runs -----------------------------------------------------------------------

def errored_cache_rows(db: Path) -> int:
    """Evaluation-cache rows whose output or feedback shows a model or judge failure."""
    return Reader(db).one("SELECT COUNT(*) AS n FROM eval_cache WHERE output = '' OR feedback LIKE 'model error%' "
                          "OR feedback LIKE 'judge%'")["n"]


def test_transient_target_faults_are_retried_and_every_score_is_complete(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, *SMALL, "target_model=sim/target?error=0.1")
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    retried = r.one("SELECT COUNT(*) AS n FROM llm_calls WHERE role = 'target' AND attempts > 1")["n"]
    assert retried > 10  # the faults really happened, and the retries recovered them
    assert r.one("SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND error != ''", (run_id,))["n"] == 0
    assert all(t["complete"] and t["n_errors"] == 0 for t in r.tests(run_id).values())
    assert errored_cache_rows(db) == 0


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    """A run where a fifth of the items fail at every attempt (backoff is skipped)."""
    db = tmp_path_factory.mktemp("broken") / "s.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(llm, "_sleep", lambda s: None)
        return db, run_sim(db, *SMALL, "target_model=sim/target?broken=0.2")


def test_persistently_failing_items_are_excluded_counted_and_the_gate_refuses(broken_run):
    db, run_id = broken_run
    r = Reader(db)
    run = r.run(run_id)
    assert run["status"] == "incomplete"
    assert "test scores incomplete" in run["reason"] and "resume" in run["reason"]
    gates = r.q("SELECT * FROM gate_decisions WHERE run_id = ?", (run_id,))
    assert gates and all(not g["complete"] and g["decision"] == "reject" for g in gates)
    assert all(g["reason"].startswith("incomplete: model errors on") for g in gates)
    for which, t in r.tests(run_id).items():
        rows = r.q("SELECT hard, error FROM rollouts WHERE run_id = ? AND purpose = ?", (run_id, f"test_{which}"))
        scored = [x["hard"] for x in rows if not x["error"]]
        assert t["n_errors"] == len(rows) - len(scored) > 0 and not t["complete"]
        assert t["hard"] == pytest.approx(sum(scored) / len(scored))  # the mean over scored items only
    assert errored_cache_rows(db) == 0
    shown = subprocess.run([sys.executable, "-m", "skillopt", "show", run_id, "--db", str(db)], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout
    assert "status=incomplete" in shown and "items errored, INCOMPLETE" in shown
    doc = json.loads(subprocess.run([sys.executable, "-m", "skillopt", "show", run_id, "--db", str(db), "--json"],
                                    cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert doc["test_items"]["seed"]["n_errors"] > 0 and doc["test_items"]["seed"]["complete"] is False


def write_judged_task(folder: Path) -> Path:
    return write_task(folder, "judged", "Answers graded by a judge model.",
                      'type = "llm_judge"\nrubric = "Polite and correct."', "# Skill\n\nBe polite.\n",
                      lambda i: (f"Say thanks #{i}", "Thanks"), sizes=(8, 4, 4))


def test_a_dead_judge_stops_the_run_and_nothing_is_scored_zero(tmp_path):
    def target(name, messages, settings, response_format):
        return HandlerResult("Thanks!", 5, 2)

    def judge(name, messages, settings, response_format):
        raise ProviderError("server", "judge backend is down")

    register_provider("polite", target)
    register_provider("deadjudge", judge)
    task = write_judged_task(tmp_path / "judged")
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=polite/t", "optimizer_model=polite/o", "judge_model=deadjudge/j",
                     "max_retries=1", task=str(task))
    r = Reader(db)
    run = r.run(run_id)
    assert run["status"] == "failed" and "judge" in run["reason"] and "instead of scoring them 0" in run["reason"]
    rows = r.q("SELECT hard, error FROM rollouts WHERE run_id = ?", (run_id,))
    assert rows and all(x["error"].startswith("judge: ") for x in rows)
    assert r.one("SELECT COUNT(*) AS n FROM eval_cache")["n"] == 0


def test_scoring_code_that_raises_on_every_reply_stops_the_run_at_the_seed(tmp_path):
    def target(name, messages, settings, response_format):  # a number for odd questions, words for even ones
        words = messages[-1]["content"].split()
        if not words[2:3] or not words[2].isdigit():  # an optimizer prompt: no edits
            return HandlerResult('{"summary": "nothing to add", "edits": []}', 5, 2)
        return HandlerResult("42" if int(words[2]) % 2 else "no idea", 5, 2)

    register_provider("answers42", target)
    task = write_task(tmp_path / "coded", "coded", "Scored by the task's own code.",
                      'type = "python"\nfunction = "scorer:score"', "# Skill\n\nAnswer with a number.\n",
                      lambda i: (f"What is {i} + 1?", str(i + 1)), sizes=(8, 4, 4))
    (task / "scorer.py").write_text("def score(item, output):\n    return float(item.expected['value'] == output)\n")
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=answers42/t", "optimizer_model=answers42/o", task=str(task))
    run = Reader(db).run(run_id)
    assert run["status"] == "failed" and "\n" not in run["reason"]
    assert "the task's scoring code raised on all 4 replies" in run["reason"]
    assert "TypeError" in run["reason"] and "fix the task's evaluator" in run["reason"]
    # A reply the code cannot read is a wrong answer, not a broken run: one that works on some replies goes on.
    (task / "scorer.py").write_text("def score(item, output):\n    return float(int(output) == int(item.expected))\n")
    ok = run_sim(tmp_path / "t.db", "target_model=answers42/t", "optimizer_model=answers42/o", "num_epochs=1",
                 task=str(task))
    reader = Reader(tmp_path / "t.db")
    assert reader.run(ok)["status"] == "completed", reader.run(ok)["reason"]
    raised = reader.q("SELECT feedback FROM rollouts WHERE run_id = ? AND feedback LIKE '%raised ValueError%'", (ok,))
    assert raised  # the unreadable replies scored 0, with the exception as their feedback


# ---- records ---------------------------------------------------------------------------------

def test_the_meta_skill_runs_without_the_slow_update(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, *SMALL, "use_slow_update=false", "use_meta_skill=true")
    r = Reader(db)
    assert r.slow_updates(run_id) == []
    metas = r.meta_skills(run_id)
    assert [m["epoch"] for m in metas] == [2] and metas[0]["content"].startswith("- ")
    prompts = r.one("SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND stage = 'meta'", (run_id,))["n"]
    assert prompts >= 1


def test_the_slow_updates_gate_keeps_its_own_incumbent_rollouts(tmp_path):
    """The epoch-end gate and the last step's gate run at the same step: each keeps its rows."""
    db = tmp_path / "s.db"
    run_id = run_sim(db, *SMALL, "gate_mode=paired", "use_cache=true")
    r = Reader(db)
    last = r.q("SELECT step FROM slow_updates WHERE run_id = ? AND score_before IS NOT NULL", (run_id,))
    assert last, "the slow update's gate ran"
    step = last[0]["step"]
    purposes = {x["purpose"] for x in r.q("SELECT DISTINCT purpose FROM rollouts WHERE run_id = ? AND step = ?",
                                          (run_id, step))}
    assert {"gate_current", "slow_update_current"} <= purposes


def open_page(monkeypatch, page: str, db: Path, run_id: str):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def test_the_dashboard_says_why_the_gate_refused_and_the_run_is_incomplete(broken_run, monkeypatch):
    db, run_id = broken_run
    at = open_page(monkeypatch, "pages/4_Gate_timeline.py", db, run_id)
    table = tables(at)[0]
    reasons = list(table[table["kind"] == "step"]["reason"])
    assert reasons and all(r.startswith("incomplete: model errors on") for r in reasons)
    at = open_page(monkeypatch, "pages/2_Monitor.py", db, run_id)
    status = " ".join(m.value for m in at.markdown if "Status:" in m.value)
    assert "`incomplete`" in status and "test scores incomplete" in status
    assert any(b.label.startswith("Resume") for b in at.button)

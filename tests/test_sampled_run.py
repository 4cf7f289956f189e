"""A sampled simulated run, built once for the module (it is the slow part): n target calls per
uncached item, 95% intervals stored for the train, gate and test scores and shown by the reader,
the export, `show` and the Monitor, kept across a kill and resume; and a one-sample run that
stores and draws exactly what a run without the sampling keys does."""
from __future__ import annotations

import json

import pytest

from skillopt.cli import main as cli_main
from skillopt.store import export
from skillopt.store.reader import Reader
from skillopt.ui import monitor as mon
from skillopt.vocabulary import ACCEPTED
from tests.helpers import run_sim

SHORT = ("num_epochs=1", "max_steps_per_epoch=2", "use_slow_update=false")


def rows(db, sql: str, *params) -> list[dict]:
    return Reader(db).q(sql, params)


# ---- one sample per item: nothing changes ------------------------------------------------

def _figures(db, run_id):
    r = Reader(db)
    skip = ("run_id", "duration_s", "finished_at", "created_at")
    strip = lambda rs: [{k: v for k, v in x.items() if k not in skip} for x in rs]  # noqa: E731
    steps, tests = r.steps(run_id), r.tests(run_id)
    return {"steps": strip(steps), "tests": strip(tests.values()), "gates": strip(r.gate_decisions(run_id)),
            "rollouts": strip(r.q("SELECT * FROM rollouts WHERE run_id = ? ORDER BY step, purpose, item_id",
                                  (run_id,))),
            "calls": r.q("SELECT role, stage, COUNT(*) AS n FROM llm_calls WHERE run_id = ? GROUP BY role, stage",
                         (run_id,)),
            "figure": mon.step_curves(steps, r.seed_score(run_id), tests, 2).to_dict()}


def test_a_one_sample_run_equals_a_run_without_the_keys(tmp_path):
    plain = run_sim(tmp_path / "a.db", *SHORT)
    keyed = run_sim(tmp_path / "b.db", *SHORT, "samples_per_item=1", "sample_temperature=1.5")
    a, b = _figures(tmp_path / "a.db", plain), _figures(tmp_path / "b.db", keyed)
    assert a == b
    assert a["steps"] and all(s["train_lo"] is None and s["current_lo"] is None for s in a["steps"])
    assert all(r["n_samples"] is None and r["samples_json"] is None for r in a["rollouts"])
    assert not any(t.get("fill") for t in a["figure"]["data"])  # no band without samples


# ---- a sampled simulated run: intervals stored, read, exported, shown, drawn ----------------

@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    db = tmp_path_factory.mktemp("sampled") / "s.db"
    return db, run_sim(db, *SHORT, "samples_per_item=3", "speculative_rollouts=false")


def test_a_sampled_run_makes_n_calls_per_uncached_item(sampled):
    db, run_id = sampled
    uncached = rows(db, "SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND cached = 0", run_id)[0]["n"]
    calls = rows(db, "SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target'", run_id)[0]["n"]
    assert uncached > 0 and calls == 3 * uncached
    stored = rows(db, "SELECT n_samples, hard_sd, samples_json, hard FROM rollouts WHERE run_id = ? AND error = ''",
                  run_id)
    assert {r["n_samples"] for r in stored} == {3}
    assert any(r["hard_sd"] > 0 for r in stored)  # the samples of some items differ
    for r in stored:
        samples = json.loads(r["samples_json"])
        assert r["hard"] == pytest.approx(sum(h for h, _ in samples) / 3)


def test_a_sampled_run_stores_intervals_that_contain_their_scores(sampled):
    db, run_id = sampled
    r = Reader(db)
    steps = r.steps(run_id)
    assert steps
    for s in steps:
        assert s["train_lo"] <= s["train_hard"] <= s["train_hi"]
        assert s["current_lo"] <= s["current_score"] <= s["current_hi"]
        if s["candidate_score"] is not None:
            assert s["candidate_lo"] <= s["candidate_score"] <= s["candidate_hi"]
    assert any(s["train_hi"] > s["train_lo"] for s in steps)
    for g in r.gate_decisions(run_id):
        assert g["current_lo"] <= g["current_score"] <= g["current_hi"]
        assert g["candidate_lo"] <= g["candidate_score"] <= g["candidate_hi"]
    tests = r.tests(run_id)
    assert set(tests) == {"none", "seed", "best", "final"}
    for t in tests.values():
        assert t["score_lo"] <= t["score"] <= t["score_hi"] and t["score_hi"] > t["score_lo"]


def test_export_and_show_give_the_intervals(sampled, capsys):
    db, run_id = sampled
    doc = export.run_document(Reader(db), run_id)
    step = doc["steps"][0]
    assert step["train_interval"][0] <= step["train_hard"] <= step["train_interval"][1]
    assert doc["test_items"]["best"]["interval"][0] <= doc["test"]["best"] <= doc["test_items"]["best"]["interval"][1]
    assert cli_main(["show", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    lo, hi = step["train_interval"]
    assert f"train {step['train_hard']:.3f} [{lo:.3f}-{hi:.3f}]" in out
    lo, hi = doc["test_items"]["best"]["interval"]
    assert f"best {doc['test']['best']:.3f} [{lo:.3f}-{hi:.3f}]" in out


def test_a_one_sample_export_has_no_interval_keys(tmp_path):
    run_id = run_sim(tmp_path / "one.db", "num_epochs=1", "max_steps_per_epoch=1", "use_slow_update=false")
    doc = export.run_document(Reader(tmp_path / "one.db"), run_id)
    assert not any(k.endswith("_interval") for s in doc["steps"] for k in s)
    assert not any("interval" in t for t in doc["test_items"].values())


def test_the_monitor_curve_draws_the_intervals(sampled):
    db, run_id = sampled
    r = Reader(db)
    steps, tests = r.steps(run_id), r.tests(run_id)
    data = {t["name"]: t for t in mon.step_curves(steps, r.seed_score(run_id), tests, 2).to_dict()["data"]
            if t.get("name")}
    band = data["train batch (hard): 95% sampling interval"]
    assert band["fill"] == "tonexty" and list(band["y"]) == [s["train_lo"] for s in steps]
    assert "selection: 95% sampling interval" in data
    bars = data["selection: candidate"]["error_y"]
    cand = [s for s in steps if s["candidate_score"] is not None]
    assert list(bars["array"]) == pytest.approx([s["candidate_hi"] - s["candidate_score"] for s in cand])
    assert data["test: best skill"]["error_y"]["arrayminus"] == pytest.approx(
        [tests["best"]["score"] - tests["best"]["score_lo"]])


def test_a_killed_sampled_run_resumes_from_its_cached_samples(tmp_path, sampled):
    from tests.test_resume import killer

    overrides = (*SHORT, "samples_per_item=3", "speculative_rollouts=false")
    db = tmp_path / "k.db"
    assert killer(db, "run", "reflect@2+1", "start", *overrides) == -9  # killed in step 2, after its rollouts
    paid = rows(db, "SELECT COUNT(*) AS n FROM eval_cache")[0]["n"]
    assert paid > 0
    assert killer(db, "run", "0", "resume") == 0
    r, ref = Reader(db), Reader(sampled[0])
    assert r.run("run")["status"] == "completed"
    key = lambda s: (s["step"], s["decision"], s["train_hard"], s["train_lo"], s["current_score"],  # noqa: E731
                     s["candidate_score"], s["candidate_hi"])
    assert [key(s) for s in r.steps("run")] == [key(s) for s in ref.steps(sampled[1])]
    assert {w: t["score_lo"] for w, t in r.tests("run").items()} == \
        {w: t["score_lo"] for w, t in ref.tests(sampled[1]).items()}
    reused = rows(db, "SELECT COUNT(*) AS n FROM rollouts WHERE run_id = 'run' AND step = 2 AND cached = 1 "
                      "AND n_samples = 3")[0]["n"]
    assert reused > 0  # step 2 redone from the samples paid for before the kill


def test_the_monitor_page_shows_the_bands(sampled, monkeypatch):
    from tests.test_page_monitor import charts, page, traces

    db, run_id = sampled
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    curves = traces(charts(page(run_id))[0])
    assert curves["train batch (hard): 95% sampling interval"]["fill"] == "tonexty"
    first = Reader(db).steps(run_id)[0]
    side = "candidate" if first["decision"] in ACCEPTED else "current"  # the incumbent after the step
    assert curves["selection: 95% sampling interval"]["y"][0] == pytest.approx(first[f"{side}_lo"])

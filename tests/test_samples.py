"""Noise made visible: samples_per_item > 1 scores each item n times at sample_temperature.

With one sample per item nothing changes (the same calls, cache keys, scores and figures).
With n > 1: n target calls per uncached item, each with its own reproducible seed; the mean
is the item's score and an errored sample errors the item; 95% intervals are stored for the
train, gate and test scores and shown by the reader, the export, `show` and the Monitor's
curves; the gate counts what is within sampling noise as a tie.
"""
from __future__ import annotations

import hashlib
import json
import threading

import pytest

from skillopt import gate, spread
from skillopt.cli import main as cli_main
from skillopt.config import ConfigError
from skillopt.models import local, sim
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.rollout import Evaluator, item_hash
from skillopt.skill import sha
from skillopt.store import export
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.tasks.loader import load_task
from skillopt.ui import monitor as mon
from skillopt.validation import Validator, Values
from skillopt.vocabulary import ACCEPTED
from tests.helpers import run_sim, sim_config

PREFIX = "samplestest"  # a provider of this file only: records each call's settings
SKILL = "# Routing\n\n- Order codes starting with Z: route freight.\n"
SHORT = ("num_epochs=1", "max_steps_per_epoch=2", "use_slow_update=false")


class Recorder:
    def __init__(self):
        self.settings: list[GenSettings] = []
        self.fail_seeds: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self, name, messages, settings, response_format):
        with self.lock:
            self.settings.append(settings)
        if settings.seed in self.fail_seeds:
            raise ProviderError("server", "overloaded")  # retryable; with max_retries=0 the sample fails
        return HandlerResult("freight", 10, 1)


REC = Recorder()
register_provider(PREFIX, REC)


class DictCache:
    """rollout.EvalCache over a dict, storing what the store stores (samples included)."""

    def __init__(self):
        self.rows: dict[str, dict] = {}

    def eval_get_many(self, keys):
        return {k: self.rows[k] for k in keys if k in self.rows}

    def eval_put(self, key, t):
        samples = t.evaluation.samples
        self.rows[key] = {"prompt": t.prompt, "output": t.output, "hard": t.evaluation.hard,
                          "soft": t.evaluation.soft, "feedback": t.evaluation.feedback,
                          "samples_json": json.dumps([list(p) for p in samples]) if samples else None}


@pytest.fixture(scope="module")
def task():
    return load_task("sim-rulebook")


@pytest.fixture(autouse=True)
def reset_recorder():
    REC.settings, REC.fail_seeds = [], set()


def evaluator(task, model: str = f"{PREFIX}/a", cache=None, **kwargs) -> Evaluator:
    llm = LLM(model, "target", GenSettings(max_retries=0), use_cache=False)
    return Evaluator(task, llm, judge=None, cache=cache, use_cache=True, workers=4, run_id="r",
                     emit=lambda e: None, **kwargs)


def rows(db, sql: str, *params) -> list[dict]:
    return Reader(db).q(sql, params)


# ---- one sample per item: nothing changes ------------------------------------------------

def test_one_sample_keeps_todays_cache_key_byte_for_byte(task):
    item = task.split("selection")[0]
    model_key = json.dumps([task.name, task.evaluator_version, f"{PREFIX}/a", 0.0, 512])  # today's formula
    today = hashlib.sha256(f"{sha(SKILL)}|{item_hash(item)}|{model_key}".encode()).hexdigest()
    assert evaluator(task).key(sha(SKILL), item) == today
    assert evaluator(task, samples=1, sample_temperature=1.3).key(sha(SKILL), item) == today
    three = evaluator(task, samples=3).key(sha(SKILL), item)
    assert three != today  # a 3-sample mean never stands in for a 1-sample score, nor the reverse
    assert evaluator(task, samples=5).key(sha(SKILL), item) not in (today, three)
    assert evaluator(task, samples=3, sample_temperature=1.0).key(sha(SKILL), item) != three


def test_one_sample_makes_the_same_calls(task):
    items = task.split("selection")[:4]
    batch = evaluator(task, samples=1).run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert len(REC.settings) == 4 and all(s == GenSettings(max_retries=0) for s in REC.settings)
    assert all(t.evaluation.samples == () for t in batch.trajectories)


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


def test_one_sample_gate_rules_are_the_published_ones():
    assert gate.strict(0.5, 0.5 + 1e-3, 10) == gate.strict(0.5, 0.5 + 1e-3, 10, noise=0.0)
    assert gate.strict(0.5, 0.5 + 1e-3, 10).accept
    inc, cand = {"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 1.0}
    assert gate.paired(inc, cand, ["a", "b"]) == gate.paired(inc, cand, ["a", "b"], incumbent_var={},
                                                             candidate_var={"a": 0.0})


# ---- n samples per item ------------------------------------------------------------------

def test_each_sample_is_its_own_reproducible_call(task):
    items = task.split("selection")[:5]
    cache = DictCache()
    ev_ = evaluator(task, cache=cache, samples=3, sample_temperature=0.9)
    batch = ev_.run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert len(REC.settings) == 15  # 3 calls per uncached item
    assert {s.temperature for s in REC.settings} == {0.9}
    seeds = [ev_.sample_settings(it, k).seed for it in items for k in range(3)]
    assert sorted(s.seed for s in REC.settings) == sorted(seeds) and len(set(seeds)) == 15  # samples differ
    assert seeds == [evaluator(task, samples=3).sample_settings(it, k).seed for it in items for k in range(3)]
    # the provider always answers "freight": each item's three samples agree, and the mean is theirs
    assert all(len(set(t.evaluation.samples)) == 1 and len(t.evaluation.samples) == 3 and
               t.evaluation.samples[0] == (t.evaluation.hard, t.evaluation.soft) for t in batch.trajectories)
    again = evaluator(task, cache=cache, samples=3, sample_temperature=0.9).run(
        SKILL, items, step=2, split="selection", purpose="p", stage="gate")
    assert len(REC.settings) == 15 and all(again.cached)  # a later run (or a resume) pays nothing
    assert [t.evaluation for t in again.trajectories] == [t.evaluation for t in batch.trajectories]
    one, hit = ev_.one(SKILL, items[0], step=3, stage="gate")
    assert hit and one.evaluation.samples == batch.trajectories[0].evaluation.samples
    evaluator(task, cache=cache, samples=1).run(SKILL, items, step=2, split="selection", purpose="p", stage="gate")
    assert len(REC.settings) == 20  # the 1-sample run finds no 3-sample result to reuse


def test_an_errored_sample_errors_the_item_and_is_never_cached(task):
    items = task.split("selection")[:3]
    cache = DictCache()
    ev_ = evaluator(task, cache=cache, samples=3)
    REC.fail_seeds = {ev_.sample_settings(items[1], 2).seed}
    batch = ev_.run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert [bool(t.error) for t in batch.trajectories] == [False, True, False]
    assert batch.n_errors == 1 and [t.item_id for t in batch.scored] == [items[0].id, items[2].id]  # left out
    assert len(cache.rows) == 2 and ev_.key(sha(SKILL), items[1]) not in cache.rows
    assert ev_.samples_of(sha(SKILL), items[1]) == ()
    REC.fail_seeds = set()
    retried, hit = ev_.one(SKILL, items[1], step=2, stage="gate")
    assert not hit and not retried.error and len(retried.evaluation.samples) == 3


def test_the_simulated_target_spreads_only_above_temperature_zero(task):
    skill = task.seed_skill
    prompts = [task.render(it) for it in task.split("selection")[:30]]
    cold = [{sim.target_answer(skill, p, seed=s) for s in range(8)} for p in prompts]
    assert all(len(answers) == 1 for answers in cold)  # temperature 0: the seed changes nothing
    assert all(sim.target_answer(skill, p, temperature=0.0, seed=3) == sim.target_answer(skill, p) for p in prompts)
    hot = [{sim.target_answer(skill, p, temperature=1.0, seed=s) for s in range(8)} for p in prompts]
    assert sum(len(answers) > 1 for answers in hot) >= 5  # samples of an item differ
    assert hot == [{sim.target_answer(skill, p, temperature=1.0, seed=s) for s in range(8)} for p in prompts]
    llm = LLM("sim/target", "target", GenSettings(), use_cache=False)
    messages = task.messages(skill, task.split("selection")[0])
    replies = {llm.complete(messages, stage="rollout", step=0, settings=GenSettings(temperature=2.0, seed=s)).text
               for s in range(40)}
    assert len(replies) > 1  # through the provider too


def test_the_local_model_honours_temperature_and_seed(monkeypatch):
    calls = []

    class FakeLlama:
        def reset(self):
            pass

        def create_chat_completion(self, messages, **kwargs):
            calls.append(kwargs)
            return {"choices": [{"message": {"content": "ok"}}], "usage": {}}

    engine = object.__new__(local.Engine)
    engine.name, engine.lock, engine.llama, engine._system, engine._snapshots = "fake", threading.Lock(), \
        FakeLlama(), "", {}
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "0")
    messages = [{"role": "user", "content": "hi"}]
    engine.chat(messages, GenSettings(temperature=0.7, seed=1234), None)
    engine.chat(messages, GenSettings(), None)
    engine.chat(messages, GenSettings(), None)
    assert (calls[0]["temperature"], calls[0]["seed"]) == (0.7, 1234)
    assert calls[1]["temperature"] == 0.0 and calls[1]["seed"] == calls[2]["seed"] != 1234  # from the request


def test_the_seed_travels_through_litellm_to_a_bridged_provider():
    seen = []
    register_provider("samplesbridged", lambda n, m, s, f: seen.append(s) or HandlerResult("ok", 1, 1),
                      via_litellm=True)
    llm = LLM("samplesbridged/x", "target", GenSettings(max_retries=0), use_cache=False)
    reply = llm.complete([{"role": "user", "content": "hi"}], stage="rollout", step=0,
                         settings=GenSettings(temperature=0.7, seed=99, max_retries=0))
    assert reply.ok, reply.error
    assert (seen[-1].temperature, seen[-1].seed) == (0.7, 99)


def test_a_remote_provider_gets_the_seed_only_when_it_takes_one():
    from skillopt.models import bridge

    litellm = bridge._litellm()
    assert bridge._takes_seed(litellm, "openai/gpt-4o-mini")
    assert not bridge._takes_seed(litellm, "anthropic/claude-3-5-haiku-20241022")  # it would refuse the call
    assert bridge._takes_seed(litellm, "local/qwen2.5-coder-1.5b")  # ours: llama.cpp reads it


def test_sampled_calls_are_never_served_from_the_response_cache():
    class Sink:
        def __init__(self):
            self.cache, self.records = {}, []

        def cache_get(self, key):
            return self.cache.get(key)

        def cache_put(self, key, model, value):
            self.cache[key] = value

        def record_call(self, record):
            self.records.append(record)

    sink = Sink()
    llm = LLM(f"{PREFIX}/c", "target", GenSettings(max_retries=0), sink=sink)
    for _ in range(2):
        llm.complete([{"role": "user", "content": "x"}], stage="rollout", step=0,
                     settings=GenSettings(temperature=0.7, seed=5, max_retries=0))
    assert len(REC.settings) == 2 and sink.cache == {}
    for _ in range(2):
        llm.complete([{"role": "user", "content": "x"}], stage="rollout", step=0)
    assert len(REC.settings) == 3 and len(sink.cache) == 1  # temperature 0 still cached


def test_config_checks_the_sampling_keys():
    assert sim_config("samples_per_item=3").samples_per_item == 3
    with pytest.raises(ConfigError, match="samples_per_item"):
        sim_config("samples_per_item=0")
    with pytest.raises(ConfigError, match="sample_temperature"):
        sim_config("samples_per_item=3", "sample_temperature=0")
    with pytest.raises(ConfigError, match="sample_temperature"):
        sim_config("sample_temperature=2.5")


# ---- the gate: within-noise differences are ties ----------------------------------------

def test_strict_gate_ties_a_margin_within_the_noise_of_the_difference():
    d = gate.strict(0.50, 0.55, 20, noise=0.08)
    assert not d.accept and "within sampling noise" in d.reason and "tie" in d.reason
    assert gate.strict(0.50, 0.55, 20, noise=0.04).accept
    assert not gate.strict(0.55, 0.50, 20, noise=0.08).accept


def test_paired_gate_counts_an_item_only_beyond_its_noise():
    inc, cand = {"a": 1 / 3, "b": 0.0}, {"a": 2 / 3, "b": 1.0}
    var = spread.mean_variance([1.0, 0.0, 0.0])  # 1 of 3 samples right: the mean's variance
    noisy = gate.paired(inc, cand, ["a", "b"], alpha=1.0, incumbent_var={"a": var, "b": 0.0},
                        candidate_var={"a": spread.mean_variance([1.0, 1.0, 0.0]), "b": 0.0})
    assert (noisy.wins, noisy.losses) == (1, 0)  # "a" moved by 1/3, within its noise: a tie
    assert (gate.paired(inc, cand, ["a", "b"], alpha=1.0).wins) == 2  # without samples it is a win
    lone = gate.paired({"a": 1 / 3}, {"a": 2 / 3}, ["a"], incumbent_var={"a": var}, candidate_var={"a": var})
    assert not lone.accept and lone.wins == 0  # a gain made of noise alone is rejected
    assert gate.paired({"a": 1 / 3}, {"a": 2 / 3}, ["a"]).accept  # taken once, the same gain is a win


def test_sequential_gate_stays_exact_with_noise():
    import random

    rng = random.Random(7)
    for _ in range(500):
        ids = [f"i{k}" for k in range(rng.randint(1, 12))]
        thirds = [0.0, 1 / 3, 2 / 3, 1.0]
        inc, cand = {i: rng.choice(thirds) for i in ids}, {i: rng.choice(thirds) for i in ids}
        var = {i: spread.mean_variance([1.0] * round(v * 3) + [0.0] * (3 - round(v * 3))) for i, v in inc.items()}
        cvar = {i: spread.mean_variance([1.0] * round(v * 3) + [0.0] * (3 - round(v * 3))) for i, v in cand.items()}
        min_delta, alpha = rng.choice([0.0, 0.1]), rng.choice([1.0, 0.5, 0.25])
        full = gate.paired(inc, cand, ids, min_delta, alpha, incumbent_var=var, candidate_var=cvar)
        g = gate.PairedGate(inc, gate.order_items(ids, rng.randint(0, 99)), min_delta, alpha, variances=var)
        for i in g.items:
            if g.done:
                break
            g = g.observe(i, cand[i], cvar[i])
        assert g.decision().accept == full.accept


def test_the_validator_ties_a_within_noise_comparison():
    config = sim_config("samples_per_item=3", "gate_mode=strict")
    validator = Validator(config, None, None, None, lambda e: None, "r")
    var = spread.mean_variance([1.0, 0.0, 0.0])
    ids = [f"i{k}" for k in range(6)]
    incumbent = Values({i: 1 / 3 for i in ids}, {i: var for i in ids})
    candidate = Values({i: 2 / 3 if i == "i0" else 1 / 3 for i in ids}, {i: var for i in ids})
    d = validator.compare(incumbent, candidate)
    assert not d.accept and "within sampling noise" in d.reason
    lo, hi = d.candidate_ci
    assert lo <= d.candidate_score <= hi and hi - lo > 0
    assert validator.compare(dict(incumbent), dict(candidate)).accept  # the same means without noise


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


def test_a_reopened_store_serves_sampled_results_from_its_cache(tmp_path, task):
    items = task.split("selection")[:4]
    store = Store(tmp_path / "c.db")
    first = evaluator(task, cache=store, samples=3).run(SKILL, items, step=1, split="selection", purpose="p",
                                                        stage="gate")
    store.close()
    store = Store(tmp_path / "c.db")  # a resumed run opens the store afresh
    again = evaluator(task, cache=store, samples=3).run(SKILL, items, step=1, split="selection", purpose="p",
                                                        stage="gate")
    store.close()
    assert len(REC.settings) == 12 and all(again.cached)
    assert [t.evaluation.samples for t in again.trajectories] == [t.evaluation.samples for t in first.trajectories]


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


def test_training_eval_and_check_build_the_same_sampling_evaluator():
    from skillopt.check import Scorer
    from skillopt.models.llm import build_models
    from skillopt.rollout import Evaluator
    from skillopt.tasks.loader import load_task
    from tests.helpers import sim_config

    config = sim_config("samples_per_item=3", "sample_temperature=0.9")
    task = load_task("sim-rulebook")
    made = Evaluator.of(task, build_models(config, None, "", None), config, cache=None)
    assert (made.samples, made.sample_temperature) == (3, 0.9)
    item = task.split("test")[0]
    once = Evaluator.of(task, build_models(sim_config(), None, "", None), sim_config(), cache=None)
    assert once.samples == 1 and once.key("s", item) != made.key("s", item)
    scorer = Scorer(None, task, config)  # `skillopt check`
    try:
        assert scorer.evaluator.samples == 3
    finally:
        scorer.close()

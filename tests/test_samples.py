"""Noise made visible: samples_per_item > 1 scores each item n times at sample_temperature.

With one sample per item nothing changes (the same calls and cache keys). With n > 1: n target
calls per uncached item, each with its own reproducible seed that the models honour; the mean
is the item's score, an errored sample errors the item, and sampled results are cached apart
from one-sample ones. What the gate makes of the noise is tested in test_sample_gate.py, the
intervals a sampled run stores and shows in test_sampled_run.py.
"""
from __future__ import annotations

import hashlib
import json
import threading

import pytest

from skillopt.config import ConfigError
from skillopt.models import local, sim
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.rollout import Evaluator, item_hash
from skillopt.skill import sha
from skillopt.store.writer import Store
from skillopt.tasks.loader import load_task
from tests.helpers import sim_config

PREFIX = "samplestest"  # a provider of this file only: records each call's settings
SKILL = "# Routing\n\n- Order codes starting with Z: route freight.\n"


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

"""The evaluation cache: what its key is made of, and what it saves.

A per-item result is keyed by (skill sha, task, item, target model, generation settings,
evaluator version). Changing any one part must give a new key (a stale score is never
reused); leaving them all alone must give the same key in a new Evaluator, i.e. in
another run, so an unchanged skill is never re-scored on an item.
"""
from __future__ import annotations

import dataclasses
import threading

import pytest

from tests.helpers import run_sim
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, ProviderError, register_provider
from skillopt.store.reader import Reader
from skillopt.rollout import Batch, Evaluator, item_hash
from skillopt.skill import sha
from skillopt.tasks.loader import load_task
from skillopt.tasks.task import Item

PREFIX = "rollouttest"  # a provider of this file only: counts calls, answers by a rule
SKILL = "# Routing\n\n- Order codes starting with Z: route freight.\n"


class Counter:
    def __init__(self):
        self.calls = 0
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self, name, messages, settings, response_format):
        with self.lock:
            self.calls += 1
        if self.fail:
            raise ProviderError("server", "overloaded")  # retryable: with max_retries=0 the rollout fails
        return HandlerResult("freight", 10, 1)


COUNTER = Counter()
register_provider(PREFIX, COUNTER)


class DictCache:
    """The EvalCache protocol over a dict (the store implements it over SQLite)."""

    def __init__(self):
        self.rows: dict[str, dict] = {}
        self.gets = 0

    def eval_get_many(self, keys):
        self.gets += len(keys)
        return {k: self.rows[k] for k in keys if k in self.rows}

    def eval_put(self, key, t):
        self.rows[key] = {"prompt": t.prompt, "output": t.output, "hard": t.evaluation.hard,
                          "soft": t.evaluation.soft, "feedback": t.evaluation.feedback}


@pytest.fixture(scope="module")
def task():
    return load_task("sim-rulebook")


@pytest.fixture(autouse=True)
def reset_counter():
    COUNTER.calls, COUNTER.fail = 0, False


def target(model: str = f"{PREFIX}/a", **settings) -> LLM:
    return LLM(model, "target", GenSettings(max_retries=0, **settings), use_cache=False)


def evaluator(task, llm: LLM | None = None, cache=None, use_cache: bool = True, events=None) -> Evaluator:
    return Evaluator(task, llm or target(), judge=None, cache=cache, use_cache=use_cache, workers=4,
                     run_id="r", emit=(events.append if events is not None else lambda e: None))


# ---- the key ------------------------------------------------------------------------------

def test_unchanged_parts_give_the_same_key_in_a_new_evaluator(task):
    item = task.split("selection")[0]
    a, b = evaluator(task), evaluator(task)  # two runs of the same task and model
    assert a.key(sha(SKILL), item) == b.key(sha(SKILL), item)
    assert a.key(sha(SKILL), item) == a.key(sha(SKILL), dataclasses.replace(item))  # an equal item object


@pytest.mark.parametrize("part", ["skill", "item_id", "item_input", "item_expected", "model", "temperature",
                                  "max_tokens", "evaluator_version", "task_name"])
def test_each_key_part_changes_the_key(task, part):
    item = task.split("selection")[0]
    base = evaluator(task).key(sha(SKILL), item)
    skill, llm, other_task = SKILL, target(), task
    if part == "skill":
        skill = SKILL + "- Wholesale accounts: route consolidate.\n"
    elif part == "item_id":
        item = dataclasses.replace(item, id=item.id + "x")
    elif part == "item_input":
        item = dataclasses.replace(item, input={**item.input, "note": "gift wrap"})
    elif part == "item_expected":
        item = dataclasses.replace(item, expected="air" if item.expected != "air" else "ground")
    elif part == "model":
        llm = target(f"{PREFIX}/b")
    elif part == "temperature":
        llm = target(temperature=0.7)
    elif part == "max_tokens":
        llm = target(max_tokens=64)
    elif part == "evaluator_version":
        other_task = dataclasses.replace(task, evaluator_version=task.evaluator_version + "-v2")
    elif part == "task_name":
        other_task = dataclasses.replace(task, name="another-task")
    assert evaluator(other_task, llm).key(sha(skill), item) != base


def test_timeouts_and_retries_are_not_part_of_the_key(task):
    """They change how a reply is obtained, not what it is: re-scoring would be waste."""
    item = task.split("selection")[0]
    base = evaluator(task).key(sha(SKILL), item)
    assert evaluator(task, target(timeout=5.0)).key(sha(SKILL), item) == base
    assert evaluator(task, LLM(f"{PREFIX}/a", "target", GenSettings(max_retries=9))).key(sha(SKILL), item) == base


def test_item_hash_covers_id_input_and_expected():
    item = Item(id="i1", input={"a": "x"}, expected="y", split="train")
    assert item_hash(item) == item_hash(Item(id="i1", input={"a": "x"}, expected="y", split="test"))
    assert len({item_hash(item), item_hash(dataclasses.replace(item, id="i2")),
                item_hash(dataclasses.replace(item, input={"a": "z"})),
                item_hash(dataclasses.replace(item, expected="n"))}) == 4


# ---- what the cache saves -----------------------------------------------------------------

def test_a_skill_is_never_scored_twice_on_an_item(task):
    items = task.split("selection")[:10]
    cache, events = DictCache(), []
    ev_ = evaluator(task, cache=cache, events=events)
    first = ev_.run(SKILL, items, step=1, split="selection", purpose="gate_candidate", stage="gate")
    assert COUNTER.calls == 10 and first.cached == (False,) * 10
    again = evaluator(task, cache=cache).run(SKILL, items, step=2, split="selection", purpose="gate_current",
                                            stage="gate")
    assert COUNTER.calls == 10  # a second evaluator (another run) pays nothing
    assert again.cached == (True,) * 10
    assert [t.evaluation for t in again.trajectories] == [t.evaluation for t in first.trajectories]
    assert [t.output for t in again.trajectories] == [t.output for t in first.trajectories]
    one, hit = ev_.one(SKILL, items[3], step=3, stage="gate")
    assert hit and one.item_id == items[3].id and COUNTER.calls == 10
    assert len(events) == 1 and events[0].skill_sha == sha(SKILL) and events[0].cached == first.cached


def test_a_changed_skill_is_scored_again(task):
    items = task.split("selection")[:5]
    cache = DictCache()
    evaluator(task, cache=cache).run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    batch = evaluator(task, cache=cache).run(SKILL + "\n- New rule.\n", items, step=1, split="selection",
                                             purpose="p", stage="gate")
    assert COUNTER.calls == 10 and not any(batch.cached)


def test_failed_rollouts_are_not_cached(task):
    items = task.split("selection")[:3]
    cache = DictCache()
    COUNTER.fail = True
    batch = evaluator(task, cache=cache).run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert batch.n_errors == 3 and batch.mean("hard") == 0.0
    assert cache.rows == {}  # an outage is retried next time, never remembered as a score of 0
    COUNTER.fail = False
    batch = evaluator(task, cache=cache).run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert COUNTER.calls == 6 and batch.n_errors == 0 and len(cache.rows) == 3


def test_known_is_the_cached_results_without_a_call(task):
    items = task.split("selection")[:4]
    cache = DictCache()
    ev_ = evaluator(task, cache=cache)
    first = ev_.run(SKILL, items[:2], step=1, split="train", purpose="train", stage="rollout")
    calls = COUNTER.calls
    known = ev_.known(SKILL, items)
    assert [t.item_id for t in known] == [it.id for it in items[:2]] and COUNTER.calls == calls
    assert [t.evaluation for t in known] == [t.evaluation for t in first.trajectories]
    assert ev_.known(SKILL + "\n- Other.\n", items) == ()
    assert evaluator(task, cache=cache, use_cache=False).known(SKILL, items) == ()


def test_use_cache_false_never_reads_or_writes(task):
    items = task.split("selection")[:4]
    cache = DictCache()
    ev_ = evaluator(task, cache=cache, use_cache=False)
    ev_.run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    ev_.run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    assert COUNTER.calls == 8 and cache.gets == 0 and cache.rows == {}
    assert ev_.cached(SKILL, items[0]) is None


def test_empty_batch_has_zero_means():
    batch = Batch(trajectories=(), cached=())
    assert batch.mean("hard") == 0.0 and batch.n_errors == 0 and batch.by_item == {}


def test_seed_test_is_reused_across_runs_of_the_same_task_and_model(tmp_path):
    db = tmp_path / "runs.db"
    overrides = ("num_epochs=1", "max_steps_per_epoch=1", "use_slow_update=false")
    first = run_sim(db, *overrides)
    second = run_sim(db, *overrides, "seed=7")  # another run: different batches, same task and model
    r = Reader(db)
    for run_id, expect_hits in ((first, False), (second, True)):
        seed_rows = r.q("SELECT cached FROM rollouts WHERE run_id = ? AND purpose = 'test_seed'", (run_id,))
        assert len(seed_rows) == 120
        assert all(row["cached"] for row in seed_rows) is expect_hits
    # No new target call for the seed test: the second run's test-stage calls are exactly
    # the test rollouts of the best/final skills that were not cached.
    new_test_calls = r.one("SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target' "
                           "AND stage = 'test' AND cached = 0", (second,))["n"]
    uncached_other = r.one("SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND split = 'test' "
                           "AND purpose != 'test_seed' AND cached = 0", (second,))["n"]
    assert new_test_calls == uncached_other
    # and the seed score itself is the same
    assert r.tests(first)["seed"]["score"] == r.tests(second)["seed"]["score"]


def test_worker_threads_live_for_the_run_and_close_stops_them(task):
    items = task.split("selection")[:6]
    before = set(threading.enumerate())
    ev_ = evaluator(task)
    ev_.run(SKILL, items, step=1, split="selection", purpose="p", stage="gate")
    workers = {t for t in set(threading.enumerate()) - before if t.name.startswith("rollout")}
    assert 1 <= len(workers) <= 4  # one pool (workers=4), not a new pool per evaluation
    ev_.run(SKILL + "\n- x\n", items, step=2, split="selection", purpose="p", stage="gate")
    workers |= {t for t in set(threading.enumerate()) - before if t.name.startswith("rollout")}
    assert len(workers) <= 4  # the same pool again: never more threads than its size
    ev_.close()
    assert not any(t.is_alive() for t in workers)
    batch = ev_.run(SKILL + "\n- y\n", items, step=3, split="selection", purpose="p", stage="gate")  # reopens
    assert len(batch.trajectories) == 6 and COUNTER.calls == 18
    ev_.close()


def test_a_target_computed_one_call_at_a_time_is_rolled_out_in_the_callers_thread(task):
    from skillopt.config import RunConfig
    from skillopt.models import sim

    threads: list[str] = []

    def serial(name, messages, settings, response_format):
        threads.append(threading.current_thread().name)
        return HandlerResult("freight", 10, 1)

    register_provider("rollouttest1", serial, concurrency=lambda name: 1)
    models = type("M", (), {"target": target("rollouttest1/a"), "judge": None})()
    ev_ = Evaluator.of(task, models, RunConfig(max_concurrency=8), cache=None)
    assert ev_.workers == 1
    ev_.run(SKILL, task.split("selection")[:5], step=1, split="selection", purpose="p", stage="gate")
    assert threads == [threading.current_thread().name] * 5  # no pool: no thread switch per call
    # a provider without a limit of its own (a remote API) gets the configured pool
    models.target = target(f"{PREFIX}/a")
    assert Evaluator.of(task, models, RunConfig(max_concurrency=8), cache=None).workers == 8
    # the simulated models: one at a time when they answer at once, a pool when they wait like an API
    assert (sim.concurrency("target"), sim.concurrency("target?latency=0.2"), sim.concurrency("nope")) == \
        (1, None, None)

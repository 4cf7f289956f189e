"""Forward pass: run the target model on items with a skill, scored and cached.

Per-item results are cached by (skill sha, task, item, target model, generation
settings, evaluator version, and the judge model when the evaluator uses one), across
steps and across runs, so no skill is ever scored twice on the same item: the gate re-uses
the incumbent's results, a resumed run re-uses everything it already paid for, and the
seed skill's test score is shared by every run of the same task and model.

A model failure is never a score: an item whose target or judge call failed is errored,
left out of the batch's means (and counted), never cached, and tried again next time.

Sampling (`samples`, samples_per_item > 1): each item is rolled out n times, each sample a
target call of its own at `sample_temperature` with a seed from (item, sample index): a
sample is reproducible, samples differ, and two skills meet the same seeds. The item's
score is the samples' mean, the samples are kept on its Evaluation, and an errored sample
errors the item. n and the temperature join the cache key, so a 1-sample score and a
3-sample mean never stand in for each other; with n = 1 the key and the calls are unchanged.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from . import events as ev
from .models.llm import LLM
from .models.providers import GenSettings, prompt_fault
from .skill import sha
from .tasks.task import Evaluation, Item, Trajectory


class EvalCache(Protocol):
    def eval_get_many(self, keys: Sequence[str]) -> Mapping[str, Any]:
        """{key: row} of the keys found (one lookup for a whole batch of items)."""

    def eval_put(self, key: str, t: Trajectory) -> None: ...


@dataclass(frozen=True)
class Batch:
    """The results of one evaluation of a skill on some items, in item order."""
    trajectories: tuple[Trajectory, ...]
    cached: tuple[bool, ...]

    @property
    def by_item(self) -> dict[str, Trajectory]:
        return {t.item_id: t for t in self.trajectories}

    @property
    def n_errors(self) -> int:
        return sum(bool(t.error) for t in self.trajectories)

    @property
    def scored(self) -> tuple[Trajectory, ...]:
        """The trajectories with a real score (errored items are left out of every mean)."""
        return tuple(t for t in self.trajectories if not t.error)

    @property
    def dead(self) -> bool:
        """Every item failed, and not only because its prompt was longer than the target's context
        (a skill too long for the target is that skill's problem): the backend is down."""
        return (bool(self.trajectories) and self.n_errors == len(self.trajectories)
                and not all(prompt_fault(t.error) for t in self.trajectories))

    def hopeless(self, max_error_rate: float, target: str) -> str:
        """Why no run can score this batch ("" when it can): more of its items than max_error_rate
        allows failed because the prompt was longer than the target's context (unlike an outage,
        resuming would fail on the same prompts), or the task's scoring code raised on every
        output (every score would be a 0 that says nothing about the skill)."""
        n = len(self.trajectories)
        too_long = [t for t in self.trajectories if prompt_fault(t.error)]
        if len(too_long) > max_error_rate * n:
            return (f"{len(too_long)} of {n} prompts were longer than target {target}'s context window "
                    f"({too_long[0].error}); shorten the seed skill or the task's inputs, or use a target with "
                    f"a larger window (resuming will not help)")
        scored = self.scored
        if scored and all(t.evaluation.raised for t in scored):
            return (f"the task's scoring code raised on all {len(scored)} replies, for example "
                    f"{scored[0].evaluation.feedback}; fix the task's evaluator (every score would be 0)")
        return ""

    def complete(self, max_error_rate: float) -> bool:
        """Whether the errored items are few enough for the means to stand for the batch."""
        return self.n_errors <= max_error_rate * len(self.trajectories)

    def mean(self, attr: str) -> float:
        scored = self.scored
        if not scored:
            return 0.0
        return sum(getattr(t.evaluation, attr) for t in scored) / len(scored)


def item_hash(item: Item) -> str:
    data = json.dumps([item.id, dict(item.input), item.expected], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


class Evaluator:
    """Evaluates skills on items for one run; emits RolloutsDone for the store."""

    def __init__(self, task, target: LLM, *, judge: LLM | None, cache: EvalCache | None, use_cache: bool,
                 workers: int, run_id: str, emit: Callable[[ev.Event], None], samples: int = 1,
                 sample_temperature: float = 0.7):
        self.task = task
        self.samples = max(1, int(samples))
        self.sample_temperature = float(sample_temperature)
        self.target = target
        self.judge = judge
        self.cache = cache if use_cache else None
        self.workers = max(1, workers)
        self.run_id = run_id
        self.emit = emit
        settings = target.settings
        graded_by = judge.model if judge is not None and getattr(task, "uses_judge", False) else ""
        sampling = ["samples", self.samples, self.sample_temperature] if self.samples > 1 else []
        self._model_key = json.dumps([task.name, task.evaluator_version, target.model,
                                      settings.temperature, settings.max_tokens]
                                     + ([graded_by] if graded_by else []) + sampling)
        # (skill sha, item id) -> the samples of every sampled result this run has seen: the
        # gate needs the incumbent's spread, also when the cache is off.
        self._samples: dict[tuple[str, str], tuple[tuple[float, float], ...]] = {}
        # One pool for the whole run: starting 8 threads per evaluation cost more than the
        # simulated rollouts themselves (a new thread waits for the GIL held by busy workers).
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # item_hash per item object (the object is kept, so its id is never reused): every
        # cache lookup needs it, and a run looks the same items up again at every step.
        self._item_hashes: dict[int, tuple[Item, str]] = {}

    @classmethod
    def of(cls, task, models, config, *, cache: EvalCache | None, run_id: str = "",
           emit: Callable[[ev.Event], None] = lambda event: None) -> "Evaluator":
        """The evaluator a run config asks for (its cache switch, concurrency, at most what its
        target model takes, and sampling):
        training, `eval` and `check` score a skill the same way."""
        workers = min(config.max_concurrency, models.target.useful_concurrency() or config.max_concurrency)
        return cls(task, models.target, judge=models.judge, cache=cache, use_cache=config.use_cache,
                   workers=workers, run_id=run_id, emit=emit, samples=config.samples_per_item,
                   sample_temperature=config.sample_temperature)

    def key(self, skill_sha: str, item: Item) -> str:
        return hashlib.sha256(f"{skill_sha}|{self._item_hash(item)}|{self._model_key}".encode()).hexdigest()

    def _item_hash(self, item: Item) -> str:
        memo = self._item_hashes.get(id(item))
        if memo is not None and memo[0] is item:
            return memo[1]
        digest = item_hash(item)
        self._item_hashes[id(item)] = (item, digest)
        return digest

    def close(self) -> None:
        """Stop the worker threads (a later run() starts new ones)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _map(self, fn: Callable, xs: Sequence) -> Iterable:
        """`fn` over `xs` on the pool; in this thread when one call at a time is all the target
        takes (its provider says so), where a pool only adds thread switches."""
        return map(fn, xs) if self.workers == 1 else self._executor().map(fn, xs)

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rollout")
            return self._pool

    def cached(self, skill: str, item: Item, skill_sha: str | None = None) -> Trajectory | None:
        return self.cached_many(skill_sha or sha(skill), [item])[0]

    def cached_many(self, skill_sha: str, items: Sequence[Item]) -> list[Trajectory | None]:
        """Each item's cached result under the skill (None: not cached), in one cache lookup."""
        if self.cache is None:
            return [None] * len(items)
        keys = [self.key(skill_sha, it) for it in items]
        rows = self.cache.eval_get_many(keys)
        return [self._hit(it, rows.get(k)) for it, k in zip(items, keys)]

    def known(self, skill: str, items: Sequence[Item]) -> tuple[Trajectory, ...]:
        """The skill's cached results on those of the items it has one for: no call (the cache off, none)."""
        return tuple(t for t in self.cached_many(sha(skill), items) if t is not None)

    @staticmethod
    def _hit(item: Item, row) -> Trajectory | None:
        if row is None:
            return None
        # A row written before sampling existed (or by a cache without the column) has no samples.
        stored = row["samples_json"] if "samples_json" in row.keys() else None
        samples = tuple((float(h), float(s)) for h, s in json.loads(stored)) if stored else ()
        return Trajectory(item_id=item.id, prompt=row["prompt"], output=row["output"],
                          expected=_expected_text(item.expected),
                          evaluation=Evaluation(hard=row["hard"], soft=row["soft"], feedback=row["feedback"],
                                                samples=samples))

    def samples_of(self, skill_sha: str, item: Item) -> tuple[tuple[float, float], ...]:
        """The (hard, soft) samples of a skill's result on an item: seen this run, or cached; ()
        when unknown (one sample per item, or the cache is off and this run never scored it)."""
        if self.samples == 1:
            return ()
        known = self._samples.get((skill_sha, item.id))
        if known is None:
            hit = self.cached("", item, skill_sha)
            known = hit.evaluation.samples if hit is not None else ()
        return known

    def _remember(self, skill_sha: str, trajs: Sequence[Trajectory]) -> None:
        for t in trajs:
            if t.evaluation.samples and not t.error:
                self._samples[(skill_sha, t.item_id)] = t.evaluation.samples

    def run(self, skill: str, items: Sequence[Item], *, step: int, split: str, purpose: str,
            stage: str) -> Batch:
        skill_sha = sha(skill)
        results = self.cached_many(skill_sha, items)
        hits = tuple(r is not None for r in results)
        missing = [i for i, r in enumerate(results) if r is None]
        if missing and self.samples > 1:
            for i, traj in zip(missing, self._sampled(skill, skill_sha, [items[i] for i in missing], step, stage)):
                results[i] = traj
        elif missing:
            def one(i: int) -> Trajectory:
                return self._rollout(skill, skill_sha, items[i], step=step, stage=stage)

            for i, traj in zip(missing, self._map(one, missing)):
                results[i] = traj
        batch = Batch(trajectories=tuple(results), cached=hits)  # type: ignore[arg-type]
        self._remember(skill_sha, batch.trajectories)
        if items:
            self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split=split, purpose=purpose,
                                      skill_sha=skill_sha, trajectories=batch.trajectories, cached=hits))
        return batch

    def one(self, skill: str, item: Item, *, step: int, stage: str) -> tuple[Trajectory, bool]:
        """Evaluate a single item (the paired gate walks items one by one)."""
        skill_sha = sha(skill)
        hit = self.cached(skill, item, skill_sha)
        if hit is not None:
            traj = hit
        elif self.samples > 1:
            traj = self._sampled(skill, skill_sha, [item], step, stage)[0]
        else:
            traj = self._rollout(skill, skill_sha, item, step=step, stage=stage)
        self._remember(skill_sha, [traj])
        return traj, hit is not None

    def _rollout(self, skill: str, skill_sha: str, item: Item, *, step: int, stage: str) -> Trajectory:
        traj = self._score(skill, item, step=step, stage=stage)
        if self.cache is not None and not traj.error:
            self.cache.eval_put(self.key(skill_sha, item), traj)
        return traj

    def _score(self, skill: str, item: Item, *, step: int, stage: str, sample: int | None = None) -> Trajectory:
        """One rollout of `item`: with the role's settings, or as sample number `sample`."""
        settings = None if sample is None else self.sample_settings(item, sample)

        def complete(messages: list[dict]):
            if settings is None:  # one sample per item: exactly the call it always was
                return self.target.complete(messages, stage=stage, step=step)
            return self.target.complete(messages, stage=stage, step=step, settings=settings)

        def judge(messages: list[dict]):
            return self.judge.complete(messages, stage="judge", step=step)

        return self.task.rollout(item, skill, complete, judge=judge if self.judge is not None else None)

    def sample_settings(self, item: Item, sample: int) -> GenSettings:
        """Sample `sample`'s settings: the sampling temperature and a seed from (item, index)."""
        digest = hashlib.sha256(f"{self._item_hash(item)}|sample {sample}".encode()).digest()
        return dataclasses.replace(self.target.settings, temperature=self.sample_temperature,
                                   seed=int.from_bytes(digest[:4], "big"))

    def _sampled(self, skill: str, skill_sha: str, items: Sequence[Item], step: int, stage: str) -> list[Trajectory]:
        """Every sample of every item, spread over the pool; each item's samples combined and cached."""
        n = self.samples
        pairs = [(item, k) for item in items for k in range(n)]

        def one(pair: tuple[Item, int]) -> Trajectory:
            return self._score(skill, pair[0], step=step, stage=stage, sample=pair[1])

        flat = list(self._map(one, pairs))
        out = []
        for j, item in enumerate(items):
            traj = combine(flat[j * n:(j + 1) * n])
            if self.cache is not None and not traj.error:
                self.cache.eval_put(self.key(skill_sha, item), traj)
            out.append(traj)
        return out


def combine(samples: Sequence[Trajectory]) -> Trajectory:
    """One item's samples as its trajectory: hard and soft are the samples' means, each
    sample's (hard, soft) is kept. An errored sample errors the item (a model failure is
    never a score). The reply and feedback shown are the lowest-scoring sample's: a wrong
    reply is what the optimizer learns from, and hard < 1 makes the item a failure case."""
    failed = next((t for t in samples if t.error), None)
    if failed is not None:
        return failed
    pairs = tuple((t.evaluation.hard, t.evaluation.soft) for t in samples)
    n = len(pairs)
    hard, soft = math.fsum(h for h, _ in pairs) / n, math.fsum(s for _, s in pairs) / n
    worst = min(samples, key=lambda t: (t.evaluation.hard, t.evaluation.soft))  # the first of the lowest
    feedback = f"{worst.evaluation.feedback} [{n} samples, mean hard {hard:.2f}; this reply is the lowest-scoring]"
    return dataclasses.replace(worst, evaluation=Evaluation(hard, soft, feedback, samples=pairs))


def _expected_text(expected) -> str:
    return expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False, sort_keys=True)

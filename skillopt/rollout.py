"""Forward pass: run the target model on items with a skill, scored and cached.

Per-item results are cached by (skill sha, task, item, target model, generation
settings, evaluator version, and the judge model when the evaluator uses one), across
steps and across runs, so no skill is ever scored twice on the same item: the gate re-uses
the incumbent's results, a resumed run re-uses everything it already paid for, and the
seed skill's test score is shared by every run of the same task and model.

A model failure is never a score: an item whose target or judge call failed is errored,
left out of the batch's means (and counted), never cached, and tried again next time.
"""
from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from . import events as ev
from .models.llm import LLM
from .skill import sha
from .tasks.task import Evaluation, Item, Trajectory


class EvalCache(Protocol):
    def eval_get(self, key: str): ...

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
                 workers: int, run_id: str, emit: Callable[[ev.Event], None]):
        self.task = task
        self.target = target
        self.judge = judge
        self.cache = cache if use_cache else None
        self.workers = max(1, workers)
        self.run_id = run_id
        self.emit = emit
        settings = target.settings
        graded_by = judge.model if judge is not None and getattr(task, "uses_judge", False) else ""
        self._model_key = json.dumps([task.name, task.evaluator_version, target.model,
                                      settings.temperature, settings.max_tokens]
                                     + ([graded_by] if graded_by else []))
        # One pool for the whole run: starting 8 threads per evaluation cost more than the
        # simulated rollouts themselves (a new thread waits for the GIL held by busy workers).
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # item_hash per item object (the object is kept, so its id is never reused): every
        # cache lookup needs it, and a run looks the same items up again at every step.
        self._item_hashes: dict[int, tuple[Item, str]] = {}

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

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rollout")
            return self._pool

    def cached(self, skill: str, item: Item, skill_sha: str | None = None) -> Trajectory | None:
        if self.cache is None:
            return None
        row = self.cache.eval_get(self.key(skill_sha or sha(skill), item))
        if row is None:
            return None
        return Trajectory(item_id=item.id, prompt=row["prompt"], output=row["output"],
                          expected=_expected_text(item.expected),
                          evaluation=Evaluation(hard=row["hard"], soft=row["soft"], feedback=row["feedback"]))

    def run(self, skill: str, items: Sequence[Item], *, step: int, split: str, purpose: str,
            stage: str) -> Batch:
        skill_sha = sha(skill)
        results: list[Trajectory | None] = [self.cached(skill, it, skill_sha) for it in items]
        hits = tuple(r is not None for r in results)
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            def one(i: int) -> Trajectory:
                return self._rollout(skill, skill_sha, items[i], step=step, stage=stage)

            for i, traj in zip(missing, self._executor().map(one, missing)):
                results[i] = traj
        batch = Batch(trajectories=tuple(results), cached=hits)  # type: ignore[arg-type]
        if items:
            self.emit(ev.RolloutsDone(run_id=self.run_id, step=step, split=split, purpose=purpose,
                                      skill_sha=skill_sha, trajectories=batch.trajectories, cached=hits))
        return batch

    def one(self, skill: str, item: Item, *, step: int, stage: str) -> tuple[Trajectory, bool]:
        """Evaluate a single item (the paired gate walks items one by one)."""
        hit = self.cached(skill, item)
        if hit is not None:
            return hit, True
        return self._rollout(skill, sha(skill), item, step=step, stage=stage), False

    def _rollout(self, skill: str, skill_sha: str, item: Item, *, step: int, stage: str) -> Trajectory:
        def complete(messages: list[dict]):
            return self.target.complete(messages, stage=stage, step=step)

        def judge(messages: list[dict]):
            return self.judge.complete(messages, stage="judge", step=step)

        traj = self.task.rollout(item, skill, complete, judge=judge if self.judge is not None else None)
        if self.cache is not None and not traj.error:
            self.cache.eval_put(self.key(skill_sha, item), traj)
        return traj


def _expected_text(expected) -> str:
    return expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False, sort_keys=True)

"""Speculative rollouts: the next batch, under the incumbent, while the gate runs.

The rollouts only warm the evaluation cache. They are kept when the gate rejects (the next
step rolls out the same skill on those items) and wasted when it accepts; either way the
decisions are those of sequential execution.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Sequence

from .rollout import Evaluator
from .tasks.task import Item


@contextmanager
def warming(evaluator: Evaluator, skill: str, items: Sequence[Item] | None, step: int,
            should_stop: Callable[[], bool]):
    """Roll `items` out under `skill` in the background for the duration of the block
    (None: nothing to warm); a budget or model error of the speculation surfaces at its end."""
    if items is None:
        yield
        return

    def warm() -> None:
        for item in items:
            if should_stop():
                return
            evaluator.one(skill, item, step=step, stage="rollout")

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(warm)
        yield
    future.result()

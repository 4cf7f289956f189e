"""The data plan of a run: which items form each split, each step's batch, each sample.

A pure function of the task's items and the config, so a resumed run (or a second run
with the same seed) sees exactly the same batches in the same order.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from .config import RunConfig
from .errors import TaskError
from .tasks.task import Item


def _cap(items: Sequence[Item], size: int, seed: int) -> tuple[Item, ...]:
    if size <= 0 or size >= len(items):
        return tuple(items)
    picked = set(it.id for it in random.Random(seed).sample(list(items), size))
    return tuple(it for it in items if it.id in picked)  # keep file order: stable plots


@dataclass(frozen=True)
class Plan:
    train: tuple[Item, ...]
    selection: tuple[Item, ...]
    test: tuple[Item, ...]
    batch_size: int
    steps_per_epoch: int
    num_epochs: int
    seed: int
    slow_samples: int

    @classmethod
    def make(cls, task, config: RunConfig) -> "Plan":
        train = tuple(task.split("train"))
        selection = _cap(task.split("selection"), config.selection_size, config.seed + 1)
        test = _cap(task.split("test"), config.test_size, config.seed + 2)
        for name, items in (("train", train), ("selection", selection), ("test", test)):
            if not items:
                raise TaskError(f"{task.name}: the {name} split is empty")
        steps = math.ceil(len(train) / config.batch_size)
        if config.max_steps_per_epoch:
            steps = min(steps, config.max_steps_per_epoch)
        return cls(train=train, selection=selection, test=test, batch_size=config.batch_size,
                   steps_per_epoch=steps, num_epochs=config.num_epochs, seed=config.seed,
                   slow_samples=config.slow_update_samples)

    @property
    def total_steps(self) -> int:
        return self.steps_per_epoch * self.num_epochs

    def epoch_of(self, step: int) -> int:
        return (step - 1) // self.steps_per_epoch + 1

    def step_seed(self, step: int) -> int:
        return self.seed * 100_003 + step

    def _epoch_order(self, epoch: int) -> list[Item]:
        order = list(self.train)
        random.Random(self.seed * 7_919 + epoch).shuffle(order)
        return order

    def batch(self, step: int) -> tuple[Item, ...]:
        """An epoch is one pass over a seeded permutation of train."""
        order = self._epoch_order(self.epoch_of(step))
        i = (step - 1) % self.steps_per_epoch
        return tuple(order[i * self.batch_size:(i + 1) * self.batch_size])

    def slow_sample(self, epoch: int) -> tuple[Item, ...]:
        n = min(self.slow_samples, len(self.train))
        return tuple(random.Random(self.seed * 31 + epoch).sample(list(self.train), n))

    def all_items(self) -> tuple[Item, ...]:
        return self.train + self.selection + self.test

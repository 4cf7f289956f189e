"""The data plan of a run: which items form each split, each step's batch, each sample,
and how many model calls the run can make.

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
from .vocabulary import TEST_SKILLS


@dataclass(frozen=True)
class CallForecast:
    """The most model calls a run makes, per role and call stage (the llm_calls.stage words).

    `target`: one call per rollout. `optimizer`: one per question; a reply that is not
    usable JSON is asked again once, so `optimizer_calls` counts two per question. The
    cache, a step with no applicable edit (nothing to gate), the paired gate's early stop,
    a slow update that changes nothing and a budget or stop only lower them. Not included:
    the second tries of items a model error left unscored (the strict gate scores an errored
    incumbent item again; a resumed incomplete test evaluates its errored items again),
    a plug-in task that calls the target more than once per rollout, and the judge calls of
    an llm_judge evaluator.
    """
    target: dict[str, int]
    optimizer: dict[str, int]

    @property
    def target_calls(self) -> int:
        return sum(self.target.values())

    @property
    def optimizer_questions(self) -> int:
        return sum(self.optimizer.values())

    @property
    def optimizer_calls(self) -> int:
        return 2 * self.optimizer_questions  # each question: its call and at most one repair re-ask


def max_reflections(cases: int, minibatch_size: int, failure_only: bool = False) -> int:
    """The most reflection calls (minibatches) a step with `cases` usable rollouts makes.

    Failures and successes go into separate minibatches of at most `minibatch_size`, and the
    cases of one expected answer stay together: full chunks, then the groups' remainders
    packed first-fit. Any two minibatches of the remainders hold more than minibatch_size
    cases together (the later one's first group did not fit into the earlier one), so a kind
    with n cases needs at most 2*ceil(n/m) - 1 minibatches; both kinds together at most
    2*ceil(cases/m); and never more than one per case.
    """
    if cases <= 0:
        return 0
    return min(cases, 2 * math.ceil(cases / minibatch_size) - (1 if failure_only else 0))


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

    def rolled(self, after: int, step: int) -> tuple[Item, ...]:
        """The train items of the batches of steps after..step, each once, in their order."""
        return tuple({it.id: it for s in range(after + 1, step + 1) for it in self.batch(s)}.values())

    def slow_sample(self, epoch: int) -> tuple[Item, ...]:
        n = min(self.slow_samples, len(self.train))
        return tuple(random.Random(self.seed * 31 + epoch).sample(list(self.train), n))

    def all_items(self) -> tuple[Item, ...]:
        return self.train + self.selection + self.test

    def batch_sizes(self) -> list[int]:
        """The train batch size of each step of an epoch (the last one may be short)."""
        n = len(self.train)
        return [min(self.batch_size, n - i * self.batch_size) for i in range(self.steps_per_epoch)]

    def call_forecast(self, config: RunConfig) -> CallForecast:
        """The model calls of the whole run, stage by stage, as the trainer makes them.

        Seed scoring evaluates the seed on the selection split, and no skill at all (the seed
        must beat it, or training starts from no skill). Each step rolls out its
        batch, asks the optimizer once per minibatch (plus one merge question with
        merge_mode=llm and one edit-budget question with the autonomous schedule) and gates
        its candidate: the strict gate evaluates the candidate on the selection split (the
        incumbent's score is kept), the paired gate the incumbent and then the candidate. With
        the cache and speculative rollouts, while the gate runs the epoch's next batch is
        rolled out with the incumbent, which an accepted candidate makes a second rollout of
        that batch. Each epoch from the second ends with a slow update (both epochs' skills on
        the sample, one optimizer call, the gate on the new guidance, the paired one also on the train
        items outside the sample whose incumbent values the cache holds) and, independently, the
        meta skill (one optimizer call). Last, the seed, best and final skills are evaluated on the test split.
        The minibatch check scores each candidate on its step's batch first; its leave-one-out
        tries (only when a multi-edit candidate broke an item) are not forecast. A model-free
        trial (worked examples, clue rules, a seed ablation) may be gated after any step (a paired
        gate: the candidate, also on fair train items, and the incumbent too when nothing is cached):
        each step is counted as if its candidate were rejected.
        """
        c, n_sel, steps = config, len(self.selection), self.total_steps
        sizes = self.batch_sizes()
        per_gate = n_sel * (2 if c.use_gate and c.gate_mode == "paired" else 1)
        speculated = sum(sizes[1:]) if c.speculative_rollouts and c.use_cache else 0
        slow_epochs = self.num_epochs - 1 if c.use_slow_update else 0
        paired = c.use_gate and c.gate_mode == "paired"
        # A slow update forced in without its gate leaves the incumbent's per-item values
        # unknown, so the next strict gate scores the incumbent again.
        rescore = per_gate if c.slow_update_gate else (0 if paired else n_sel)
        sample = min(c.slow_update_samples, len(self.train))
        # The gate on the guidance also scores the candidate on the train items outside the
        # sample whose incumbent values the cache holds (at most all of them).
        fair = len(self.train) - sample if paired and c.slow_update_gate and c.slow_train_items and c.use_cache else 0
        slow_target = 2 * sample + rescore + fair
        reflections = sum(max_reflections(n, c.minibatch_size, c.failure_only) for n in sizes)
        seed_scoring = n_sel * (2 if c.gate_seed_against_no_skill else 1)  # the seed, and no skill to beat
        checked = self.num_epochs * sum(sizes) if c.minibatch_check else 0
        trial = examples_gate_calls(c, n_sel, len(self.train))
        target = {"gate": seed_scoring + steps * per_gate + checked, "examples": steps * trial,
                  "rollout": self.num_epochs * (sum(sizes) + speculated), "slow_update": slow_epochs * slow_target,
                  "test": len(TEST_SKILLS) * len(self.test)}
        optimizer = {"reflect": self.num_epochs * reflections, "merge": steps if c.merge_mode == "llm" else 0,
                     "lr": steps if c.lr_scheduler == "autonomous" else 0, "slow_update": slow_epochs,
                     "meta": self.num_epochs - 1 if c.use_meta_skill else 0}
        return CallForecast(target, optimizer)


def examples_gate_calls(c: RunConfig, n_sel: int, n_train: int = 0) -> int:
    """The most target calls one model-free trial (worked examples, clue rules, the reply
    template, a seed ablation: one per step at most) makes; 0 when trials never run. A
    worked-examples trial judged alone and a seed ablation also score the candidate on the
    fair train items, at most all `n_train` of them."""
    if not ((c.worked_examples or c.clue_rules or c.seed_ablations) and c.use_gate and not c.approval_mode):
        return 0
    fair = n_train if (c.worked_examples and c.trial_train_items) or c.seed_ablations else 0
    return n_sel * (1 if c.use_cache else 2) + fair

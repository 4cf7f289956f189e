"""The data plan: deterministic batches, one pass over train per epoch, split caps."""
from __future__ import annotations

import pytest

from conftest import sim_config
from skillopt.errors import TaskError
from skillopt.plan import Plan
from skillopt.tasks.task import Item


class FakeTask:
    """Just what Plan.make reads: a name and three splits."""

    def __init__(self, n_train=10, n_selection=6, n_test=8):
        self.name = "fake"
        self.splits = {name: tuple(Item(id=f"{name}-{i:03d}", input={"q": str(i)}, expected="a", split=name)
                                   for i in range(n))
                       for name, n in (("train", n_train), ("selection", n_selection), ("test", n_test))}

    def split(self, name):
        return self.splits[name]


def plan(task=None, *overrides: str) -> Plan:
    return Plan.make(task or FakeTask(), sim_config(*overrides))


def ids(items) -> list[str]:
    return [it.id for it in items]


@pytest.mark.parametrize("n_train,batch,steps", [(10, 4, 3), (10, 5, 2), (10, 10, 1), (10, 40, 1), (120, 40, 3)])
def test_steps_per_epoch_is_ceil_of_train_over_batch(n_train, batch, steps):
    p = plan(FakeTask(n_train=n_train), f"batch_size={batch}", "num_epochs=3")
    assert p.steps_per_epoch == steps and p.total_steps == 3 * steps


def test_an_epoch_is_one_pass_over_train_without_repeats():
    p = plan(None, "batch_size=4", "num_epochs=3")  # 10 items: batches of 4, 4, 2
    train = set(ids(p.train))
    for epoch in range(1, 4):
        steps = range((epoch - 1) * p.steps_per_epoch + 1, epoch * p.steps_per_epoch + 1)
        batches = [ids(p.batch(s)) for s in steps]
        assert [len(b) for b in batches] == [4, 4, 2]
        flat = [i for b in batches for i in b]
        assert len(flat) == len(set(flat)) == len(train) and set(flat) == train
        assert all(p.epoch_of(s) == epoch for s in steps)


def test_epochs_reshuffle_and_seeds_differ():
    p = plan(None, "batch_size=5", "num_epochs=2")
    assert ids(p.batch(1)) + ids(p.batch(2)) != ids(p.batch(3)) + ids(p.batch(4))  # epoch 2 is a new order
    other = plan(None, "batch_size=5", "num_epochs=2", "seed=43")
    assert ids(p.batch(1)) != ids(other.batch(1))


def test_batches_are_deterministic_across_plans():
    """A resumed run rebuilds the plan: it must see the very same batches and samples."""
    a, b = plan(None, "batch_size=3"), plan(None, "batch_size=3")
    assert [ids(a.batch(s)) for s in range(1, a.total_steps + 1)] == \
           [ids(b.batch(s)) for s in range(1, b.total_steps + 1)]
    assert ids(a.slow_sample(2)) == ids(b.slow_sample(2))
    assert a.step_seed(5) == b.step_seed(5) and a.step_seed(5) != a.step_seed(6)


def test_max_steps_per_epoch_caps_and_batches_stay_disjoint():
    p = plan(None, "batch_size=3", "max_steps_per_epoch=2", "num_epochs=2")
    assert p.steps_per_epoch == 2 and p.total_steps == 4
    first = ids(p.batch(1)) + ids(p.batch(2))
    assert len(first) == len(set(first)) == 6
    assert p.epoch_of(3) == 2


def test_selection_and_test_caps():
    task = FakeTask(n_selection=20, n_test=30)
    full = plan(task)
    assert len(full.selection) == 20 and len(full.test) == 30  # 0 = whole split
    capped = plan(task, "selection_size=7", "test_size=11")
    assert len(capped.selection) == 7 and len(capped.test) == 11
    assert set(ids(capped.selection)) <= set(ids(task.split("selection")))
    assert ids(capped.selection) == sorted(ids(capped.selection))  # file order kept: stable plots
    assert ids(capped.selection) == ids(plan(task, "selection_size=7").selection)  # deterministic
    assert ids(capped.selection) != ids(plan(task, "selection_size=7", "seed=1").selection)
    assert len(plan(task, "selection_size=99").selection) == 20  # a cap above the size is the whole split


def test_slow_sample_is_distinct_train_items():
    p = plan(FakeTask(n_train=30), "slow_update_samples=12")
    sample = ids(p.slow_sample(2))
    assert len(sample) == len(set(sample)) == 12 and set(sample) <= set(ids(p.train))
    assert sample != ids(p.slow_sample(3))
    assert len(plan(FakeTask(n_train=5), "slow_update_samples=12").slow_sample(2)) == 5


def test_all_items_and_empty_split():
    p = plan()
    assert len(p.all_items()) == 10 + 6 + 8
    with pytest.raises(TaskError, match="fake: the selection split is empty"):
        plan(FakeTask(n_selection=0))

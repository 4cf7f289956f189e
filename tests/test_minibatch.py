"""Minibatches: deterministic per seed, failures first, each expected answer's cases together."""
from __future__ import annotations

from collections import Counter

import pytest

from skillopt.minibatch import make_minibatches
from skillopt.tasks.task import Evaluation, Trajectory


def traj(item_id: str, expected: str, hard: float) -> Trajectory:
    return Trajectory(item_id=item_id, prompt=f"Order {item_id}: which route?", output="standard",
                      expected=expected, evaluation=Evaluation(hard, hard, ""))


def mixed(n: int = 20) -> list[Trajectory]:
    labels = ["air", "freight", "postal"]
    return [traj(f"i{k:02d}", labels[k % 3], 1.0 if k % 4 == 0 else 0.0) for k in range(n)]


def test_minibatches_are_deterministic_per_seed_and_differ_across_seeds():
    a = make_minibatches(mixed(), 4, seed=7)
    assert a == make_minibatches(mixed(), 4, seed=7)
    other = make_minibatches(mixed(), 4, seed=8)
    assert [[t.item_id for t in b] for _, b in a] != [[t.item_id for t in b] for _, b in other]


def test_minibatches_put_failures_first_and_chunk_every_trajectory_once():
    batches = make_minibatches(mixed(), 4, seed=1)
    kinds = [k for k, _ in batches]
    assert kinds == sorted(kinds)  # "failure" < "success": failures come first
    assert all(len(b) <= 4 for _, b in batches)
    ids = [t.item_id for _, b in batches for t in b]
    assert sorted(ids) == sorted(t.item_id for t in mixed())
    for kind, batch in batches:
        assert all((t.evaluation.hard < 1) == (kind == "failure") for t in batch)


@pytest.mark.parametrize("seed", range(5))
def test_cases_of_one_expected_answer_stay_together(seed):
    trajs = [traj(f"i{k:02d}", label, 0.0) for k, label in enumerate(["air"] * 6 + ["freight"] * 3 + ["postal"] * 2
                                                                       + ["ground"] * 1)]
    batches = [b for _, b in make_minibatches(trajs, 4, seed=seed)]
    for batch in batches:  # one run per label inside a minibatch
        labels = [t.expected for t in batch]
        assert len([x for i, x in enumerate(labels) if i == 0 or labels[i - 1] != x]) == len(set(labels))
    spread = Counter(t.expected for b in batches for t in set(b))
    holding = {label: sum(any(t.expected == label for t in b) for b in batches) for label in spread}
    assert holding == {"air": 2, "freight": 1, "postal": 1, "ground": 1}  # split only when larger than a batch
    assert len(batches) == 3


def test_trajectories_whose_model_call_failed_are_left_out():
    failed = Trajectory("x", "Order x", "", "air", Evaluation(0.0, 0.0, "model error: 503"), error="503")
    ids = [t.item_id for _, b in make_minibatches([*mixed(4), failed], 4, seed=1) for t in b]
    assert "x" not in ids and len(ids) == 4

"""Minibatches of a step's trajectories for the reflection calls.  (pure: no I/O)

Failures come first, then successes, each shuffled with the run's seed; cases with the same
expected answer stay together, because a small optimizer finds a pattern only when it sees
it several times.
"""
from __future__ import annotations

import random
from typing import Sequence

from .tasks.task import Trajectory


def _pack(trajs: list[Trajectory], size: int) -> list[tuple[Trajectory, ...]]:
    """Chunks of at most `size` that keep each expected answer's cases together.

    A small optimizer finds a pattern only when it sees it several times, so a group of
    one expected answer is split only when it is larger than a minibatch; smaller groups
    share minibatches first-fit, largest first (ties in the shuffled order).
    """
    groups: dict[str, list[Trajectory]] = {}
    for t in trajs:
        groups.setdefault(t.expected.strip().casefold(), []).append(t)
    full: list[list[Trajectory]] = []
    rests: list[list[Trajectory]] = []
    for group in groups.values():
        whole = len(group) - len(group) % size
        full.extend(group[i:i + size] for i in range(0, whole, size))
        if group[whole:]:
            rests.append(group[whole:])
    open_bins: list[list[Trajectory]] = []
    for rest in sorted(rests, key=len, reverse=True):  # first-fit decreasing: few, full minibatches
        fit = next((b for b in open_bins if len(b) + len(rest) <= size), None)
        if fit is None:
            open_bins.append(list(rest))
        else:
            fit.extend(rest)
    return [tuple(b) for b in full + open_bins]


def make_minibatches(trajectories: Sequence[Trajectory], minibatch_size: int, seed: int,
                     failure_only: bool = False) -> list[tuple[str, tuple[Trajectory, ...]]]:
    """[(kind, trajectories)]: failures (hard < 1) first, then successes, each shuffled with
    the seed and packed so that cases with the same expected answer stay together.
    Trajectories whose model call failed are left out: they say nothing about the skill."""
    rng = random.Random(seed)
    usable = [t for t in trajectories if not t.error]
    kinds = [("failure", [t for t in usable if t.evaluation.hard < 1])]
    if not failure_only:
        kinds.append(("success", [t for t in usable if t.evaluation.hard >= 1]))
    out = []
    for kind, trajs in kinds:
        rng.shuffle(trajs)
        out.extend((kind, batch) for batch in _pack(trajs, max(1, minibatch_size)))
    return out

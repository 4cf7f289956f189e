"""Learning-rate schedules: how many edits a step may apply.  (pure: no I/O)

The "learning rate" of SkillOpt is an edit budget. Each schedule maps a 0-based step
to an integer budget in [min_lr, lr]. The formula reproduces the published SkillOpt
tables (progress counted from step 1, Python's round-half-to-even), which the tests
pin exactly: cosine T=4 -> 4,3,2,2 and T=8 -> 4,4,3,3,3,2,2,2; linear T=4 -> 4,3,2,2;
any schedule with T=1 -> 4.
"""
from __future__ import annotations

import math
from typing import Callable

Schedule = Callable[[int, int, int, int], int]

# The schedule whose value `autonomous` shows the optimizer and falls back to.
AUTONOMOUS_FALLBACK = "cosine"


def _progress(step: int, total_steps: int) -> float:
    if total_steps < 1:
        raise ValueError(f"total_steps must be at least 1, got {total_steps}")
    if step < 0:
        raise ValueError(f"step must not be negative, got {step}")
    # Past the planned end (e.g. a resumed run with more steps) the schedule stays at its floor.
    return min(1.0, (step + 1) / total_steps)


def _finish(value: float, lr: int, min_lr: int) -> int:
    return max(min_lr, min(lr, round(value)))


def _single(total_steps: int) -> bool:
    """A run of one step has nothing to decay over: like the published SkillOpt, it gets the
    full learning rate. Progress counted from step 1 would put that only step at the end of
    the schedule, its floor, so a one-step run (a demo, a smoke test) would apply fewest edits."""
    return total_steps == 1


def cosine(step: int, total_steps: int, lr: int, min_lr: int) -> int:
    p = _progress(step, total_steps)
    if _single(total_steps):
        return lr
    return _finish(min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * p)), lr, min_lr)


def linear(step: int, total_steps: int, lr: int, min_lr: int) -> int:
    p = _progress(step, total_steps)
    if _single(total_steps):
        return lr
    return _finish(min_lr + (lr - min_lr) * (1 - p), lr, min_lr)


def constant(step: int, total_steps: int, lr: int, min_lr: int) -> int:
    _progress(step, total_steps)  # same argument checks as the others
    return lr


SCHEDULES: dict[str, Schedule] = {"cosine": cosine, "linear": linear, "constant": constant}


def budget(name: str, step: int, total_steps: int, lr: int, min_lr: int) -> int:
    """Edit budget of 0-based `step`. For "autonomous" this is the scheduled fallback value."""
    if min_lr > lr:
        raise ValueError(f"min_lr ({min_lr}) must not exceed lr ({lr})")
    key = AUTONOMOUS_FALLBACK if name == "autonomous" else name
    if key not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; choose from {', '.join([*SCHEDULES, 'autonomous'])}")
    return SCHEDULES[key](step, total_steps, lr, min_lr)


def clamp_autonomous(answer: int | None, scheduled: int, lr: int, min_lr: int, pool_size: int) -> int:
    """The optimizer's chosen edit count, made safe.

    An unparseable answer falls back to the scheduled value (not to zero, which would
    silently skip the step); a parsed one is clamped to [min_lr, lr] and to the pool.
    """
    if answer is None:
        return scheduled
    return max(0, min(max(answer, min_lr), lr, pool_size))

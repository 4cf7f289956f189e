"""Worked examples: a step's failures as "task -> right answer" lines of the skill.  (pure: no I/O)

A small target applies a house rule it has seen in an example more reliably than a rule a
small optimizer put into words, and a small optimizer often finds no words for it at all
(it names the answer as its own trigger, or the template). The examples need no model: the
train split holds the right answers. With `worked_examples`, a step whose candidate the gate
did not keep (or that had none) tries one more: the incumbent plus a few of the step's
failures, each a different expected answer where it can, added to the skill's "Worked
examples" section (made at the end of the skill when missing). Gated alone, the examples
never ride in the optimizer's candidate: where they hurt a task they are rejected without
sinking the optimizer's good edits, and where the optimizer's edits are bad they are judged
on their own. For any task type: the task is the text its trajectory was prompted with, less
the lines every task shares, and the answer is the expected answer as text (a label, a
number, a JSON object). With `contrast_examples`, each failure shown is followed by a train
task the incumbent got right whose right answer is the failure's wrong reply (`contrasts`).

A trial runs on every rejected step, so at the gate's own level (any net win) luck alone
would let some in; it is kept only when its items won and lost pass a one-sided sign test at
`worked_examples_alpha`. By default (`trial_train_items`) each trial is judged alone, on the
selection split and on the incumbent's train rollouts it does not show (`fair`): nothing
about those went into it, and their values cost no call, so a trial of a real effect has two
to three times the items to show it on. Otherwise the test is on the items won and lost by
all the run's trials so far, pooled (`pooled`), the trial's gate holding that record as its
prior (gate.Prior) so that it evaluates until the pooled test is decided; that judges a trial
partly by its predecessors' items: on waste-sorting a trial that won 4 and lost 1 was
rejected because three earlier ones had won 8 and lost 10 between them.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Collection, Sequence

from .gate import GateDecision, Prior, sign_test_p
from .patch import Edit, apply_edits
from .prompts import clip
from .reflect import common_lines, task_text
from .skill import sections
from .tasks.answers import normalize_text
from .tasks.task import Trajectory, first_results

SECTION = "Worked examples"
PER_STEP = 3  # examples one step adds: few enough that the gate judges a small change
MAX_EXAMPLES = 12  # the section's size limit: past it a step proposes none (the skill stays short)
TASK_CHARS, ANSWER_CHARS = 240, 200  # one line each: long inputs are clipped, not wrapped
MARK = "- Task: "  # how an example line starts (counted, and never added twice)


def line(t: Trajectory, common: Sequence[str]) -> str:
    task = " ".join(task_text(t, common).split())
    return f"{MARK}{clip(task, TASK_CHARS)} -> Answer: {clip(' '.join(t.expected.split()), ANSWER_CHARS)}"


def pick(failures: Sequence[Trajectory], n: int, seed: int) -> list[Trajectory]:
    """Up to `n` failures, one per expected answer first (a seeded order within each)."""
    order = list(failures)
    random.Random(seed).shuffle(order)
    first = {}
    for t in order:
        first.setdefault(t.expected.strip(), t)
    chosen = list(first.values())[:n]
    return chosen + [t for t in order if t not in chosen][:n - len(chosen)]


def contrasts(chosen: Sequence[Trajectory], known: Sequence[Trajectory], taken: Collection[str], room: int,
              seed: int) -> list[Trajectory]:
    """`chosen` in order, each followed by its contrast where it has one and room is left: a
    train item of `known` the incumbent got right whose right answer is the failure's wrong
    reply (compared as the scorers compare text: case, spacing and punctuation ignored), one
    the lines do not show yet (`taken`). Failures alone show only the answers the target
    misses, and a small target then gives those beyond the examples' tasks (the examples
    bundled into every step at ad86127 took waste-sorting's test accuracy on residual items
    0.12 -> 0.79 and on glass items 0.83 -> 0.00); the contrast shows the answer it gave, on a
    task where that answer is right. A reply that is no task's answer (free text, a number
    worked out) has none, so on such tasks the examples are the failures alone."""
    pool = [t for t in first_results(known) if not t.error and t.evaluation.hard >= 1 and t.item_id not in taken]
    random.Random(seed).shuffle(pool)
    out: list[Trajectory] = []
    for failure in chosen:
        out.append(failure)
        said = normalize_text(failure.output)
        match = next((t for t in pool if normalize_text(t.expected) == said), None) if said and room > 0 else None
        if match is not None:
            out.append(match)
            pool.remove(match)
            room -= 1
    return out


def edit(skill: str, trajectories: Sequence[Trajectory], common: Sequence[str],
         seed: int, known: Sequence[Trajectory] = ()) -> tuple[Edit, tuple[str, ...]] | None:
    """The step's example edit and the items it shows, or None: no failure it has not shown
    yet, or the section is full. With `known` (the incumbent's train rollouts), each failure
    shown is paired with its contrast (`contrasts`) while the section has room."""
    shown = [r.strip() for r in skill.splitlines() if r.strip().startswith(MARK)]
    room = min(PER_STEP, MAX_EXAMPLES - len(shown))
    failures = [t for t in trajectories if not t.error and t.evaluation.hard < 1 and line(t, common) not in shown]
    chosen = pick(failures, room, seed) if room > 0 else []
    if not chosen:
        return None
    n_failures = len(chosen)
    if known:
        taken = {t.item_id for t in chosen} | {t.item_id for t in known if line(t, common) in shown}
        chosen = contrasts(chosen, known, taken, MAX_EXAMPLES - len(shown) - n_failures, seed)
    content = "\n".join(line(t, common) for t in chosen)
    home = next((s.path_str for s in sections(skill) if s.title == SECTION), None)
    rationale = f"{n_failures} train failures with their right answers, for the target to imitate"
    if len(chosen) > n_failures:
        rationale += (f", and {len(chosen) - n_failures} train tasks whose right answer is a failure's wrong reply, "
                      "for contrast")
    ids = tuple(t.item_id for t in chosen)
    if home is None:
        return Edit(op="add", content=f"## {SECTION}\n\n{content}", rationale=rationale, source="example"), ids
    return Edit(op="add", section=home, content=content, rationale=rationale, source="example"), ids


def for_step(skill: str, trajectories: Sequence[Trajectory], seed: int, fuzzy: float,
             known: Sequence[Trajectory] = ()) -> tuple[Edit, tuple[str, ...], str] | None:
    """The step's example edit, the items it shows (the template lines every prompt of the
    step shares left out of each task) and the skill with it applied; None when there is none.
    `known`: the incumbent's train rollouts to draw contrasts from (none: failures alone)."""
    found = edit(skill, trajectories, common_lines([t.prompt for t in trajectories if not t.error]), seed, known)
    patch = apply_edits(skill, [found[0]], fuzzy_threshold=fuzzy) if found else None
    return (*found, patch.text) if found and patch and patch.applied else None


def fair(shown: Collection[str], known: Sequence[Trajectory]) -> tuple[Trajectory, ...]:
    """The incumbent's train rollouts a change is also gated on: all it has (`known`), but the
    items the change was made from (`shown`), each item once, errored ones left out. Nothing
    about the others went into the change (a worked-examples trial shows a few failures picked
    by the step's seed; the slow update's guidance is written from its sample's cases), so they
    are as fair a test of it as the selection split, and their incumbent values cost no call."""
    return tuple(t for t in first_results(known) if t.item_id not in shown)


def prior(record: tuple[int, int], alpha: float) -> Prior:
    """The trial gate's prior: every earlier trial's items won and lost, pooled at `alpha`."""
    return Prior(*record, alpha=alpha)


def pooled(d: GateDecision, record: tuple[int, int], alpha: float,
           what: str = "worked examples") -> tuple[GateDecision, tuple[int, int]]:
    """A trial's decision given every trial's items won and lost so far (`record`, before this
    one), and the record after it: kept only if the trial's own gate accepts it and the pooled
    record passes the sign test at `alpha` (a gate given the record as its prior has applied
    this rule already; this states it in the reason and holds for any gate). `what` names the
    kind of trial in the reason (clue rules are pooled the same way, on a record of their own).
    Only with `trial_train_items` off: a trial judged alone is never pooled (its gate evaluates
    its weakest items first and stops early, so it has no fair record to add)."""
    wins, losses = record[0] + d.wins, record[1] + d.losses
    p = sign_test_p(wins, losses)
    verdict = f"all trials so far: {wins} items won, {losses} lost, sign test p = {p:.3f}"
    if d.accept and p > alpha:
        return dataclasses.replace(d, accept=False, reason=f"{verdict} > {alpha}: not yet evidence that "
                                                              f"{what} help this task ({d.reason})"), (wins, losses)
    return dataclasses.replace(d, reason=f"{d.reason}; {verdict}"), (wins, losses)

"""Which model-free trial a step whose candidate was not kept tries.  (pure: no I/O)

The first kind that has something to offer, in this order: the scorer's reply template (once,
template.py); on a task whose answers are labels, rules read off the train split (clues.py); the
incumbent without one block of the seed (ablation.py); worked examples of the step's failures
(examples.py). None in approval mode, where a person judges every edit the step proposes, or
without the gate, which is what keeps a trial only when it helps.
"""
from __future__ import annotations

from typing import Sequence

from . import ablation, clues, examples, template
from .config import RunConfig
from .patch import Edit
from .plan import Plan
from .state import State
from .tasks.task import Trajectory

Offer = tuple[Edit, tuple[str, ...], str]  # the trial's edit, the train items it shows, the skill with it


def offer(c: RunConfig, state: State, task, scoring, plan: Plan, step: int, rolled: Sequence[Trajectory],
          known: Sequence[Trajectory]) -> Offer | None:
    """The step's trial for the incumbent `state.skill`, or None. `rolled`: the step's train
    rollouts; `known`: every train rollout of the incumbent the run holds (clue rules count them)."""
    if not c.use_gate or c.approval_mode:
        return None
    skill, fuzzy = state.skill, c.fuzzy_anchor_threshold
    label = scoring is not None and scoring.kind == "label"
    layout = scoring.template if scoring and not state.template_tried else ""
    return ((c.worked_examples and template.for_skill(skill, layout, fuzzy))
            or (c.clue_rules and label and clues.for_batch(skill, task.render, plan.train, known,
                                                           state.clues_rejected, fuzzy))
            or ablation.for_step(skill, task.seed_skill, state.ablated, c.seed_ablations, fuzzy)
            or (c.worked_examples and examples.for_step(skill, rolled, plan.step_seed(step), fuzzy,
                                                        known if c.contrast_examples else ()))
            or None)

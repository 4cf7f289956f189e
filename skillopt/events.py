"""Events the trainer emits. The store records them; nothing else listens by default.

Each event is a frozen dataclass. The ones that end a unit of work (StepCompleted,
EpochCompleted, TestEvaluated) carry the trainer's checkpoint State, so the store can
write the work and the state to resume from in one transaction: a run killed at any
moment resumes from the last such event, never from half a step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Protocol, Sequence

from .gate import GateDecision
from .patch import Edit
from .reflect import MinibatchResult
from .state import State
from .tasks.task import Trajectory
from .vocabulary import Approval, Decision, EditStatus, Fate, GateOutcome, Purpose, RunStatus, Stage, TestSkill


@dataclass(frozen=True)
class Event:
    run_id: str


@dataclass(frozen=True)
class RunStarted(Event):
    total_steps: int
    steps_per_epoch: int
    resumed: bool


@dataclass(frozen=True)
class SeedScored(Event):
    skill: str
    score: float
    state: State  # starts from the seed, or from an empty skill when no skill scored better
    no_skill_score: float | None = None  # the target with no skill on the selection split


@dataclass(frozen=True)
class StageChanged(Event):
    step: int
    epoch: int
    stage: Stage
    detail: str = ""


@dataclass(frozen=True)
class RolloutsDone(Event):
    step: int
    split: str
    purpose: Purpose
    skill_sha: str
    trajectories: tuple[Trajectory, ...]
    cached: tuple[bool, ...]


@dataclass(frozen=True)
class ReflectionDone(Event):
    step: int
    minibatches: tuple[MinibatchResult, ...]


@dataclass(frozen=True)
class ApprovalRequested(Event):
    step: int
    edits: tuple[Edit, ...]
    diffs: tuple[str, ...]  # each edit's diff in context, applied alone to the current skill
    minibatches: tuple[tuple[int, ...], ...] = ()  # which reflection minibatches proposed each edit
    numbers: tuple[int, ...] = ()  # each edit's index among the step's edits (its edits.idx): one numbering


@dataclass(frozen=True)
class EditOutcome:
    """A proposed edit's whole life: pipeline fate, patch status, approval and gate outcome."""
    edit: Edit
    minibatches: tuple[int, ...]
    fate: Fate
    status: EditStatus | Literal[""] = ""  # what applying it did ("": it was not selected)
    approval: Approval | Literal[""] = ""  # "": no approval mode
    gate: GateOutcome | Literal[""] = ""  # "": it never reached the gate
    note: str = ""  # why it got its fate or status (a drop reason, a near-duplicate's text, ...)


@dataclass(frozen=True)
class ExamplesTrial:
    """A step's worked examples, gated alone after the step's own candidate was not kept."""
    edit: Edit
    items: tuple[str, ...]  # the train items the examples show
    candidate: str  # the incumbent with the examples added
    decision: Decision
    gate: GateDecision
    flipped: tuple[tuple[str, float, float], ...]


@dataclass(frozen=True)
class StepCompleted(Event):
    step: int
    epoch: int
    edit_budget: int
    scheduled_budget: int
    train_hard: float
    train_soft: float
    outcomes: tuple[EditOutcome, ...]
    candidate: str | None  # candidate skill text (None when nothing applied)
    decision: Decision
    gate: GateDecision | None
    flipped: tuple[tuple[str, float, float], ...]  # (item_id, incumbent value, candidate value) that differ
    n_minibatches: int
    n_failed_minibatches: int
    duration_s: float
    state: State
    train_errors: int = 0  # train items whose rollout errored (left out of train_hard/train_soft)
    examples: ExamplesTrial | None = None  # the worked-examples trial, when one ran


@dataclass(frozen=True)
class EpochCompleted(Event):
    epoch: int
    step: int
    ran_slow_update: bool
    previous_guidance: str = ""
    guidance: str = ""
    comparison: dict[str, tuple[str, ...]] = field(default_factory=dict)
    decision: Decision | Literal[""] = ""  # "": no slow update ran
    gate: GateDecision | None = None
    slow_candidate: str | None = None
    slow_error: str = ""
    ran_meta: bool = False  # the meta skill was rewritten (it runs with or without the slow update)
    meta_skill: str = ""
    meta_error: str = ""
    state: State | None = None


@dataclass(frozen=True)
class TestEvaluated(Event):
    which: TestSkill
    skill_sha: str
    score: float
    hard: float
    soft: float
    n_items: int
    state: State
    n_errors: int = 0  # test items whose rollout errored (left out of the score)
    complete: bool = True  # n_errors within max_error_rate


@dataclass(frozen=True)
class LiftMeasured(Event):
    """The best skill against the better of no skill and the seed, on the test split."""
    metric: str
    baseline: TestSkill
    best_score: float
    baseline_score: float
    lift: float
    ci_low: float  # paired bootstrap 95% interval of the lift
    ci_high: float
    n_items: int
    breakdown: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # by field or expected answer
    breakdown_by: str = ""  # "field" | "answer" | "" (no breakdown)


@dataclass(frozen=True)
class RunFinished(Event):
    status: RunStatus
    reason: str = ""


class Callback(Protocol):
    def __call__(self, event: Event) -> None: ...


def emit(callbacks: Sequence[Callback], event: Event) -> None:
    for callback in callbacks:
        callback(event)

"""Events the trainer emits. The store records them; nothing else listens by default.

Each event is a frozen dataclass. The ones that end a unit of work (StepCompleted,
EpochCompleted, TestEvaluated) carry the trainer's checkpoint State, so the store can
write the work and the state to resume from in one transaction: a run killed at any
moment resumes from the last such event, never from half a step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from .gate import GateDecision
from .patch import Edit
from .reflect import MinibatchResult, RejectedEdit
from .tasks.task import Trajectory

STAGES = ("rollout", "reflect", "aggregate", "select", "approval", "gate", "slow_update", "meta", "test", "done")


@dataclass(frozen=True)
class State:
    """Everything needed to continue a run after the last completed step."""
    step: int  # last completed step (0 = none yet)
    skill: str  # current (incumbent) skill
    current_score: float | None  # incumbent's selection score (None until the seed is scored)
    best_skill: str
    best_score: float | None
    best_step: int
    epoch_start_skill: str  # skill at the start of the current epoch (slow update compares against it)
    meta_skill: str = ""
    rejected: tuple[RejectedEdit, ...] = ()
    patterns: tuple[str, ...] = ()  # failure summaries of this epoch's reflections
    accepted: tuple[Edit, ...] = ()  # edits accepted this epoch (the meta skill learns from them)
    epochs_done: int = 0  # epochs whose end-of-epoch work (slow update, meta) is recorded
    tests_done: tuple[str, ...] = ()  # which final test evaluations are recorded

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step, "skill": self.skill, "current_score": self.current_score,
            "best_skill": self.best_skill, "best_score": self.best_score, "best_step": self.best_step,
            "epoch_start_skill": self.epoch_start_skill, "meta_skill": self.meta_skill,
            "rejected": [_rejected_json(r) for r in self.rejected], "patterns": list(self.patterns),
            "accepted": [edit_json(e) for e in self.accepted], "epochs_done": self.epochs_done, "tests_done": list(self.tests_done),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "State":
        rejected = tuple(RejectedEdit(step=r["step"], edit=Edit(**r["edit"]), score_before=r["score_before"],
                                      score_after=r["score_after"], reason=r["reason"]) for r in data["rejected"])
        return cls(step=data["step"], skill=data["skill"], current_score=data["current_score"],
                   best_skill=data["best_skill"], best_score=data["best_score"], best_step=data["best_step"],
                   epoch_start_skill=data["epoch_start_skill"], meta_skill=data["meta_skill"],
                   rejected=rejected, patterns=tuple(data["patterns"]),
                   accepted=tuple(Edit(**e) for e in data["accepted"]), epochs_done=data["epochs_done"],
                   tests_done=tuple(data["tests_done"]))


def _rejected_json(r: RejectedEdit) -> dict[str, Any]:
    return {"step": r.step, "edit": edit_json(r.edit), "score_before": r.score_before,
            "score_after": r.score_after, "reason": r.reason}


def edit_json(e: Edit) -> dict[str, Any]:
    return {"op": e.op, "target": e.target, "content": e.content, "section": e.section,
            "rationale": e.rationale, "source": e.source, "support": e.support}


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
    state: State


@dataclass(frozen=True)
class StageChanged(Event):
    step: int
    epoch: int
    stage: str
    detail: str = ""


@dataclass(frozen=True)
class RolloutsDone(Event):
    step: int
    split: str
    purpose: str  # train | gate_current | gate_candidate | slow_prev | slow_cur | test_seed | test_best | test_final | baseline
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


@dataclass(frozen=True)
class EditOutcome:
    """A proposed edit's whole life: pipeline fate, patch status, approval and gate outcome."""
    edit: Edit
    minibatches: tuple[int, ...]
    fate: str  # invalid | merged | clipped | selected
    status: str = ""  # patch status when selected (applied, anchor_not_found, ...)
    approval: str = ""  # approved | rejected | edited | "" (no approval mode)
    gate: str = ""  # accepted | rejected | skipped | ""


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
    decision: str  # accept | accept_new_best | reject | skip
    gate: GateDecision | None
    flipped: tuple[tuple[str, float, float], ...]  # (item_id, incumbent value, candidate value) that differ
    n_minibatches: int
    n_failed_minibatches: int
    duration_s: float
    state: State


@dataclass(frozen=True)
class EpochCompleted(Event):
    epoch: int
    step: int
    ran_slow_update: bool
    previous_guidance: str = ""
    guidance: str = ""
    comparison: dict[str, tuple[str, ...]] = field(default_factory=dict)
    decision: str = ""  # accept | accept_new_best | reject | skip | failed
    gate: GateDecision | None = None
    slow_candidate: str | None = None
    slow_error: str = ""
    meta_skill: str = ""
    meta_error: str = ""
    state: State | None = None


@dataclass(frozen=True)
class TestEvaluated(Event):
    which: str  # seed | best | final
    skill_sha: str
    score: float
    hard: float
    soft: float
    n_items: int
    state: State


@dataclass(frozen=True)
class RunFinished(Event):
    status: str  # completed | stopped | failed | budget_exhausted
    reason: str = ""


class Callback(Protocol):
    def __call__(self, event: Event) -> None: ...


def emit(callbacks: Sequence[Callback], event: Event) -> None:
    for callback in callbacks:
        callback(event)

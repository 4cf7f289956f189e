"""How the dashboard names the engine's words on screen (pure: no streamlit).

The store keeps short internal names (a rollout's purpose `slow_cur`, a call's stage `lr`);
a person reads these labels instead. Every page shows an edit as "edit N" with N counted
from 1 within its step, the same number on Approvals, Skill evolution, Gate timeline and
in the blame, so one edit is never two numbers.
"""
from __future__ import annotations

from typing import Any, Mapping

# Why a set of rollouts was run (rollouts.purpose) -> what it is, for a person.
PURPOSE_LABELS: dict[str, str] = {
    "train": "train batch, current skill",
    "gate_current": "gate: current skill",
    "gate_candidate": "gate: the step's candidate",
    "examples_current": "worked-examples / reply-template gate: current skill",
    "examples_candidate": "worked-examples / reply-template gate: skill with the step's examples or the template",
    "slow_update_current": "slow-update gate: current skill",
    "slow_update_candidate": "slow-update gate: skill with the new guidance",
    "slow_prev": "slow update: previous epoch's skill",
    "slow_cur": "slow update: this epoch's skill",
    "test_seed": "test: seed skill",
    "test_best": "test: best skill",
    "test_final": "test: final skill",
    "test_none": "test: no skill",
    "baseline": "seed gate: no skill",
    "check": "minibatch check: the candidate on its step's train items",
    "check_leave_one_out": "minibatch check: the candidate with one edit left out",
}

# Why a model was called (llm_calls.stage) -> what it is, for a person.
CALL_STAGE_LABELS: dict[str, str] = {
    "rollout": "rollout", "reflect": "reflection", "merge": "merge edits", "rank": "rank edits",
    "lr": "edit budget (autonomous)", "gate": "gate", "examples": "worked-examples / reply-template gate",
    "slow_update": "slow update", "meta": "meta skill",
    "test": "test", "judge": "judge", "preflight": "preflight",
}

# Which skill a test score belongs to (tests.which) -> its name on screen.
TEST_LABELS: dict[str, str] = {"none": "no skill", "seed": "seed", "best": "best", "final": "final"}


def purpose_label(purpose: str) -> str:
    return PURPOSE_LABELS.get(purpose, purpose.replace("_", " "))


def call_stage_label(stage: str) -> str:
    return CALL_STAGE_LABELS.get(stage, (stage or "").replace("_", " "))


def edit_number(idx: int) -> int:
    """The number an edit shows: its index among the step's edits, counted from 1."""
    return int(idx) + 1


def edit_name(idx: int) -> str:
    return f"edit {edit_number(idx)}"


def approval_edit_number(row: Mapping[str, Any], edit: Mapping[str, Any]) -> int:
    """The step-wide number of an edit waiting for approval: the trainer records the edit's
    index among the step's edits (`number` in its JSON); rows written before that fall back
    to the position among the edits shown for approval."""
    number = edit.get("number")
    return edit_number(number if isinstance(number, int) else row["idx"])

"""A person's decisions on a step's edits (approval mode): what they are and what they mean.  (pure: no I/O)

The trainer asks for decisions (`request`) and waits until every edit has one; this module
says when that is, and turns the decisions into the edits to apply (a person's version of an edited
one), the edits a person rejected, and each edit's approval status for the record.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from . import events as ev
from .patch import Edit, apply_edits
from .vocabulary import Approval


@dataclass(frozen=True)
class ApprovalDecision:
    """A person's decision on one pending edit (approval mode)."""
    status: Approval
    content: str  # the (possibly edited) content


def request(run_id: str, step: int, skill: str, edits: Sequence[Edit], sources: Mapping[Edit, tuple],
            fuzzy: float) -> ev.ApprovalRequested:
    """The event that asks for decisions: each edit with its diff alone on the skill, its
    number in the step's list and the minibatches it came from."""
    return ev.ApprovalRequested(
        run_id=run_id, step=step, edits=tuple(edits),
        diffs=tuple(apply_edits(skill, [e], fuzzy_threshold=fuzzy).diff for e in edits),
        minibatches=tuple(sources.get(e, (None, ()))[1] for e in edits),
        numbers=tuple(sources.get(e, (None, ()))[0] for e in edits))


def settled(decisions: Sequence[ApprovalDecision], n_edits: int) -> bool:
    """Every one of the step's edits has a decision that is no longer pending."""
    return len(decisions) == n_edits and all(d.status != "pending" for d in decisions)


def sort(edits: Sequence[Edit], decisions: Sequence[ApprovalDecision]
         ) -> tuple[dict[Edit, Edit], list[Edit], dict[Edit, Approval]]:
    """(each kept edit -> the version to apply, the rejected edits, each edit's status)."""
    kept: dict[Edit, Edit] = {}
    rejected, approvals = [], {}
    for edit, d in zip(edits, decisions):
        approvals[edit] = d.status
        if d.status == "rejected":
            rejected.append(edit)
        else:
            kept[edit] = replace(edit, content=d.content) if d.status == "edited" else edit
    return kept, rejected, approvals

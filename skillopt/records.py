"""A step's record of its edits: what applying (and approving) did to each selected edit,
every proposed edit's outcome for the store, and the rejections the step adds to the
rejected-edit buffer. Built by the trainer; nothing here calls a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

from . import events as ev
from . import transforms
from .gate import GateDecision
from .patch import Edit, EditReport, PatchResult
from .reflect import MinibatchResult
from .screen import Dropped
from .state import RejectedEdit
from .vocabulary import Approval, Decision, GateOutcome

# Why an edit's approval shaped its record: the content stored is the person's, or the
# edit is not in the candidate although applying it worked.
APPROVAL_NOTES = {"edited": "content edited by a person (the proposed content is kept with the step's approvals)",
                  "rejected": "rejected by a person: not part of the candidate"}


@dataclass(frozen=True)
class Update:
    """What a step did to the skill before the gate."""
    patch: PatchResult  # the apply that produced the candidate: after approval, of the edits a person kept
    # Each selected edit's report, from `patch` when `patch` applied it. The others keep the
    # report of the apply before approval: an edit that did not apply there was never shown
    # to a person, and an edit a person rejected did apply there (that diff is what they
    # judged), so its status stays "applied" and its approval says it left the candidate.
    reports: dict[Edit, EditReport]
    approvals: dict[Edit, Approval] = field(default_factory=dict)  # empty outside approval mode
    human_rejected: tuple[Edit, ...] = ()
    edited: dict[Edit, Edit] = field(default_factory=dict)  # a selected edit -> the version a person wrote
    screened: tuple[Dropped, ...] = ()  # applied edits the minibatch check took out of the candidate

    def candidate(self, skill: str) -> str | None:
        """The skill the gate must judge, or None when the step changed nothing."""
        return self.patch.text if self.patch.applied and self.patch.text != skill else None

    def screened_by(self, patch: PatchResult, dropped: tuple[Dropped, ...]) -> "Update":
        """This update after the minibatch check took `dropped` out: `patch` is the apply of the
        edits it kept, whose reports replace theirs (a person's version reports as the selected edit)."""
        back = {v: k for k, v in self.edited.items()}
        kept = [e for e in self.patch.applied if e not in {d.edit for d in dropped}]
        reports = self.reports | {back.get(e, e): r for e, r in zip(kept, patch.reports)}
        return replace(self, patch=patch, screened=dropped, reports=reports)


def gate_outcome(decision: Decision) -> GateOutcome:
    """What a gate decision means for each edit it judged."""
    return {"skip": "skipped", "reject": "rejected"}.get(decision, "accepted")  # type: ignore[return-value]


def edit_outcomes(selection: transforms.Selection, update: Update, decision: Decision,
                  minibatches: Sequence[MinibatchResult] = ()) -> tuple[ev.EditOutcome, ...]:
    """Each proposed edit's whole life: pipeline fate, patch status, approval, gate outcome
    and why; then each edit the reflection dropped before the pipeline, with its reason."""
    outcome = gate_outcome(decision)
    kept = [_outcome(cand, update, outcome) for cand in selection.candidates]
    dropped = [ev.EditOutcome(edit=d.edit, minibatches=(m.index,), fate="dropped", note=f"{d.reason}: {d.detail}")
               for m in minibatches for d in m.dropped]
    return tuple(kept + dropped)


def _outcome(cand: transforms.Candidate, update: Update, gate: GateOutcome) -> ev.EditOutcome:
    report = update.reports.get(cand.edit)
    approval = update.approvals.get(cand.edit, "")
    checked = next((d.note for d in update.screened if d.edit == update.edited.get(cand.edit, cand.edit)), "")
    reached_gate = report is not None and report.status == "applied" and approval != "rejected" and not checked
    notes = (cand.note, report.detail if report else "", APPROVAL_NOTES.get(approval, ""), checked)
    return ev.EditOutcome(edit=update.edited.get(cand.edit, cand.edit), minibatches=cand.minibatches,
                          fate=cand.fate, status=report.status if report else "", approval=approval,
                          gate=gate if reached_gate else "", note="; ".join(n for n in notes if n))


def rejections(step: int, update: Update, score: float | None) -> tuple[RejectedEdit, ...]:
    """The step's rejections before the gate. A person's each decide on that edit alone, so
    each blocks its exact repeat; so does an edit the minibatch check dropped alone, while one
    dropped with the whole candidate remembers the others as companions."""
    s = score or 0.0
    return tuple(RejectedEdit(step=step, edit=e, score_before=s, score_after=s, reason="human")
                 for e in update.human_rejected) + tuple(
        RejectedEdit(step=step, edit=d.edit, score_before=d.score_before, score_after=d.score_after,
                     reason="check", companions=d.companions) for d in update.screened)


def gate_rejections(step: int, applied: Sequence[Edit], d: GateDecision) -> tuple[RejectedEdit, ...]:
    """The edits of a candidate the gate rejected. A lone edit is to blame, so its exact repeat
    is blocked; the edits of a multi-edit candidate were judged together, so any one of them
    may be fine alone: each remembers the others as companions and is not blocked."""
    return tuple(RejectedEdit(step=step, edit=e, score_before=d.current_score, score_after=d.candidate_score,
                              reason="gate", companions=tuple(applied[:i]) + tuple(applied[i + 1:]))
                 for i, e in enumerate(applied))

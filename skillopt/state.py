"""The checkpoint: everything a run needs to continue after its last completed unit of work.

The trainer threads one State through the loop and returns a new one from each unit
(seed scoring, step, epoch end, test evaluation); the event that ends the unit carries it,
and the store writes the work and the State in one transaction. Resuming is therefore
just calling the loop again with the stored State.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .patch import Edit
from .vocabulary import RejectionReason, TestSkill


@dataclass(frozen=True)
class RejectedEdit:
    """An edit the gate or a person turned down: remembered so it is not proposed again."""
    step: int
    edit: Edit
    score_before: float
    score_after: float
    reason: RejectionReason
    companions: tuple[Edit, ...] = ()  # the other edits of a rejected multi-edit candidate


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
    tests_done: tuple[TestSkill, ...] = ()  # which final test evaluations are recorded (complete ones)
    # The incumbent's gate value on each selection item it was scored on (errored items are
    # absent): the strict gate compares a candidate with it item by item, on common items only.
    current_values: tuple[tuple[str, float], ...] = ()
    # Each final test's gate value per scored item: the lift is measured from them, also
    # after a resume that did not run those tests again.
    test_values: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # On a task graded field by field, each final test's field scores per scored item
    # (lift.field_values): the lift's breakdown by field, also after such a resume.
    test_fields: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    # Items won and lost by every worked-examples trial so far: with trial_train_items off,
    # whether examples help this task at all is judged on all of them (examples.pooled).
    examples_record: tuple[int, int] = (0, 0)
    template_tried: bool = False  # the scorer's reply template was gated once (template.py): never again
    # Items won and lost by every clue-rule trial so far (pooled like the examples'), and the
    # words of the rejected trials' rules: not offered again (clues.py).
    clues_record: tuple[int, int] = (0, 0)
    clues_rejected: tuple[str, ...] = ()
    # Keys of the seed blocks whose removal was gated (ablation.py): each is tried once.
    ablated: tuple[str, ...] = ()
    # (incumbent and candidate key, step) of each step candidate the gate rejected: not gated again (repeats.py).
    tried: tuple[tuple[str, int], ...] = ()
    # The step at which the incumbent took over (0: the start): the train batches after it were
    # rolled out under it, so its results on them are known without a call (clue rules read them).
    skill_since: int = 0

    def record_of(self, source: str) -> tuple[int, int] | None:
        """The pooled record of a model-free trial's kind (its edit's source); None: not pooled."""
        return {"example": self.examples_record, "rule": self.clues_record}.get(source)

    def after_trial(self, source: str, record: tuple[int, int] | None, rejected_words: tuple[str, ...],
                    ablated: str = "") -> "State":
        """The state after a trial of that kind: its record, its rejected rules' words, the seed
        block it removed (`ablated`, its key), or the reply template marked as tried (it is tried once)."""
        if source == "ablation":
            return replace(self, ablated=self.ablated + (ablated,))
        if source == "example":
            return replace(self, examples_record=record)
        if source == "rule":
            return replace(self, clues_record=record, clues_rejected=self.clues_rejected + rejected_words)
        return replace(self, template_tried=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step, "skill": self.skill, "current_score": self.current_score,
            "best_skill": self.best_skill, "best_score": self.best_score, "best_step": self.best_step,
            "epoch_start_skill": self.epoch_start_skill, "meta_skill": self.meta_skill,
            "rejected": [rejected_json(r) for r in self.rejected], "patterns": list(self.patterns),
            "accepted": [edit_json(e) for e in self.accepted], "epochs_done": self.epochs_done,
            "tests_done": list(self.tests_done), "current_values": [list(v) for v in self.current_values],
            "test_values": {k: dict(v) for k, v in self.test_values.items()},
            "test_fields": {k: {i: dict(f) for i, f in v.items()} for k, v in self.test_fields.items()},
            "examples_record": list(self.examples_record), "template_tried": self.template_tried,
            "clues_record": list(self.clues_record), "clues_rejected": list(self.clues_rejected),
            "ablated": list(self.ablated), "tried": [list(t) for t in self.tried], "skill_since": self.skill_since,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "State":
        rejected = tuple(RejectedEdit(step=r["step"], edit=Edit(**r["edit"]), score_before=r["score_before"],
                                      score_after=r["score_after"], reason=r["reason"],
                                      companions=tuple(Edit(**e) for e in r.get("companions", ())))
                         for r in data["rejected"])
        return cls(step=data["step"], skill=data["skill"], current_score=data["current_score"],
                   best_skill=data["best_skill"], best_score=data["best_score"], best_step=data["best_step"],
                   epoch_start_skill=data["epoch_start_skill"], meta_skill=data["meta_skill"],
                   rejected=rejected, patterns=tuple(data["patterns"]),
                   accepted=tuple(Edit(**e) for e in data["accepted"]), epochs_done=data["epochs_done"],
                   tests_done=tuple(data["tests_done"]),
                   current_values=tuple((i, float(v)) for i, v in data.get("current_values", ())),
                   test_values={k: {i: float(x) for i, x in v.items()}
                                for k, v in data.get("test_values", {}).items()},
                   test_fields={k: {i: {f: float(x) for f, x in fs.items()} for i, fs in v.items()}
                                for k, v in data.get("test_fields", {}).items()},
                   examples_record=tuple(data.get("examples_record", (0, 0))),
                   template_tried=bool(data.get("template_tried", False)),
                   clues_record=tuple(data.get("clues_record", (0, 0))),
                   clues_rejected=tuple(str(w) for w in data.get("clues_rejected", ())),
                   ablated=tuple(str(k) for k in data.get("ablated", ())),
                   tried=tuple((str(k), int(step)) for k, step in data.get("tried", ())),
                   skill_since=int(data.get("skill_since", 0)))


def rejected_json(r: RejectedEdit) -> dict[str, Any]:
    return {"step": r.step, "edit": edit_json(r.edit), "score_before": r.score_before,
            "score_after": r.score_after, "reason": r.reason,
            "companions": [edit_json(e) for e in r.companions]}


def edit_json(e: Edit) -> dict[str, Any]:
    return {"op": e.op, "target": e.target, "content": e.content, "section": e.section,
            "rationale": e.rationale, "source": e.source, "support": e.support, "line": e.line}

"""Momentum and meta-learning at the end of an epoch.

The slow update compares the previous epoch's skill with the current one on the same
train items and lets the optimizer write longitudinal guidance into the skill's protected
block; the meta skill is the optimizer's own strategy notes, rewritten from the same
evidence and shown in the next epoch's reflection prompts. Both keep what they had when
the optimizer's reply is unusable: a failed call must never erase accumulated guidance.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Sequence

from .patch import Edit
from .prompts import clip, prompt_messages
from .reflect import describe_edit, format_case
from .state import RejectedEdit
from .skill import MARKERS, guidance, with_guidance
from .tasks.task import Trajectory

MAX_BULLETS = 6
MAX_NOTES = 8
BULLET_CHARS = 240
EXAMPLES = 4  # cases of each kind shown to the optimizer: evidence, not a second reflection
CASE_CHARS = 400
DIFF_CHARS = 1500
SKILL_CHARS = 3000


@dataclass(frozen=True)
class Comparison:
    improved: tuple[str, ...]  # wrong with the previous skill, right with the current one
    regressed: tuple[str, ...]
    persistent_failure: tuple[str, ...]
    stable_success: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.improved) + len(self.regressed) + len(self.persistent_failure) + len(self.stable_success)

    def counts(self) -> dict[str, int]:
        return {"n": self.n, "improved": len(self.improved), "regressed": len(self.regressed),
                "persistent": len(self.persistent_failure), "stable": len(self.stable_success)}


@dataclass(frozen=True)
class SlowResult:
    guidance: str
    skill: str
    ok: bool
    error: str = ""


@dataclass(frozen=True)
class MetaResult:
    content: str
    ok: bool
    error: str = ""


def compare(prev: Sequence[Trajectory], cur: Sequence[Trajectory]) -> Comparison:
    """Classify the items both evaluations saw by hard score, in the order of `cur`."""
    before = {t.item_id: t.evaluation.hard >= 1 for t in prev}
    buckets: dict[tuple[bool, bool], list[str]] = {(a, b): [] for a in (False, True) for b in (False, True)}
    for t in cur:
        if t.item_id in before:
            buckets[(before[t.item_id], t.evaluation.hard >= 1)].append(t.item_id)
    return Comparison(improved=tuple(buckets[(False, True)]), regressed=tuple(buckets[(True, False)]),
                      persistent_failure=tuple(buckets[(False, False)]),
                      stable_success=tuple(buckets[(True, True)]))


def _bullets(obj: object, key: str, limit: int) -> list[str]:
    """The reply's bullet list, cleaned; raises ValueError (-> one repair) when unusable."""
    if not isinstance(obj, dict) or not isinstance(obj.get(key), list):
        raise ValueError(f"expected {{\"{key}\": [\"...\", ...]}}")
    out = []
    for item in obj[key]:
        if not isinstance(item, str):
            raise ValueError(f"every entry of '{key}' must be a string")
        if any(marker in item for marker in MARKERS):
            raise ValueError(f"'{key}' must not contain the protected-block markers")
        text = " ".join(item.strip().lstrip("-*• ").split())
        if text:
            out.append(clip(text, BULLET_CHARS))
    if not out:
        raise ValueError(f"'{key}' is empty")
    return out[:limit]


def _schema(title: str, key: str, limit: int) -> dict:
    return {"title": title, "type": "object", "required": [key], "additionalProperties": False,
            "properties": {key: {"type": "array", "maxItems": limit,
                                 "items": {"type": "string", "maxLength": BULLET_CHARS}}}}


def _cases(ids: Sequence[str], trajs: Sequence[Trajectory], skill: str) -> str:
    by_id = {t.item_id: t for t in trajs}
    shown = [by_id[i] for i in ids if i in by_id][:EXAMPLES]
    more = len(ids) - len(shown)
    text = "\n".join(format_case(n, t, CASE_CHARS, skill) for n, t in enumerate(shown, 1))
    return (text + (f"\n(and {more} more)" if more > 0 else "")) or "(none)"


def _diff(old: str, new: str) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "previous", "current", lineterm="", n=1))
    return clip("\n".join(lines[2:]), DIFF_CHARS) or "(no change)"


def slow_update(optimizer, *, skill: str, previous_skill: str, comparison: Comparison,
                prev: Sequence[Trajectory], cur: Sequence[Trajectory], step: int, epoch: int) -> SlowResult:
    """Rewrite the guidance block from the epoch comparison. `skill` of the result is the
    candidate (the trainer gates it when slow_update_gate is on); on failure it is unchanged."""
    old = guidance(skill)
    messages = prompt_messages(
        "slow_update", **comparison.counts(), diff=_diff(previous_skill, skill), guidance=old or "(none yet)",
        regressed_cases=_cases(comparison.regressed, cur, skill),
        failing_cases=_cases(comparison.persistent_failure, cur, skill), skill=clip(skill.strip(), SKILL_CHARS))
    bullets, reply = optimizer.complete_json(messages, stage="slow_update", step=step,
                                             schema=_schema("slow_update", "guidance", MAX_BULLETS),
                                             validate=lambda obj: _bullets(obj, "guidance", MAX_BULLETS))
    if bullets is None:
        return SlowResult(guidance=old, skill=skill, ok=False,
                          error=reply.error or f"epoch {epoch}: unusable slow-update reply")
    text = "\n".join(f"- {b}" for b in bullets)
    return SlowResult(guidance=text, skill=with_guidance(skill, text), ok=True)


def meta_update(optimizer, *, meta_skill: str, comparison: Comparison | None, accepted_edits: Sequence[Edit],
                rejected_edits: Sequence[RejectedEdit], step: int, epoch: int) -> MetaResult:
    """Rewrite the optimizer's strategy notes; on failure the old notes stay. `comparison` is
    None when no slow update compared the epoch's skills (the notes learn from the edits alone)."""
    accepted = "\n".join(f"- {describe_edit(e)}" for e in list(accepted_edits)[-12:]) or "(none)"
    rejected = "\n".join(f"- {describe_edit(r.edit)} ({r.reason} {r.score_before:.3f} -> {r.score_after:.3f})"
                         for r in list(rejected_edits)[-12:]) or "(none)"
    if comparison is None:
        evidence = "THIS EPOCH: the skills were not compared on the same tasks (no slow update)."
    else:
        k = comparison.counts()
        evidence = (f"THIS EPOCH on the same tasks: improved {k['improved']}, regressed {k['regressed']}, "
                    f"still failing {k['persistent']}, still right {k['stable']}.")
    messages = prompt_messages("meta_skill", notes=meta_skill.strip() or "(none yet)", evidence=evidence,
                               accepted=accepted, rejected=rejected)
    notes, reply = optimizer.complete_json(messages, stage="meta", step=step,
                                           schema=_schema("meta_skill", "notes", MAX_NOTES),
                                           validate=lambda obj: _bullets(obj, "notes", MAX_NOTES))
    if notes is None:
        return MetaResult(content=meta_skill, ok=False,
                          error=reply.error or f"epoch {epoch}: unusable meta-skill reply")
    return MetaResult(content="\n".join(f"- {n}" for n in notes), ok=True)

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

from . import window
from .echo import echoes
from .fitting import complete_fitted
from .patch import Edit
from .prompts import clip, fixed_text, prompt_messages
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
EDIT_CHARS = 160  # an accepted or rejected edit in the meta prompt: enough to tell what it did
# The meta prompt's shapes, largest first: the latest edits of each list, fewer as the room shrinks.
META_SHAPES = (window.Shape(EDIT_CHARS, 12), window.Shape(EDIT_CHARS, 6), window.Shape(EDIT_CHARS, 3))


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


def _bullets(obj: object, key: str, limit: int, instructions: str = "") -> list[str]:
    """The reply's bullet list, cleaned, less the bullets that copy the prompt's own
    `instructions` back when given (a small model fills the example bullet in with its own
    words for the slots); raises ValueError (-> one repair) when nothing usable is left.

    The slow update gives none: its guidance reaches the target, and the gate is its judge. In
    the word-problems run at b04267d a guidance block that copied this prompt's example bullet
    was kept 6-1 on selection and is in the best skill; an echo filter would have dropped it
    unmeasured. The meta notes only reach the optimizer, which gains nothing from its own
    prompt read back."""
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
    kept = [b for b in out if not echoes(b, instructions)]
    if not kept:
        raise ValueError(f"every entry of '{key}' repeats this prompt's instructions; write what the cases "
                         "themselves show, in their own words")
    return kept[:limit]


def _schema(title: str, key: str, limit: int) -> dict:
    return {"title": title, "type": "object", "required": [key], "additionalProperties": False,
            "properties": {key: {"type": "array", "maxItems": limit,
                                 "items": {"type": "string", "maxLength": BULLET_CHARS}}}}


def _cases(ids: Sequence[str], trajs: Sequence[Trajectory], skill: str, shape: window.Shape) -> str:
    by_id = {t.item_id: t for t in trajs}
    shown = [by_id[i] for i in ids if i in by_id][:shape.cases]
    more = len(ids) - len(shown)
    text = "\n".join(format_case(n, t, shape.case_chars, skill) for n, t in enumerate(shown, 1))
    return (text + (f"\n(and {more} more)" if more > 0 else "")) or "(none)"


def _diff(old: str, new: str, limit: int) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "previous", "current", lineterm="", n=1))
    return clip("\n".join(lines[2:]), limit) or "(no change)"


def _skill_view(skill: str, shape: window.Shape) -> str:
    """The skill as the slow update shows it; a shape that clips lines also halves the whole."""
    if not shape.line_chars:
        return clip(skill.strip(), SKILL_CHARS)
    return clip("\n".join(clip(line, shape.line_chars) for line in skill.strip().splitlines()), SKILL_CHARS // 2)


def _slow_note(shape: window.Shape) -> str:
    note = shape.describe(EXAMPLES, CASE_CHARS)  # cases: those shown of each kind
    return note + ", the skill and the diff at half their length" if shape.line_chars else note


def slow_update(optimizer, *, skill: str, previous_skill: str, comparison: Comparison,
                prev: Sequence[Trajectory], cur: Sequence[Trajectory], step: int, epoch: int) -> SlowResult:
    """Rewrite the guidance block from the epoch comparison. `skill` of the result is the
    candidate (the trainer gates it when slow_update_gate is on); on failure it is unchanged."""
    old = guidance(skill)

    def build(shape: window.Shape) -> list[dict]:
        return prompt_messages(
            "slow_update", **comparison.counts(), guidance=old or "(none yet)",
            diff=_diff(previous_skill, skill, DIFF_CHARS // 2 if shape.line_chars else DIFF_CHARS),
            regressed_cases=_cases(comparison.regressed, cur, skill, shape),
            failing_cases=_cases(comparison.persistent_failure, cur, skill, shape), skill=_skill_view(skill, shape))

    _, bullets, reply = complete_fitted(optimizer, window.ladder(CASE_CHARS, EXAMPLES), build, describe=_slow_note,
                                        stage="slow_update", step=step,
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
    if comparison is None:
        evidence = "THIS EPOCH: the skills were not compared on the same tasks (no slow update)."
    else:
        k = comparison.counts()
        evidence = (f"THIS EPOCH on the same tasks: improved {k['improved']}, regressed {k['regressed']}, "
                    f"still failing {k['persistent']}, still right {k['stable']}.")

    def build(shape: window.Shape) -> list[dict]:  # shape.cases: the latest edits shown of each list
        accepted = "\n".join(f"- {describe_edit(e, shape.case_chars)}"
                             for e in list(accepted_edits)[-shape.cases:]) or "(none)"
        rejected = "\n".join(f"- {describe_edit(r.edit, shape.case_chars)} "
                             f"({r.reason} {r.score_before:.3f} -> {r.score_after:.3f})"
                             for r in list(rejected_edits)[-shape.cases:]) or "(none)"
        return prompt_messages("meta_skill", notes=meta_skill.strip() or "(none yet)", evidence=evidence,
                               accepted=accepted, rejected=rejected)

    def note(shape: window.Shape) -> str:
        return "" if shape == META_SHAPES[0] else f"{window.FITTED}: the last {shape.cases} edits of each list"

    _, notes, reply = complete_fitted(optimizer, META_SHAPES, build, describe=note, stage="meta", step=step,
                                      schema=_schema("meta_skill", "notes", MAX_NOTES),
                                      validate=lambda obj: _bullets(obj, "notes", MAX_NOTES, fixed_text("meta_skill")))
    if notes is None:
        return MetaResult(content=meta_skill, ok=False,
                          error=reply.error or f"epoch {epoch}: unusable meta-skill reply")
    return MetaResult(content="\n".join(f"- {n}" for n in notes), ok=True)

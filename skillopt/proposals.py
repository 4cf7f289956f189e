"""What the optimizer proposes: the reflection reply's JSON schema and its validation
into edits and dropped edits.  (pure: no I/O)

A bad single edit never wastes the whole reply: it is dropped with a DropReason and kept,
as proposed, for the run's record. An edit by line number carries the line's number and
text (patch applies it at that line); an edit is never cut to fit: one that is too long
is dropped whole, since a cut rule would say something else.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Sequence

from .echo import echoes
from .models.jsonreply import as_int
from .patch import OPS, Edit
from .prompts import clip
from .skill import find_sections
from .skill import lines as skill_lines
from .vocabulary import DropReason

CONTENT_CHARS = 600  # longest edit text accepted: rules are sentences, not essays
SUMMARY_CHARS = 300
RATIONALE_CHARS = 200
EXTRA_EDITS = 2  # the schema allows a few more than the budget: surplus feeds support counting, clip decides
# a copied template slot, never a rule
_PLACEHOLDER = re.compile(r"<(?:what|which|the|a|an|expected|some|one|words?|shared|queue)\b[^<>]{0,60}>", re.I)
# A text cut off mid-sentence ends on a mark that promises more ("The skill should,"; "Answer:"; "air -");
# a small model that runs out of words leaves one behind, and applied it only adds noise to the skill.
# One cut after a word inside brackets ("(see") is told by its unclosed bracket (_cut_off).
_DANGLING = re.compile(r"(?:[,;:(\[{]|\s[-\u2013\u2014])\s*$")


@dataclass(frozen=True)
class DroppedEdit:
    """A proposed edit the reflection discarded before the edit pipeline, and why."""
    edit: Edit  # as proposed: its content is never cut, a malformed one holds what text it had
    reason: DropReason
    detail: str  # e.g. "line 57 does not exist (the skill has 40 lines)"

    def __str__(self) -> str:  # the model call's record lists the parts of a reply it discarded as text
        return f"{self.reason}: {self.detail}"


def reflect_schema(budget: int, sections: Sequence[str], n_lines: int) -> dict:
    edit = {"type": "object", "additionalProperties": False,
            "required": ["op", "section", "line", "content", "rationale"],
            "properties": {"op": {"type": "string", "enum": list(OPS)},
                           "section": {"type": "string", "enum": [*sections, ""]},
                           "line": {"type": "integer", "minimum": 0, "maximum": max(n_lines, 0)},
                           "content": {"type": "string", "maxLength": CONTENT_CHARS},
                           "rationale": {"type": "string", "maxLength": RATIONALE_CHARS}}}
    return {"title": "reflection", "type": "object", "additionalProperties": False,
            "required": ["summary", "edits"],
            "properties": {"summary": {"type": "string", "maxLength": SUMMARY_CHARS},
                           "edits": {"type": "array", "maxItems": max(budget, 0) + EXTRA_EDITS, "items": edit}}}


@dataclass(frozen=True)
class _Parsed:
    summary: str
    edits: tuple[Edit, ...]
    dropped: tuple[DroppedEdit, ...]  # also read by the model layer, which notes them on the call's record


def parse_edits(obj: object, skill: str, kind: str, cap: int, instructions: str = "") -> _Parsed:
    """Validate a reflection reply; the reply's shape is fatal (ValueError: repair), a bad
    single edit only drops that edit, so one bad line number never wastes the whole call.
    `instructions`: the prompt's fixed wording (prompts.fixed_text) and the tasks' shared lines;
    an edit mostly made of them is dropped as an echo."""
    if not isinstance(obj, dict):
        raise ValueError("the reply must be a JSON object with 'summary' and 'edits'")
    raw = obj.get("edits")
    if not isinstance(raw, list):
        raise ValueError("'edits' must be a list (use [] for no edits)")
    summary = obj.get("summary", "")
    summary = clip(summary.strip(), SUMMARY_CHARS) if isinstance(summary, str) else ""
    texts = [line for _, _, line in skill_lines(skill)]
    edits: list[Edit] = []
    dropped: list[DroppedEdit] = []
    for e in raw:
        one = _parse_one(e, texts, skill, kind, instructions)
        if isinstance(one, Edit) and len(edits) >= cap:
            one = DroppedEdit(one, "over_cap", f"over the limit of {cap} edits per reply")
        (dropped if isinstance(one, DroppedEdit) else edits).append(one)
    return _Parsed(summary=summary, edits=tuple(edits), dropped=tuple(dropped))


def _parse_one(e: object, texts: Sequence[str], skill: str, kind: str, instructions: str) -> Edit | DroppedEdit:
    """One entry of a reply's edits: the Edit, or what was proposed and why it is dropped.
    An edit by line number carries the line's number and text, so patch applies it there."""
    if not isinstance(e, dict) or e.get("op") not in OPS:
        return DroppedEdit(_as_proposed(e, kind), "malformed", f"op must be one of {', '.join(OPS)}")
    op, content, line = e["op"], e.get("content", ""), as_int(e.get("line", 0))
    if not isinstance(content, str) or line is None or line < 0:
        return DroppedEdit(_as_proposed(e, kind), "malformed", "'content' must be text and 'line' a line number")
    section = e.get("section", "")
    section = section.strip() if isinstance(section, str) and op == "add" else ""
    rationale = e.get("rationale", "")
    by_line = 0 < line <= len(texts) and not section  # a heading is the sturdier anchor of an add
    edit = Edit(op=op, target=texts[line - 1] if by_line else "", content=content.strip() if op != "delete" else "",
                section=section, rationale=clip(rationale.strip(), RATIONALE_CHARS) if isinstance(rationale, str)
                else "", source=kind, line=line if by_line else 0)
    problem = _problem(edit, line, len(texts), skill, instructions)
    return DroppedEdit(edit, *problem) if problem else edit


def _problem(edit: Edit, line: int, n_lines: int, skill: str, instructions: str) -> tuple[DropReason, str] | None:
    if edit.op != "delete" and not edit.content:
        return "malformed", f"{edit.op} without content"
    if line > n_lines:
        return "bad_anchor", f"line {line} does not exist (the skill has {n_lines} lines)"
    if edit.line and not edit.target.strip():
        return "bad_anchor", f"line {line} is blank"
    if edit.op in ("replace", "delete") and not edit.line:
        return "bad_anchor", f"{edit.op} needs the number of the line to change"
    if edit.section and not find_sections(skill, edit.section):
        return "bad_anchor", f"section \"{edit.section}\" does not exist"
    # Length first: a runaway list that the reply's token limit cut off ends mid-sentence too,
    # and "too_long" says why it was cut.
    if len(edit.content) > CONTENT_CHARS:  # dropped whole: a cut rule would say something else
        return "too_long", f"content of {len(edit.content)} characters exceeds {CONTENT_CHARS}"
    cut = _cut_off(edit.content)
    if cut:
        return "malformed", f"content ends mid-sentence ({cut}): a cut-off fragment says no rule"
    slot = _PLACEHOLDER.search(edit.content)
    if slot:
        return "template_slot", f"content still holds a template placeholder ({slot.group(0)})"
    if instructions and echoes(edit.content, instructions):
        return "echo", ("content is mostly the reflection prompt's own wording (its instructions or what every "
                        "task already says), copied back")
    return None


def _cut_off(content: str) -> str:
    """How `content` shows it was cut off mid-sentence, or "": it ends on a mark that promises more,
    or opens a bracket it never closes ("1) first" closes one it never opened, which is fine)."""
    end = _DANGLING.search(content)
    if end:
        return f"on \"{end.group(0).strip()}\""
    unclosed = next((o for o, c in ("()", "[]", "{}") if content.count(o) > content.count(c)), "")
    return f"an unclosed \"{unclosed}\"" if unclosed else ""


def _as_proposed(e: object, kind: str) -> Edit:
    """A malformed reply entry as an Edit holding whatever text it has, for the record."""
    if not isinstance(e, dict):
        return Edit(op="", content=json.dumps(e), source=kind)

    def text(key: str) -> str:
        value = e.get(key, "")
        return value if isinstance(value, str) else json.dumps(value)
    return Edit(op=text("op"), content=text("content"), section=text("section"), rationale=text("rationale"),
                source=kind)

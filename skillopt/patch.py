"""Edits (the gradients) and applying them to a skill document.  (pure: no I/O)

Applying is deterministic: each edit is anchored in the text left by the previous
one, and every edit gets a status. An edit whose anchor is missing or ambiguous is
left unapplied with that status — never appended somewhere else, because a rule in
the wrong place silently changes what the skill means. An edit chosen by line number
is anchored at that line, followed through the shifts of the edits before it, and
only if the line still holds the text it was chosen by: duplicate lines are no anchor
problem for it, and a changed line is never searched for elsewhere.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from . import skill as sk
# Anchor, find_anchor and FUZZY_MARGIN stay importable from here: they were part of this module.
from .anchor import PAST_END, Anchor, at_line, find_anchor, follow
from .anchor import norm as _norm, overlaps as _overlaps
from .vocabulary import EditStatus

OPS = ("add", "replace", "delete")
SOURCES = ("failure", "success", "human", "slow_update", "example", "template", "rule", "ablation")
_NO_SPAN = (-1, -1)  # an unapplied edit replaced nothing


@dataclass(frozen=True)
class Edit:
    op: str  # add | replace | delete
    target: str = ""  # text to replace/delete, or the text an `add` goes after
    content: str = ""  # new text (add/replace)
    section: str = ""  # heading path like "Rules > Dates" for `add`
    rationale: str = ""
    source: str = "failure"  # failure | success | human | slow_update | example (worked examples)
    support: int = 1  # number of minibatches that proposed it (computed by transforms)
    line: int = 0  # 1-based line of the skill it was chosen by, whose text is `target` (0: anchored by text)


@dataclass(frozen=True)
class EditReport:
    edit: Edit
    status: EditStatus  # only "applied" changed the text
    detail: str = ""  # e.g. "fuzzy match 0.91", "2 matches"


@dataclass(frozen=True)
class PatchResult:
    text: str
    reports: tuple[EditReport, ...]
    diff: str  # unified diff old -> new

    @property
    def applied(self) -> tuple[Edit, ...]:
        return tuple(r.edit for r in self.reports if r.status == "applied")


# ---------------------------------------------------------------- anchoring

def _locate(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]], row: int) -> Anchor:
    """Where an edit's target is: by position when it was chosen by line number, else by its text."""
    if edit.line > 0:
        return at_line(text, edit.line, edit.target, row, protected)
    return find_anchor(text, edit.target, threshold=threshold, protected=protected)


# ---------------------------------------------------------------- formatting helpers

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_BULLET_ONLY = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*$")


def _needs_blank(prev: str, nxt: str) -> bool:
    """Blank line between two adjacent lines so Markdown keeps them as separate blocks.

    Headings and the protected markers start a new block on their own, so no blank
    line is forced next to them (the document keeps its existing spacing).
    """
    if not prev.strip() or not nxt.strip() or sk.is_heading(prev) or sk.is_heading(nxt):
        return False
    if nxt.strip().startswith(sk.MARKERS) or prev.strip().endswith(sk.MARKERS):
        return False
    return not (_LIST_ITEM.match(prev) and _LIST_ITEM.match(nxt))


def _line_at(text: str, pos: int) -> tuple[int, int]:
    """(start, end-including-newline) of the line holding offset `pos`."""
    start = text.rfind("\n", 0, pos) + 1
    nl = text.find("\n", pos)
    return start, (len(text) if nl < 0 else nl + 1)


def _clean_block(content: str) -> list[str]:
    rows = content.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n")
    return [r.rstrip() for r in rows]


def _insert_block(text: str, pos: int, content: str) -> str:
    """Insert `content` as whole lines at line boundary `pos`, keeping block separation."""
    nl = sk.newline_of(text)
    block = _clean_block(content)
    before, after = text[:pos], text[pos:]
    prev_line = before[:-1].rsplit("\n", 1)[-1].rstrip("\r") if before.endswith("\n") else before.rsplit("\n", 1)[-1]
    next_line = after.split("\n", 1)[0].rstrip("\r")
    head = nl if before and not before.endswith("\n") else ""
    if _needs_blank(prev_line, block[0]):
        head += nl
    tail = nl + (nl if _needs_blank(block[-1], next_line) else "")
    return before + head + nl.join(block) + tail + after


def _after_last_content(text: str, limit: int, floor: int) -> int:
    """The line boundary just after the last non-blank line in text[floor:limit]."""
    chunk = text[floor:limit]
    stripped = chunk.rstrip()
    if not stripped:
        return floor
    end = floor + len(stripped)
    nl = text.find("\n", end)
    return min(limit, len(text) if nl < 0 else nl + 1)


# ---------------------------------------------------------------- the three ops

def _dup_key(text: str) -> str:
    rows = [_LIST_ITEM.sub("", r) for r in text.replace("\r\n", "\n").split("\n")]
    return " ".join(" ".join(rows).split()).casefold()


_Done = tuple[str, EditReport, tuple[int, int]]  # the text, the report, the span of the old text replaced


def _unchanged(text: str, edit: Edit, status: EditStatus, detail: str) -> _Done:
    return text, EditReport(edit=edit, status=status, detail=detail), _NO_SPAN


def _add(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]], row: int) -> _Done:
    if not edit.content.strip():
        return _unchanged(text, edit, "noop", "empty content")
    key = _dup_key(edit.content)
    if key and key in _dup_key(text):
        return _unchanged(text, edit, "duplicate", "content already in the skill")
    how = fallback = ""
    if edit.section.strip():
        found = sk.find_sections(text, edit.section)
        if len(found) == 1:
            sec = found[0]
            if _overlaps(sec.start, sec.content_start, protected):
                return _unchanged(text, edit, "protected", f"section '{edit.section}' is inside a protected block")
            limit = min([sec.own_end] + [s for s, _ in protected if sec.content_start <= s < sec.own_end])
            pos = _after_last_content(text, limit, sec.content_start)
            how = f"end of section '{sec.path_str}'"
        elif not edit.target.strip():
            if found:
                return _unchanged(text, edit, "ambiguous_anchor",
                                  f"section '{edit.section}' matches {len(found)} headings")
            return _unchanged(text, edit, "anchor_not_found", f"section '{edit.section}' not found")
        else:
            fallback = f"section '{edit.section}' {'ambiguous' if found else 'not found'}; "
    if not how and edit.target.strip():
        anchor = _locate(text, edit, threshold, protected, row)
        if not anchor.found:
            return _unchanged(text, edit, anchor.status, anchor.detail)
        pos = _line_at(text, max(anchor.start, anchor.end - 1))[1]
        how = f"{fallback}after target ({anchor.detail})"
    if not how:
        limit = sk.body_end(text)
        pos = _after_last_content(text, limit, 0)
        how = "end of body"
    if _overlaps(pos, pos, protected):
        return _unchanged(text, edit, "protected", "insertion point is inside a protected block")
    return _insert_block(text, pos, edit.content), EditReport(edit=edit, status="applied", detail=how), (pos, pos)


def _replace(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]], row: int) -> _Done:
    if _norm(edit.content) == _norm(edit.target):
        return _unchanged(text, edit, "noop", "content equals target")
    anchor = _locate(text, edit, threshold, protected, row)
    if not anchor.found:
        return _unchanged(text, edit, anchor.status, anchor.detail)
    matched = text[anchor.start:anchor.end]
    nl = sk.newline_of(text)
    new = nl.join(_clean_block(edit.content)) if "\n" in edit.content.strip("\r\n") else edit.content.strip("\r\n")
    if matched.endswith("\n"):
        new += nl
    report = EditReport(edit=edit, status="applied", detail=anchor.detail)
    return text[:anchor.start] + new + text[anchor.end:], report, (anchor.start, anchor.end)


def _delete(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]], row: int) -> _Done:
    anchor = _locate(text, edit, threshold, protected, row)
    if not anchor.found:
        return _unchanged(text, edit, anchor.status, anchor.detail)
    start, end = anchor.start, anchor.end
    first_start, _ = _line_at(text, start)
    _, last_end = _line_at(text, max(start, end - 1))
    # Deleting all of a line's text (or all but its bullet) removes the line itself,
    # so no empty bullet is left behind; and a paragraph cut out from between two
    # blank lines takes one of them along so blank lines do not pile up.
    if _BULLET_ONLY.match(text[first_start:start]) and not text[end:last_end].strip():
        start, end = first_start, last_end
        blank_before = start == 0 or text[:start].endswith(("\n\n", "\n\r\n"))
        if blank_before and end < len(text):
            nxt_end = _line_at(text, end)[1]
            if not text[end:nxt_end].strip():
                end = nxt_end
    if _overlaps(start, end, protected):
        return _unchanged(text, edit, "protected", "deletion would touch a protected block")
    return text[:start] + text[end:], EditReport(edit=edit, status="applied", detail=anchor.detail), (start, end)


_OPS = {"add": _add, "replace": _replace, "delete": _delete}


def apply_edit(text: str, edit: Edit, *, allow_protected: bool = False,
               fuzzy_threshold: float = 0.85) -> tuple[str, EditReport]:
    """Apply one edit; the text is unchanged unless the report's status is "applied"."""
    new, report, _ = _apply(text, edit, edit.line - 1, allow_protected, fuzzy_threshold)
    return new, report


def _apply(text: str, edit: Edit, row: int, allow_protected: bool, fuzzy_threshold: float) -> _Done:
    """apply_edit, with the row (0-based, in `text`) of the line an edit by line number names."""
    op = _OPS.get(edit.op)
    if op is None:
        return _unchanged(text, edit, "noop", f"unknown op {edit.op!r}")
    if edit.op in ("replace", "delete") and not edit.target.strip():
        return _unchanged(text, edit, "noop", "empty target")
    protected = [] if allow_protected else sk.protected_spans(text)
    if not allow_protected and any(m in edit.content for m in sk.MARKERS):
        return _unchanged(text, edit, "protected", "content contains protected-block markers")
    new, report, span = op(text, edit, fuzzy_threshold, protected, row)
    if report.status == "applied" and new == text:
        return _unchanged(text, edit, "noop", "result identical to input")
    # Safety net: whatever the anchoring did, a protected block's text must come out unchanged.
    if report.status == "applied" and not allow_protected and _blocks(new) != _blocks(text):
        return _unchanged(text, edit, "protected", "edit would change a protected block")
    return new, report, span


def _blocks(text: str) -> list[str]:
    return [text[s:e] for s, e in sk.protected_spans(text)]


def apply_edits(text: str, edits: Iterable[Edit], *, allow_protected: bool = False,
                fuzzy_threshold: float = 0.85) -> PatchResult:
    """Apply `edits` in order, each to the result of the previous; one report per edit.

    An edit's `line` numbers the lines of `text`: the edits before it may have moved that
    line, so each original line's current row is followed through every applied edit."""
    current = text
    rows = list(range(len(sk.lines(text))))  # original line -> its row in `current`
    reports = []
    for edit in edits:
        row = rows[edit.line - 1] if 0 < edit.line <= len(rows) else PAST_END
        new, report, span = _apply(current, edit, row, allow_protected, fuzzy_threshold)
        if report.status == "applied":
            rows = follow(rows, current, new, span)
        current = new
        reports.append(report)
    return PatchResult(text=current, reports=tuple(reports), diff=unified_diff(text, current))


def unified_diff(old: str, new: str, old_name: str = "before", new_name: str = "after") -> str:
    if old == new:
        return ""
    out = []
    for line in difflib.unified_diff(_diff_lines(old), _diff_lines(new), old_name, new_name):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_lines(text: str) -> list[str]:
    return [row for row in re.findall(r"[^\n]*\n|[^\n]+$", text)]

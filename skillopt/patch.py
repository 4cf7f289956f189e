"""Edits (the gradients) and applying them to a skill document.  (pure: no I/O)

Applying is deterministic: each edit is anchored in the text left by the previous
one, and every edit gets a status. An edit whose anchor is missing or ambiguous is
left unapplied with that status — never appended somewhere else, because a rule in
the wrong place silently changes what the skill means.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from . import skill as sk
from .vocabulary import EditStatus

OPS = ("add", "replace", "delete")
SOURCES = ("failure", "success", "human", "slow_update")

# A fuzzy anchor must beat the next-best non-overlapping window by this much to count as unique.
FUZZY_MARGIN = 0.05


@dataclass(frozen=True)
class Edit:
    op: str  # add | replace | delete
    target: str = ""  # text to replace/delete, or the text an `add` goes after
    content: str = ""  # new text (add/replace)
    section: str = ""  # heading path like "Rules > Dates" for `add`
    rationale: str = ""
    source: str = "failure"  # failure | success | human | slow_update
    support: int = 1  # number of minibatches that proposed it (computed by transforms)


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


@dataclass(frozen=True)
class Anchor:
    """Where a target was found (status "applied") or why it was not (any other status)."""
    status: EditStatus
    start: int = -1
    end: int = -1
    detail: str = ""

    @property
    def found(self) -> bool:
        return self.status == "applied"


# ---------------------------------------------------------------- anchoring

def _overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    # An empty range (an insertion point) touches a block only strictly inside it.
    if start == end:
        return any(s < start < e for s, e in spans)
    return any(start < e and end > s for s, e in spans)


def _occurrences(haystack: str, needle: str) -> list[int]:
    found, pos = [], haystack.find(needle)
    while pos >= 0:
        found.append(pos)
        pos = haystack.find(needle, pos + 1)
    return found


def _collapse(text: str) -> tuple[str, list[int]]:
    """Whitespace runs collapsed to one space, plus each output char's offset in `text`."""
    out, where = [], []
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                where.append(i)
            prev_space = True
        else:
            out.append(ch)
            where.append(i)
            prev_space = False
    return "".join(out), where


def _norm(text: str) -> str:
    return " ".join(text.split())


def _pick(kind: str, spans: list[tuple[int, int]], protected: list[tuple[int, int]]) -> Anchor | None:
    """Choose among one stage's matches; matches inside protected blocks are not candidates."""
    if not spans:
        return None
    free = [s for s in spans if not _overlaps(s[0], s[1], protected)]
    if not free:
        return Anchor(status="protected", start=spans[0][0], end=spans[0][1],
                      detail=f"{kind} match is inside a protected block")
    if len(free) > 1:
        return Anchor(status="ambiguous_anchor", detail=f"{len(free)} {kind} matches")
    return Anchor(status="applied", start=free[0][0], end=free[0][1], detail=f"{kind} match")


def _fuzzy(text: str, target: str, threshold: float, protected: list[tuple[int, int]]) -> Anchor:
    want = _norm(target)
    rows = sk.lines(text)
    k = target.strip().count("\n") + 1
    scored: list[tuple[float, int, int]] = []  # (ratio, first line, last line)
    matcher = difflib.SequenceMatcher(None, "", want, autojunk=False)  # indexes `want` once
    for size in sorted({max(1, k - 1), k, k + 1}):
        for i in range(len(rows) - size + 1):
            window = _norm(" ".join(r[2] for r in rows[i:i + size]))
            if not window:
                continue
            matcher.set_seq1(window)
            # quick_ratio() bounds ratio() from above: skip windows that cannot even be a runner-up.
            if matcher.real_quick_ratio() < threshold - FUZZY_MARGIN or matcher.quick_ratio() < threshold - FUZZY_MARGIN:
                continue
            scored.append((matcher.ratio(), i, i + size - 1))
    spans = {(i, j): (rows[i][0], rows[j][0] + len(rows[j][2])) for _, i, j in scored}
    free = [c for c in scored if not _overlaps(*spans[(c[1], c[2])], protected)]
    # Ties on ratio go to the earlier, shorter window so the result never depends on set order.
    free.sort(key=lambda c: (-c[0], c[1], c[2]))
    if not free or free[0][0] < threshold:
        if any(c[0] >= threshold for c in scored):
            return Anchor(status="protected", detail="fuzzy match is inside a protected block")
        if not free:
            return Anchor(status="anchor_not_found", detail="no exact, whitespace-insensitive or similar text")
        return Anchor(status="anchor_not_found", detail=f"no match (best fuzzy {free[0][0]:.2f} < {threshold:.2f})")
    best = free[0]
    rival = next((c for c in free[1:] if c[2] < best[1] or c[1] > best[2]), None)
    if rival is not None and rival[0] > best[0] - FUZZY_MARGIN:
        return Anchor(status="ambiguous_anchor", detail=f"fuzzy matches {best[0]:.2f} and {rival[0]:.2f} too close")
    start, end = spans[(best[1], best[2])]
    return Anchor(status="applied", start=start, end=end, detail=f"fuzzy match {best[0]:.2f}")


def find_anchor(text: str, target: str, *, threshold: float = 0.85,
                protected: list[tuple[int, int]] | None = None) -> Anchor:
    """Locate `target`: exact, then whitespace-insensitive, then a unique fuzzy window."""
    protected = sk.protected_spans(text) if protected is None else protected
    if not target.strip():
        return Anchor(status="noop", detail="empty target")
    exact = [(p, p + len(target)) for p in _occurrences(text, target)]
    picked = _pick("exact", exact, protected)
    if picked:
        return picked
    flat, where = _collapse(text)
    needle = _norm(target)
    loose = [(where[p], where[p + len(needle) - 1] + 1) for p in _occurrences(flat, needle)]
    picked = _pick("whitespace-insensitive", loose, protected)
    if picked:
        return picked
    return _fuzzy(text, target, threshold, protected)


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


def _add(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]]) -> tuple[str, EditReport]:
    if not edit.content.strip():
        return text, EditReport(edit=edit, status="noop", detail="empty content")
    key = _dup_key(edit.content)
    if key and key in _dup_key(text):
        return text, EditReport(edit=edit, status="duplicate", detail="content already in the skill")
    how = fallback = ""
    if edit.section.strip():
        found = sk.find_sections(text, edit.section)
        if len(found) == 1:
            sec = found[0]
            if _overlaps(sec.start, sec.content_start, protected):
                return text, EditReport(edit=edit, status="protected",
                                        detail=f"section '{edit.section}' is inside a protected block")
            limit = min([sec.own_end] + [s for s, _ in protected if sec.content_start <= s < sec.own_end])
            pos = _after_last_content(text, limit, sec.content_start)
            how = f"end of section '{sec.path_str}'"
        elif not edit.target.strip():
            if found:
                return text, EditReport(edit=edit, status="ambiguous_anchor",
                                        detail=f"section '{edit.section}' matches {len(found)} headings")
            return text, EditReport(edit=edit, status="anchor_not_found", detail=f"section '{edit.section}' not found")
        else:
            fallback = f"section '{edit.section}' {'ambiguous' if found else 'not found'}; "
    if not how and edit.target.strip():
        anchor = find_anchor(text, edit.target, threshold=threshold, protected=protected)
        if not anchor.found:
            return text, EditReport(edit=edit, status=anchor.status, detail=anchor.detail)
        pos = _line_at(text, max(anchor.start, anchor.end - 1))[1]
        how = f"{fallback}after target ({anchor.detail})"
    if not how:
        limit = sk.body_end(text)
        pos = _after_last_content(text, limit, 0)
        how = "end of body"
    if _overlaps(pos, pos, protected):
        return text, EditReport(edit=edit, status="protected", detail="insertion point is inside a protected block")
    return _insert_block(text, pos, edit.content), EditReport(edit=edit, status="applied", detail=how)


def _replace(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]]) -> tuple[str, EditReport]:
    if _norm(edit.content) == _norm(edit.target):
        return text, EditReport(edit=edit, status="noop", detail="content equals target")
    anchor = find_anchor(text, edit.target, threshold=threshold, protected=protected)
    if not anchor.found:
        return text, EditReport(edit=edit, status=anchor.status, detail=anchor.detail)
    matched = text[anchor.start:anchor.end]
    nl = sk.newline_of(text)
    new = nl.join(_clean_block(edit.content)) if "\n" in edit.content.strip("\r\n") else edit.content.strip("\r\n")
    if matched.endswith("\n"):
        new += nl
    return text[:anchor.start] + new + text[anchor.end:], EditReport(edit=edit, status="applied", detail=anchor.detail)


def _delete(text: str, edit: Edit, threshold: float, protected: list[tuple[int, int]]) -> tuple[str, EditReport]:
    anchor = find_anchor(text, edit.target, threshold=threshold, protected=protected)
    if not anchor.found:
        return text, EditReport(edit=edit, status=anchor.status, detail=anchor.detail)
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
        return text, EditReport(edit=edit, status="protected", detail="deletion would touch a protected block")
    return text[:start] + text[end:], EditReport(edit=edit, status="applied", detail=anchor.detail)


_OPS = {"add": _add, "replace": _replace, "delete": _delete}


def apply_edit(text: str, edit: Edit, *, allow_protected: bool = False,
               fuzzy_threshold: float = 0.85) -> tuple[str, EditReport]:
    """Apply one edit; the text is unchanged unless the report's status is "applied"."""
    op = _OPS.get(edit.op)
    if op is None:
        return text, EditReport(edit=edit, status="noop", detail=f"unknown op {edit.op!r}")
    if edit.op in ("replace", "delete") and not edit.target.strip():
        return text, EditReport(edit=edit, status="noop", detail="empty target")
    protected = [] if allow_protected else sk.protected_spans(text)
    if not allow_protected and any(m in edit.content for m in sk.MARKERS):
        return text, EditReport(edit=edit, status="protected", detail="content contains protected-block markers")
    new, report = op(text, edit, fuzzy_threshold, protected)
    if report.status == "applied" and new == text:
        return text, EditReport(edit=edit, status="noop", detail="result identical to input")
    # Safety net: whatever the anchoring did, a protected block's text must come out unchanged.
    if report.status == "applied" and not allow_protected and _blocks(new) != _blocks(text):
        return text, EditReport(edit=edit, status="protected", detail="edit would change a protected block")
    return new, report


def _blocks(text: str) -> list[str]:
    return [text[s:e] for s, e in sk.protected_spans(text)]


def apply_edits(text: str, edits: Iterable[Edit], *, allow_protected: bool = False,
                fuzzy_threshold: float = 0.85) -> PatchResult:
    """Apply `edits` in order, each to the result of the previous; one report per edit."""
    current = text
    reports = []
    for edit in edits:
        current, report = apply_edit(current, edit, allow_protected=allow_protected,
                                     fuzzy_threshold=fuzzy_threshold)
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

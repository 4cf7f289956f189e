"""Anchoring: where an edit's target is in a skill document.  (pure: no I/O)

By text: exact, then whitespace-insensitive, then a unique fuzzy window, never inside a
protected block. By position: an edit chosen by line number names a line of the skill
it was proposed against; `follow` tracks where each of those lines went while earlier
edits of the same apply change the text, and `at_line` accepts the line only if it still
holds the text the edit was chosen by.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

from . import skill as sk
from .vocabulary import EditStatus

# A fuzzy anchor must beat the next-best non-overlapping window by this much to count as unique.
FUZZY_MARGIN = 0.05


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


# ---------------------------------------------------------------- by text

def overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
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


def norm(text: str) -> str:
    return " ".join(text.split())


def _pick(kind: str, spans: list[tuple[int, int]], protected: list[tuple[int, int]]) -> Anchor | None:
    """Choose among one stage's matches; matches inside protected blocks are not candidates."""
    if not spans:
        return None
    free = [s for s in spans if not overlaps(s[0], s[1], protected)]
    if not free:
        return Anchor(status="protected", start=spans[0][0], end=spans[0][1],
                      detail=f"{kind} match is inside a protected block")
    if len(free) > 1:
        return Anchor(status="ambiguous_anchor", detail=f"{len(free)} {kind} matches")
    return Anchor(status="applied", start=free[0][0], end=free[0][1], detail=f"{kind} match")


def _fuzzy(text: str, target: str, threshold: float, protected: list[tuple[int, int]]) -> Anchor:
    want = norm(target)
    rows = sk.lines(text)
    k = target.strip().count("\n") + 1
    scored: list[tuple[float, int, int]] = []  # (ratio, first line, last line)
    matcher = difflib.SequenceMatcher(None, "", want, autojunk=False)  # indexes `want` once
    floor = threshold - FUZZY_MARGIN
    for size in sorted({max(1, k - 1), k, k + 1}):
        for i in range(len(rows) - size + 1):
            window = norm(" ".join(r[2] for r in rows[i:i + size]))
            if not window:
                continue
            matcher.set_seq1(window)
            # quick_ratio() bounds ratio() from above: skip windows that cannot even be a runner-up.
            if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
                continue
            scored.append((matcher.ratio(), i, i + size - 1))
    spans = {(i, j): (rows[i][0], rows[j][0] + len(rows[j][2])) for _, i, j in scored}
    free = [c for c in scored if not overlaps(*spans[(c[1], c[2])], protected)]
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
    needle = norm(target)
    loose = [(where[p], where[p + len(needle) - 1] + 1) for p in _occurrences(flat, needle)]
    picked = _pick("whitespace-insensitive", loose, protected)
    if picked:
        return picked
    return _fuzzy(text, target, threshold, protected)


# ---------------------------------------------------------------- by position

GONE = -1  # the row of an original line that an earlier edit of the same apply changed
PAST_END = -2  # the row of a line number the original skill does not have


def at_line(text: str, line: int, target: str, row: int, protected: list[tuple[int, int]]) -> Anchor:
    """Line `line` of the skill an edit was chosen by, now at `row` (0-based, in `text`), if it
    still holds `target`. Never searched for elsewhere: a line by number is that line or nothing."""
    rows = sk.lines(text)
    if row == GONE:
        return Anchor(status="anchor_not_found", detail=f"line {line} was changed by an earlier edit")
    if not 0 <= row < len(rows):
        return Anchor(status="anchor_not_found", detail=f"line {line} is past the end of the skill")
    start, _, now = rows[row]
    if norm(now) != norm(target):
        return Anchor(status="anchor_not_found",
                      detail=f"line {line} now reads {now[:60]!r}, not the text the edit was chosen by")
    end = start + len(now)
    moved = f" (now line {row + 1})" if row != line - 1 else ""
    if overlaps(start, end, protected):
        return Anchor(status="protected", start=start, end=end, detail=f"line {line} is in a protected block")
    return Anchor(status="applied", start=start, end=end, detail=f"line {line}{moved}")


def follow(rows: list[int], old: str, new: str, span: tuple[int, int]) -> list[int]:
    """Each original line's row after old[s:e] was replaced (giving `new`); GONE for the lines
    the edit touched. Lines before the span keep their row, lines after it shift by the lines
    the edit added or removed: positions are followed, never looked up by their text."""
    s, e = span
    n = e + len(new) - len(old)  # where the untouched rest of `old` starts in `new`
    shift = new.count("\n", 0, n) - old.count("\n", 0, e)
    at_line_start = n == 0 or new[n - 1] == "\n"
    at = sk.lines(old)
    out = []
    for r in rows:
        if r == GONE or at[r][1] <= s:
            out.append(r)
        elif at[r][0] > e or (at[r][0] == e and at_line_start):
            out.append(r + shift)
        else:
            out.append(GONE)
    return out

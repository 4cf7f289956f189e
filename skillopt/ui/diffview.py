"""Diffs of two skill versions, rendered with diff-match-patch: inline and side by side.

Both views are line diffs first: an unchanged line is always shown unchanged, whatever
changed around it. Within a changed line the difference is marked word by word, and only
when the old and the new line are alike; otherwise the old line is shown deleted and the
new one inserted, whole. So the inline view never cuts a word in two and never reads as
text that is in neither version: its kept and inserted parts, in order, are the new text,
and its kept and deleted parts are the old one.

Skill text and model output are untrusted. Every piece of text that reaches the HTML is
passed through `_esc`, which HTML-escapes it AND turns newlines into `&#10;` entities: the
whole fragment is then ONE line, so Markdown sees a single raw HTML block and never
parses the text inside it (a blank line in a skill would otherwise end the HTML block and
let `[link](javascript:…)` or `$math$` through). Only this module's own tags and fixed
styles are unescaped, which is why `st.markdown(..., unsafe_allow_html=True)` is safe here.
"""
from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass

import diff_match_patch as dmp_module

DELETE, EQUAL, INSERT = -1, 0, 1
# Colours readable in both the light and the dark Streamlit theme.
_DEL = "background:rgba(255,80,80,.28);text-decoration:line-through"
_INS = "background:rgba(60,200,90,.30);text-decoration:none"
_BOX = ("font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem;line-height:1.45;"
        "white-space:pre-wrap;word-break:break-word;border:1px solid rgba(128,128,128,.35);"
        "border-radius:6px;padding:.6rem;max-height:{h}px;overflow:auto")
_CELL = "vertical-align:top;padding:0 .4rem;white-space:pre-wrap;word-break:break-word;border:none"
_NUM = "vertical-align:top;padding:0 .3rem;color:rgba(128,128,128,.9);text-align:right;user-select:none;border:none"
_ROW_BG = {"del": "background:rgba(255,80,80,.12)", "ins": "background:rgba(60,200,90,.12)", "eq": ""}
# Two lines are marked word by word only when this alike (difflib ratio over their words);
# less alike, a word-level mix of both would read as a sentence neither version holds.
ALIKE = 0.5
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")  # words, runs of white space, single punctuation marks


@dataclass(frozen=True)
class Row:
    """One row of a side-by-side diff; a number is None where that side has no line."""
    left_no: int | None
    left: str
    right_no: int | None
    right: str
    kind: str  # equal | changed | deleted | inserted | fold (a run of hidden unchanged lines)


def _esc(text: str) -> str:
    return html.escape(text, quote=True).replace("\r", "").replace("\n", "&#10;")


def _normalize(text: str | None) -> str:
    return (text or "").replace("\r\n", "\n")


def word_diff(old: str | None, new: str | None) -> list[tuple[int, str]]:
    """Word-level diff of two (short) texts: (op, text) runs that never split a word.

    White space or punctuation left between two changes is folded into them, so a change
    reads as whole phrases, not as words picked from both sides.
    """
    a, b = _TOKEN.findall(_normalize(old)), _TOKEN.findall(_normalize(new))
    ops: list[tuple[int, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append((EQUAL, "".join(a[i1:i2])))
            continue
        if i2 > i1:
            ops.append((DELETE, "".join(a[i1:i2])))
        if j2 > j1:
            ops.append((INSERT, "".join(b[j1:j2])))
    return _merge(_fold_gaps(ops))


def _fold_gaps(ops: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """An unchanged run of only spaces or punctuation between two changes joins both sides."""
    out: list[tuple[int, str]] = []
    for n, (op, text) in enumerate(ops):
        between = 0 < n < len(ops) - 1 and ops[n - 1][0] != EQUAL and ops[n + 1][0] != EQUAL
        if op == EQUAL and between and not re.search(r"\w", text) and "\n" not in text:
            out += [(DELETE, text), (INSERT, text)]
        else:
            out.append((op, text))
    return out


def _merge(ops: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Adjacent runs of one kind joined; within a change, the deletion before the insertion."""
    dels: list[str] = []
    ins: list[str] = []
    out: list[tuple[int, str]] = []
    for op, text in ops + [(EQUAL, "")]:
        if op == DELETE:
            dels.append(text)
        elif op == INSERT:
            ins.append(text)
        else:
            out += [(k, "".join(t)) for k, t in ((DELETE, dels), (INSERT, ins)) if "".join(t)]
            dels, ins = [], []
            if text:
                if out and out[-1][0] == EQUAL:
                    out[-1] = (EQUAL, out[-1][1] + text)
                else:
                    out.append((EQUAL, text))
    return out


def alike(old: str, new: str) -> bool:
    """Whether two lines are alike enough to be marked word by word."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= ALIKE


def _line_runs(old: str | None, new: str | None) -> list[tuple[int, str]]:
    """diff-match-patch's line mode: (op, text) runs of whole lines, newlines kept."""
    dmp = dmp_module.diff_match_patch()
    dmp.Diff_Timeout = 2.0  # a pathological pair degrades to a coarser diff, never hangs the page
    chars_a, chars_b, line_array = dmp.diff_linesToChars(_normalize(old), _normalize(new))
    diffs = dmp.diff_main(chars_a, chars_b, False)
    dmp.diff_charsToLines(diffs, line_array)
    return [(op, text) for op, text in diffs if text]


def inline_ops(old: str | None, new: str | None) -> list[tuple[int, str]]:
    """The inline view's (op, text) runs: unchanged lines kept whole; a changed block shown
    line by line, word by word where the old and the new line are alike, else the old line
    deleted and the new one inserted."""
    runs = _line_runs(old, new)
    ops: list[tuple[int, str]] = []
    i = 0
    while i < len(runs):
        op, text = runs[i]
        if op == EQUAL:
            ops.append((EQUAL, text))
            i += 1
            continue
        removed = text.splitlines(keepends=True) if op == DELETE else []
        added = text.splitlines(keepends=True) if op == INSERT else []
        if op == DELETE and i + 1 < len(runs) and runs[i + 1][0] == INSERT:
            added = runs[i + 1][1].splitlines(keepends=True)
            i += 1
        for k in range(max(len(removed), len(added))):
            left = removed[k] if k < len(removed) else ""
            right = added[k] if k < len(added) else ""
            if left and right and alike(left, right):
                ops += word_diff(left, right)
            else:
                ops += [(kind, t) for kind, t in ((DELETE, left), (INSERT, right)) if t]
        i += 1
    return _merge(ops)


def line_diff(old: str | None, new: str | None) -> list[tuple[int, list[str]]]:
    """Line diff via diff-match-patch's line mode: (op, lines) runs."""
    return [(op, text.splitlines()) for op, text in _line_runs(old, new)]


def stats(old: str | None, new: str | None) -> tuple[int, int]:
    """(lines added, lines removed)."""
    runs = line_diff(old, new)
    added = sum(len(lines) for op, lines in runs if op == INSERT)
    removed = sum(len(lines) for op, lines in runs if op == DELETE)
    return added, removed


def rows(old: str | None, new: str | None, context: int | None = None) -> list[Row]:
    """Side-by-side rows: a deleted run next to the inserted run that replaces it.

    With `context`, unchanged runs longer than 2*context lines fold to one "fold" row
    (its text says how many lines are hidden).
    """
    out: list[Row] = []
    ln = rn = 1
    runs = line_diff(old, new)
    i = 0
    while i < len(runs):
        op, lines = runs[i]
        if op == EQUAL:
            out += _equal_rows(lines, ln, rn, context, first=i == 0, last=i == len(runs) - 1)
            ln += len(lines)
            rn += len(lines)
            i += 1
            continue
        deleted = lines if op == DELETE else []
        inserted = lines if op == INSERT else []
        if op == DELETE and i + 1 < len(runs) and runs[i + 1][0] == INSERT:
            inserted = runs[i + 1][1]
            i += 1
        for k in range(max(len(deleted), len(inserted))):
            left = deleted[k] if k < len(deleted) else None
            right = inserted[k] if k < len(inserted) else None
            kind = "changed" if left is not None and right is not None else ("deleted" if right is None else "inserted")
            out.append(Row(ln if left is not None else None, left or "", rn if right is not None else None,
                           right or "", kind))
            ln += left is not None
            rn += right is not None
        i += 1
    return out


def _equal_rows(lines: list[str], ln: int, rn: int, context: int | None, *, first: bool, last: bool) -> list[Row]:
    keep_head = 0 if first else (context or 0)
    keep_tail = 0 if last else (context or 0)
    if context is None or len(lines) <= keep_head + keep_tail + 1:
        return [Row(ln + k, line, rn + k, line, "equal") for k, line in enumerate(lines)]
    hidden = len(lines) - keep_head - keep_tail
    head = [Row(ln + k, lines[k], rn + k, lines[k], "equal") for k in range(keep_head)]
    fold = [Row(None, f"… {hidden} unchanged line{'s' * (hidden != 1)} …", None, "", "fold")]
    start = len(lines) - keep_tail
    tail = [Row(ln + k, lines[k], rn + k, lines[k], "equal") for k in range(start, len(lines))]
    return head + fold + tail


def inline_html(old: str | None, new: str | None, *, max_height: int = 600) -> str:
    """One box: deletions struck through in red, insertions in green, unchanged lines plain."""
    parts = []
    for op, text in inline_ops(old, new):
        if op == DELETE:
            parts.append(f'<del style="{_DEL}">{_esc(text)}</del>')
        elif op == INSERT:
            parts.append(f'<ins style="{_INS}">{_esc(text)}</ins>')
        else:
            parts.append(f"<span>{_esc(text)}</span>")
    return f'<div class="skillopt-diff" style="{_BOX.format(h=max_height)}">{"".join(parts)}</div>'


def _pair_html(left: str, right: str) -> tuple[str, str]:
    """A changed line pair with the changed words highlighted on each side (whole lines when
    the two are not alike)."""
    lpart, rpart = [], []
    ops = word_diff(left, right) if alike(left, right) else [(DELETE, left), (INSERT, right)]
    for op, text in ops:
        if op == DELETE:
            lpart.append(f'<del style="{_DEL}">{_esc(text)}</del>')
        elif op == INSERT:
            rpart.append(f'<ins style="{_INS}">{_esc(text)}</ins>')
        else:
            lpart.append(_esc(text))
            rpart.append(_esc(text))
    return "".join(lpart), "".join(rpart)


def side_by_side_html(old: str | None, new: str | None, *, context: int | None = None,
                      left_title: str = "before", right_title: str = "after", max_height: int = 600) -> str:
    """Two columns with line numbers; changed pairs show word-level highlights."""
    body = []
    for r in rows(old, new, context):
        if r.kind == "fold":
            body.append(f'<tr><td colspan="4" style="{_CELL};text-align:center;color:rgba(128,128,128,.9)">'
                        f"{_esc(r.left)}</td></tr>")
            continue
        if r.kind == "changed":
            left, right = _pair_html(r.left, r.right)
        else:
            left, right = _esc(r.left), _esc(r.right)
        lbg = _ROW_BG["del"] if r.kind in ("changed", "deleted") else ""
        rbg = _ROW_BG["ins"] if r.kind in ("changed", "inserted") else ""
        body.append(f'<tr><td style="{_NUM}">{"" if r.left_no is None else r.left_no}</td>'
                    f'<td style="{_CELL};{lbg}">{left}</td>'
                    f'<td style="{_NUM}">{"" if r.right_no is None else r.right_no}</td>'
                    f'<td style="{_CELL};{rbg}">{right}</td></tr>')
    head = (f'<tr><th style="{_NUM}"></th><th style="{_CELL};text-align:left">{_esc(left_title)}</th>'
            f'<th style="{_NUM}"></th><th style="{_CELL};text-align:left">{_esc(right_title)}</th></tr>')
    box = _BOX.format(h=max_height).replace("white-space:pre-wrap;", "")
    return (f'<div class="skillopt-diff" style="{box}"><table style="width:100%;border-collapse:collapse;'
            f'table-layout:fixed;border:none"><colgroup><col style="width:3em"><col><col style="width:3em"><col>'
            f'</colgroup><thead>{head}</thead><tbody>{"".join(body)}</tbody></table></div>')


def show(old: str | None, new: str | None, *, mode: str = "inline", context: int | None = None,
         left_title: str = "before", right_title: str = "after") -> None:
    """Render a diff in the page (mode: inline | side-by-side)."""
    import streamlit as st  # imported here so the HTML builders stay importable without a page

    if _normalize(old) == _normalize(new):
        st.caption("No difference: the two texts are identical.")
        return
    added, removed = stats(old, new)
    st.caption(f"+{added} line{'s' * (added != 1)} · −{removed} line{'s' * (removed != 1)}")
    if mode == "inline":
        fragment = inline_html(old, new)
    else:
        fragment = side_by_side_html(old, new, context=context, left_title=left_title, right_title=right_title)
    st.markdown(fragment, unsafe_allow_html=True)

"""Diffs of two skill versions, rendered with diff-match-patch: inline and side by side.

Skill text and model output are untrusted. Every piece of text that reaches the HTML is
passed through `_esc`, which HTML-escapes it AND turns newlines into `&#10;` entities: the
whole fragment is then ONE line, so Markdown sees a single raw HTML block and never
parses the text inside it (a blank line in a skill would otherwise end the HTML block and
let `[link](javascript:…)` or `$math$` through). Only this module's own tags and fixed
styles are unescaped, which is why `st.markdown(..., unsafe_allow_html=True)` is safe here.
"""
from __future__ import annotations

import html
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


def char_diff(old: str | None, new: str | None) -> list[tuple[int, str]]:
    """Character diff, cleaned up to word-sized chunks a person can read."""
    dmp = dmp_module.diff_match_patch()
    dmp.Diff_Timeout = 2.0  # a pathological pair degrades to a coarser diff, never hangs the page
    diffs = dmp.diff_main(_normalize(old), _normalize(new))
    dmp.diff_cleanupSemantic(diffs)
    return [(op, text) for op, text in diffs]


def line_diff(old: str | None, new: str | None) -> list[tuple[int, list[str]]]:
    """Line diff via diff-match-patch's line mode: (op, lines) runs."""
    dmp = dmp_module.diff_match_patch()
    a, b = _normalize(old), _normalize(new)
    chars_a, chars_b, line_array = dmp.diff_linesToChars(a, b)
    diffs = dmp.diff_main(chars_a, chars_b, False)
    dmp.diff_charsToLines(diffs, line_array)
    return [(op, text.splitlines()) for op, text in diffs if text]


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
    """One box: deletions struck through in red, insertions in green."""
    parts = []
    for op, text in char_diff(old, new):
        if op == DELETE:
            parts.append(f'<del style="{_DEL}">{_esc(text)}</del>')
        elif op == INSERT:
            parts.append(f'<ins style="{_INS}">{_esc(text)}</ins>')
        else:
            parts.append(f"<span>{_esc(text)}</span>")
    return f'<div class="skillopt-diff" style="{_BOX.format(h=max_height)}">{"".join(parts)}</div>'


def _pair_html(left: str, right: str) -> tuple[str, str]:
    """A changed line pair with the changed words highlighted on each side."""
    lpart, rpart = [], []
    for op, text in char_diff(left, right):
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

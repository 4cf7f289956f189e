"""Small tables drawn as one static HTML element, not as the interactive grid (st.dataframe).

A page's first st.dataframe makes the browser load and compile the grid's scripts. Measured in
headless chromium on 2 cores (bench/dashboard.py's method, 4 fresh servers each, medians), a
100 x 8 table of text added to a bare page's first render and rerender:

    st.dataframe                      +1.04 s   +0.36 s
    st.table (a Markdown element per cell)  +0.83 s   +0.26 s
    st.html (one sanitised element)   +0.38 s   +0.03 s

So a table of a bounded few rows that a user reads rather than sorts or searches (a run's
recent events, a step's edits, the cost per stage, the blame of a skill) is HTML; the tables
that grow with the data and are explored (the runs, a split's items) stay grids.

Every cell and header is text escaped for HTML here (a skill line "<b>" or "# Rules" shows as
written; line breaks are kept); the style is the page's (skillopt.ui.common's CSS, class
`skillopt-table`). Numbers are formatted here, as the grid's column formats did.
"""
from __future__ import annotations

import html
import numbers
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

CLASS = "skillopt-table"
SCROLL_ROWS, SCROLL_PX = 20, 600  # a longer table scrolls in a box this tall
MARKED = ' class="marked"'  # a highlighted row (the Compare page's differing keys)


def cell(value: Any, fmt: str | None = None) -> str:
    """One value as the text it shows: blank for a missing value, `fmt` (printf style) for a
    number; other numbers as the grid shows them (4 decimals at most, no trailing zeros)."""
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    number = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    if number and fmt:
        return fmt % value
    if number and not isinstance(value, numbers.Integral):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def frame_of(data: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))


def _text(value: str) -> str:
    return html.escape(value).replace("\n", "<br>")


def markup(data: pd.DataFrame | Sequence[Mapping[str, Any]], formats: Mapping[str, str] | None = None, *,
           index: bool = False, highlight: Iterable[Any] = (), height: int | None = None) -> str:
    """The table as HTML: `formats` maps a column to a printf format for its numbers, `index`
    shows the row labels, `highlight` names rows to mark, `height` (pixels) scrolls a long one."""
    frame, formats, marked = frame_of(data), formats or {}, set(highlight)
    head = ([""] if index else []) + [str(c) for c in frame.columns]
    rows = []
    for label, values in zip(frame.index, frame.itertuples(index=False, name=None)):
        cells = ([f'<th scope="row">{_text(str(label))}</th>'] if index else []) + [
            f"<td>{_text(cell(v, formats.get(c)))}</td>" for c, v in zip(frame.columns, values)]
        rows.append(f'<tr{MARKED if label in marked else ""}>{"".join(cells)}</tr>')
    style = f' style="max-height:{height}px"' if height else ""
    return (f'<div class="{CLASS}"{style}><table><thead><tr>{"".join(f"<th>{_text(h)}</th>" for h in head)}'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def scrolled(rows: int) -> int | None:
    """The height for a table of `rows` rows: its own up to SCROLL_ROWS, a scrolling box past it."""
    return SCROLL_PX if rows > SCROLL_ROWS else None


def show(data: pd.DataFrame | Sequence[Mapping[str, Any]], formats: Mapping[str, str] | None = None, *,
         index: bool = False, highlight: Iterable[Any] = (), height: int | None = None) -> None:
    """Draw a small table as static HTML (see markup)."""
    import streamlit as st

    st.html(markup(data, formats, index=index, highlight=highlight, height=height))

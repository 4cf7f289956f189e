"""What keeps a plotly figure cheap for the browser to draw on a long run.  (pure: no I/O)

Plotly draws every marker, bar and annotation as an SVG element, and Streamlit draws a chart
twice (once more when it learns the column's width): on a 500-step run a line with a marker
per step is 500 elements where a plain line is one path. The values stay in the figure (hover
reads them on the line); what a marker alone says (a decision, a version's kind) keeps its
marker.
"""
from __future__ import annotations

from typing import Any

MARKED_UP_TO = 60  # points up to which a line shows a marker on each, and per-step counts are bars


def marked(n_points: int) -> bool:
    """Whether a series of n points is short enough to draw a marker (or a bar) per point."""
    return n_points <= MARKED_UP_TO


def line_mode(n_points: int) -> str:
    """"lines+markers" for a short series, "lines" for a long one."""
    return "lines+markers" if marked(n_points) else "lines"


def plain_lines(fig: Any, n_points: int) -> Any:
    """The figure with its lines+markers traces drawn as plain lines once the run is long
    (markers-only traces keep theirs: there the marker is the information)."""
    if not marked(n_points):
        fig.update_traces(mode="lines", selector={"mode": "lines+markers"})
    return fig

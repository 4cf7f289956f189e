"""The dashboard server: `python -m skillopt dashboard [streamlit options]`.

A plain `streamlit run app.py` server loads a page's libraries inside the first script run
of each page, while its first visitor waits: pandas, plotly, the dashboard's own modules,
and plotly's per-trace-type validators, which it reads on the first figure of each kind.
This command does that in the server's process before the server starts to serve, so a
page's first view finds them loaded; then it runs `streamlit run app.py` with the options
given, in the same process (the address stays the one .streamlit/config.toml sets).

What to load is read from the pages themselves (every module app.py and pages/*.py import,
at any depth of their code), so a page that imports something new is covered without a list
to keep in step.
"""
from __future__ import annotations

import ast
import importlib
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


def scripts(root: Path = ROOT) -> list[Path]:
    return [root / "app.py", *sorted((root / "pages").glob("*.py"))]


def imported(paths: list[Path]) -> list[str]:
    """The absolute module names the scripts import (in first-seen order)."""
    names: dict[str, None] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(dict.fromkeys(alias.name for alias in node.names))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names[node.module] = None
                # `from pkg import mod` names a submodule as often as an attribute
                names.update(dict.fromkeys(f"{node.module}.{alias.name}" for alias in node.names))
    return [n for n in names if n.split(".")[0] != "__future__"]


def load(names: list[str]) -> list[str]:
    """Import each module that exists; the names that are attributes, not modules, are skipped."""
    # Decorating a cached function with no server yet logs "No runtime found" once per
    # function; at call time the cache is the server's, so the warning says nothing here.
    importlib.import_module("streamlit.runtime.caching")  # its loggers get their levels when it loads

    quiet = [logging.getLogger(f"streamlit.runtime.caching.{api}") for api in ("cache_data_api", "cache_resource_api")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        return _load(names)
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)


def _load(names: list[str]) -> list[str]:
    loaded = []
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a module that exists but cannot import something it needs
                raise
            continue
        loaded.append(name)
    return loaded


def warm_figures() -> None:
    """Build and serialise one figure of each trace type the pages draw: plotly reads a trace
    type's validators on its first use, and its JSON encoder on the first figure sent."""
    import plotly.graph_objects as go

    go.Figure([go.Scatter(x=[0, 1], y=[0, 1]), go.Bar(x=[0], y=[1]), go.Heatmap(z=[[0, 1]]),
               go.Parcoords(dimensions=[{"values": [0, 1]}])]).to_json()


def command(options: list[str]) -> list[str]:
    return ["streamlit", "run", str(APP), *options]


def main(options: list[str]) -> int:
    sys.path.insert(0, str(ROOT))  # the pages import skillopt from the repository, as streamlit run does
    os.chdir(ROOT)  # .streamlit/config.toml is read from the working directory
    load(imported(scripts()))
    warm_figures()
    from streamlit.web import cli

    sys.argv = command(options)
    return cli.main(prog_name="streamlit")  # click exits the process itself

"""What every dashboard page shares: the store path, a cached read-only reader, the run
picker bound to ?run=<id>, the approval badge and safe rendering of untrusted text.

Pages only READ the store (through skillopt.store.reader.Reader). The only writes are
control rows (stop requests, approval decisions) made through skillopt.store.writer.Store.
"""
from __future__ import annotations

import html
import sqlite3
from pathlib import Path

import streamlit as st

from skillopt.store.reader import Reader
from skillopt.store.writer import db_path
from skillopt.vocabulary import LIVE_STATUSES

TTL_S = 2  # short cache: live runs update every second or two, big queries must not re-run per widget
NO_RUNS = "No runs yet. Start one from the Home page (a simulated demo takes seconds)."


def db() -> Path:
    """The store the dashboard reads: SKILLOPT_DB, else the default."""
    return db_path()


def reader() -> Reader | None:
    """A read-only reader, or None when no run has been started yet (no database file)."""
    return _ready(str(db()))


def _ready(path: str) -> Reader | None:
    """The shared reader of `path`, or None while the file or its tables do not exist yet."""
    if not Path(path).exists():
        return None
    r = _reader(path)
    try:
        r.conn.execute("SELECT 1 FROM runs LIMIT 1")
    except sqlite3.OperationalError:  # created a moment ago, tables not migrated yet
        return None
    return r


@st.cache_resource
def _reader(path: str) -> Reader:
    return Reader(path)


def cached(method: str, *args):
    """Call a Reader method through Streamlit's data cache (short TTL).

    The database path is part of the cache key, so pointing SKILLOPT_DB elsewhere never
    serves another database's rows.
    """
    return _cached(str(db()), method, *args)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def _cached(path: str, method: str, *args):
    r = _ready(path)
    if r is None:
        return None
    try:
        return getattr(r, method)(*args)
    except sqlite3.OperationalError:  # a table this query needs is still being created
        return None


def setup(title: str, icon: str = "🧠") -> None:
    st.set_page_config(page_title=f"{title} · SkillOpt Studio", page_icon=icon, layout="wide")
    approval_badge()


def approval_badge() -> None:
    waiting = cached("waiting_runs") or []
    for run in waiting:
        st.warning(f"⏸ Run **{escape(run['name'] or run['id'])}** waits for your approval of step "
                   f"{run['step'] + 1}: open the Approvals page (?run={run['id']}).", icon="✋")


def pick_run(label: str = "Run") -> dict | None:
    """A run selector that reads and writes ?run=<id>, so a link opens the same view."""
    runs = cached("runs") or []
    wanted = st.query_params.get("run")
    if wanted and wanted not in {r["id"] for r in runs} and (fresh := reader()) is not None:
        # The cached list (short TTL, shared by all sessions) can predate a run launched a
        # moment ago; without this, its link would show another run and rewrite the URL.
        runs = fresh.runs()
    if not runs:
        st.info(NO_RUNS)
        return None
    ids = [r["id"] for r in runs]
    index = ids.index(wanted) if wanted in ids else 0
    by_id = {r["id"]: r for r in runs}
    choice = st.selectbox(label, ids, index=index, format_func=lambda i: run_label(by_id[i]))
    if st.query_params.get("run") != choice:
        st.query_params["run"] = choice
    return by_id[choice]


def run_label(run: dict) -> str:
    sim = " · SIMULATED" if run.get("simulated") else ""
    return f"{run['name'] or run['id']} · {run['task']} · {run['status']}{sim}"


def simulated_banner(run: dict) -> None:
    if run.get("simulated"):
        st.info("This run used **simulated models** (sim/target, sim/optimizer): its scores show how the "
                "engine behaves, not how a real model performs.", icon="🧪")


def is_live(run: dict) -> bool:
    return run.get("status") in LIVE_STATUSES


def escape(text: str | None) -> str:
    """Escape untrusted text (model output, skill text) for use inside markdown/HTML."""
    return html.escape(text or "")


def show_text(text: str | None, *, language: str = "markdown") -> None:
    """Show untrusted text verbatim: st.code never interprets HTML or markdown."""
    st.code(text or "", language=language, wrap_lines=True)


def show_markdown(text: str | None) -> None:
    """Render skill markdown with raw HTML disabled (Streamlit escapes HTML by default)."""
    st.markdown(text or "", unsafe_allow_html=False)

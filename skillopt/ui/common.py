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
from streamlit.errors import StreamlitAPIException

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
    fn = getattr(r, method, None)  # a view another feature adds (the skill lift) may not be there
    if fn is None:
        return None
    try:
        return fn(*args)
    except sqlite3.OperationalError:  # a table or column this query needs is not there (yet)
        return None


# The run this browser session looks at, kept across pages: the sidebar's links carry no
# ?run=, so without it every page would open the newest run instead of the one being read.
RUN_KEY = "skillopt_run"
# Metric labels wrap instead of being cut with an ellipsis on narrow screens (1024 px and a sidebar).
_CSS = ("<style>[data-testid='stMetricLabel'] p, [data-testid='stMetricLabel'] div"
        "{white-space:normal!important;overflow:visible!important;text-overflow:clip!important}</style>")


ROOT = Path(__file__).resolve().parents[2]
# Page icons in the sidebar, by the page's name (its file name without number and extension).
PAGE_ICONS = {"Home": ":material/home:", "New run": ":material/add:", "Monitor": ":material/monitoring:",
              "Skill evolution": ":material/difference:", "Gate timeline": ":material/timeline:",
              "Slow updates": ":material/update:", "Approvals": ":material/front_hand:",
              "Rollouts": ":material/table_rows:", "Compare runs": ":material/compare_arrows:",
              "Sweeps": ":material/grid_view:"}


def setup(title: str, icon: str = "🧠") -> None:
    st.set_page_config(page_title=f"{title} · SkillOpt Studio", page_icon=icon, layout="wide")
    st.markdown(_CSS, unsafe_allow_html=True)  # a fixed string of this module: no untrusted text
    sidebar()
    approval_badge()


def page_files() -> list[tuple[str, str]]:
    """(script path, name) of the start page and every page in pages/, in the order of their numbers."""
    def number(path: Path) -> tuple[int, str]:
        head = path.name.split("_", 1)[0]
        return (int(head) if head.isdigit() else 10_000, path.name)

    found = sorted((ROOT / "pages").glob("*.py"), key=number)
    return [("app.py", "Home")] + [(f"pages/{p.name}", _page_name(p.stem)) for p in found]


def _page_name(stem: str) -> str:
    head, _, rest = stem.partition("_")
    return (rest if head.isdigit() and rest else stem).replace("_", " ")


def sidebar() -> None:
    """The page links, each carrying the run being looked at: Streamlit's own list names the
    start page after its file and drops ?run=, so the next page showed another run."""
    run = current_run_id()
    with st.sidebar:
        try:
            for path, name in page_files():
                st.page_link(path, label=name, icon=PAGE_ICONS.get(name), query_params={"run": run} if run else None)
        except StreamlitAPIException:  # a page script run on its own (a test) has no app.py to link to
            pass


def approval_badge() -> None:
    from skillopt.ui.monitor import effective_status  # a trainer killed while waiting waits for no one

    waiting = [r for r in cached("waiting_runs") or [] if effective_status(r) == "waiting_approval"]
    for run in waiting:
        st.warning(f"⏸ Run **{escape(run['name'] or run['id'])}** waits for your approval of step "
                   f"{run['step'] + 1}: open the Approvals page (?run={run['id']}).", icon="✋")


def current_run_id() -> str | None:
    """The run the address names, else the one this session last looked at."""
    return st.query_params.get("run") or st.session_state.get(RUN_KEY)


def remember_run(run_id: str) -> None:
    st.session_state[RUN_KEY] = run_id
    if st.query_params.get("run") != run_id:
        st.query_params["run"] = run_id


def pick_run(label: str = "Run") -> dict | None:
    """A run selector bound to ?run=<id> and to the session, so a link and the sidebar open
    the same run. An id that names no run is said so, never silently replaced."""
    runs = cached("runs") or []
    wanted = current_run_id()
    if wanted and wanted not in {r["id"] for r in runs} and (fresh := reader()) is not None:
        # The cached list (short TTL, shared by all sessions) can predate a run launched a
        # moment ago; without this, its link would show another run and rewrite the URL.
        runs = fresh.runs()
    if not runs:
        st.info(NO_RUNS)
        return None
    ids = [r["id"] for r in runs]
    by_id = {r["id"]: r for r in runs}
    if wanted and wanted not in ids:
        st.warning(f"There is no run `{wanted}` in this store ({db()}). Pick one of its {len(ids)} runs.",
                   icon=":material/search_off:")
        choice = st.selectbox(label, ids, index=None, placeholder="Choose a run",
                              format_func=lambda i: run_label(by_id[i]))
        if choice is None:
            return None
    else:
        choice = st.selectbox(label, ids, index=ids.index(wanted) if wanted in ids else 0,
                              format_func=lambda i: run_label(by_id[i]))
    remember_run(choice)
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

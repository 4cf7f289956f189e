"""What every dashboard page shares: the store path, a cached read-only reader, the run
picker bound to ?run=<id>, the approval badge and safe rendering of untrusted text.

Pages only READ the store (through skillopt.store.reader.Reader). The only writes are
control rows (stop requests, approval decisions) made through skillopt.store.writer.Store.
"""
from __future__ import annotations

import html
import itertools
import sqlite3
from pathlib import Path
from typing import Callable, TypeVar

import streamlit as st
from streamlit.errors import StreamlitAPIException

from skillopt.store.reader import Reader
from skillopt.store.writer import db_path
from skillopt.vocabulary import LIVE_STATUSES

# Cached reads are keyed by the store's version (store_version): a commit by any process
# (a live run's next event, a decision on Approvals) makes every later read a fresh query,
# while a page opened again on an unchanged store reads nothing. The TTL only frees memory.
TTL_S = 600
CACHE_ENTRIES = 256  # reads kept (each a few KB to a few hundred KB on a 500-step run)
VIEW_ENTRIES = 16  # built views kept (view() holds the big ones: a flip matrix is megabytes)
T = TypeVar("T")
LATEST_ROWS = 100  # rows a long per-step table shows until asked for all (windowed)
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
    r = _reader(path)[0]
    try:
        r.conn.execute("SELECT 1 FROM runs LIMIT 1")
    except sqlite3.OperationalError:  # created a moment ago, tables not migrated yet
        return None
    return r


_OPENED = itertools.count(1)  # tells readers apart: a new connection counts its data_version anew


@st.cache_resource
def _reader(path: str) -> tuple[Reader, int]:
    return Reader(path), next(_OPENED)


def store_version(path: str | None = None) -> tuple[int, int] | None:
    """What changes whenever any connection commits to the store: SQLite's data_version of the
    shared reader's connection (one cheap PRAGMA), with which reader it is. None: no store yet."""
    path = path or str(db())
    r = _ready(path)
    if r is None:
        return None
    return _reader(path)[1], r.conn.execute("PRAGMA data_version").fetchone()[0]


def cached(method: str, *args):
    """Call a Reader method through Streamlit's data cache, keyed by the store's version.

    The database path is part of the cache key, so pointing SKILLOPT_DB elsewhere never
    serves another database's rows.
    """
    path = str(db())
    return _cached(path, store_version(path), method, *args)


def view(build: Callable[..., T], *args) -> T:
    """build(*args), built once per store version and shared by every session without a copy.

    For views over big reads that are costly to build or to copy (the flip matrix: 100,000
    rollouts, megabytes pickled): `build` reads through reader() (not cached(), which would
    keep and copy the raw rows) and must return something nobody mutates (a frozen dataclass,
    a figure handed to st.plotly_chart, which copies it).
    """
    path = str(db())
    return _view(path, store_version(path), _name(build), build, *args)


def _name(build: Callable) -> str:
    """A builder's cache identity: page scripts all run as __main__, so their file tells them apart."""
    code = getattr(build, "__code__", None)
    return f"{code.co_filename if code else build.__module__}:{build.__qualname__}"


@st.cache_resource(ttl=TTL_S, max_entries=VIEW_ENTRIES, show_spinner=False)
def _view(path: str, version: tuple[int, int] | None, name: str, _build: Callable, *args):
    return _build(*args)


@st.cache_data(ttl=TTL_S, max_entries=CACHE_ENTRIES, show_spinner=False)
def _cached(path: str, version: tuple[int, int] | None, method: str, *args):
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
# Static tables (skillopt.ui.table) look like the grid's: thin row rules, a bold header, a
# marked row tinted; colours that read on the light and the dark theme alike.
_CSS = ("<style>[data-testid='stMetricLabel'] p, [data-testid='stMetricLabel'] div"
        "{white-space:normal!important;overflow:visible!important;text-overflow:clip!important}"
        ".skillopt-table{overflow:auto;border:1px solid rgba(128,128,128,.25);border-radius:.5rem}"
        ".skillopt-table table{border-collapse:collapse;width:100%;font-size:.875rem;margin:0}"
        ".skillopt-table th,.skillopt-table td{padding:.3rem .6rem;text-align:left;vertical-align:top;"
        "border:none;border-bottom:1px solid rgba(128,128,128,.2);overflow-wrap:anywhere}"
        ".skillopt-table thead th{font-weight:600;opacity:.8;white-space:nowrap}"
        ".skillopt-table tbody tr:last-child>*{border-bottom:none}"
        ".skillopt-table tr.marked{background:rgba(255,196,0,.25)}</style>")


ROOT = Path(__file__).resolve().parents[2]
# Page icons in the sidebar, by the page's name (its file name without number and extension).
PAGE_ICONS = {"Home": ":material/home:", "New run": ":material/add:", "Monitor": ":material/monitoring:",
              "Skill evolution": ":material/difference:", "Gate timeline": ":material/timeline:",
              "Slow updates": ":material/update:", "Approvals": ":material/front_hand:",
              "Rollouts": ":material/table_rows:", "Compare runs": ":material/compare_arrows:",
              "Sweeps": ":material/grid_view:"}


# Icons are Material symbols, never emoji: the first emoji a server validates compiles
# Streamlit's emoji table (0.2-0.4 s of the first page a fresh server renders).
def setup(title: str, icon: str = ":material/psychology:") -> None:
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
                   f"{run['step'] + 1}: open the Approvals page (?run={run['id']}).", icon=":material/front_hand:")


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
                "engine behaves, not how a real model performs.", icon=":material/science:")


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


def windowed(frame, key: str, latest: int = LATEST_ROWS):
    """A long table's latest rows (the end of the run, read first), with a toggle to show all
    and a caption saying how many there are: every row sent is serialised by the server and
    laid out by the browser, and a 500-step run's tables have 500-1,000 rows."""
    if len(frame) <= latest or st.toggle(f"Show all {len(frame):,} rows", key=key):
        return frame
    st.caption(f"The latest {latest} of {len(frame):,} rows.")
    return frame.tail(latest)


def lazy_expander(label: str, key: str, expanded: bool = False):
    """An expander whose content runs only while it is open (`.open`): a closed one sends
    nothing, so a page pays for what it hides (a skill as highlighted code, a long JSON)
    only when a user opens it, at the cost of one rerun then."""
    return st.expander(label, expanded=expanded, key=key, on_change="rerun")

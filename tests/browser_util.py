"""Browser-test harness: a real dashboard server (`python -m skillopt dashboard`, the README's
`streamlit run app.py` with its libraries loaded first) on a free port, Debian's
chromium driven by Playwright, the locators and waits the flows share, and screenshots of
every page visited.

Chromium is the system one (/usr/bin/chromium, installed by .ci/run with apt-get); we
never run `playwright install`. In CI a missing browser is a failure, not a skip, so the
acceptance tests cannot silently vanish; on a developer machine they skip with a reason.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillopt import launcher
from skillopt.errors import UserError
from skillopt.store.reader import Reader

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"  # git-ignored; CI keeps it
README_SHOTS = ROOT / "data" / "screenshots"  # the README's images; written only when asked (see shot())
UPDATE_SHOTS_ENV = "SKILLOPT_UPDATE_SCREENSHOTS"
CHROMIUM = os.environ.get("SKILLOPT_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}
SERVER_START_S = 90  # a cold start on 2 busy cores imports pandas, plotly and litellm
PAGE_S = 60_000  # ms: the longest any single UI condition may take (first render of a page, a run's step)


def require_browser() -> None:
    """Fail in CI, skip elsewhere, when Playwright or the system chromium is missing."""
    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "the playwright package is not installed (pip install playwright==1.65.2; no `playwright install`)"
    if problem is None and not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        problem = f"{CHROMIUM} is missing (apt-get install -y chromium)"
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run: {problem}", pytrace=False)
    pytest.skip(f"browser tests skipped: {problem}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Dashboard:
    """A running dashboard server and the database it reads."""
    url: str
    db: Path
    proc: subprocess.Popen
    log: Path

    def page_url(self, page: str, run_id: str | None = None, **query: str) -> str:
        """URL of a page by its file stem ('2_Monitor' -> /Monitor), with ?run=<id> and other parameters."""
        path = "" if page in ("", "app") else re.sub(r"^\d+_", "", page)
        params = ({"run": run_id} if run_id else {}) | query
        return f"{self.url}/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")


def start_dashboard(db: Path, log: Path) -> Dashboard:
    env = {"SKILLOPT_DB": str(db), "SKILLOPT_UPLOADS_DIR": str(db.parent / "uploads")}
    url, proc = start_server([sys.executable, "-m", "skillopt", "dashboard"], env, log)
    return Dashboard(url, db, proc, log)


def start_server(command: list[str], env: dict[str, str], log: Path) -> tuple[str, subprocess.Popen]:
    """(url, process) of a Streamlit server started by `command` (the dashboard, or any
    `streamlit run` app) in the repository root on a free port, once its health endpoint
    answers. The server options are the same for every app, so two servers differ only in
    the app they serve."""
    port = free_port()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [*command, "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1", **env), stdout=fh, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"streamlit exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.read() == b"ok":
                    return url, proc
        except OSError:
            time.sleep(0.2)  # polling the server until it answers, not a timed assertion
    stop_process(proc)
    raise AssertionError(f"streamlit did not serve within {SERVER_START_S}s:\n{log.read_text(errors='replace')}")


def stop_process(proc: subprocess.Popen) -> None:
    """End a process group we started: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


def stop_trainers(db: Path) -> None:
    """SIGTERM the trainer processes the dashboard launched into `db` that are still live.

    They run in their own sessions (launcher.start), so ending streamlit does not end them.
    Only the trainers of this test database's live runs are signalled, and only where host,
    pid and start time still match (launcher.signal_run): a pid alone may name another process.
    """
    if not db.exists():
        return
    reader = Reader(db)
    try:
        run_ids = [run_id for run_id, pid in reader.live_pids().items() if pid is not None]
    except sqlite3.OperationalError:  # the file exists but no trainer has created the tables yet
        run_ids = []
    finally:
        reader.close()
    for run_id in run_ids:
        launcher.signal_run(db, run_id, signal.SIGTERM)


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)


# True once nothing is stale or still loading: plotly charts are drawn lazily (a grey box first).
_SETTLED_JS = """() => !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('svg.main-svg'))"""


def settle(page, timeout: float = PAGE_S) -> None:
    """Wait until the page's script run has finished and everything on it is drawn."""
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)
    page.wait_for_function(_SETTLED_JS, timeout=timeout)


def open_page(page, dash: Dashboard, name: str, run_id: str | None = None, *, ready: str | None = None,
              **query: str):
    """Go to a page and wait for its first full render (and `ready` text when given)."""
    page.goto(dash.page_url(name, run_id, **query))
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=PAGE_S)
    if ready:
        page.get_by_text(ready).first.wait_for(timeout=PAGE_S)
    settle(page)
    assert_no_exception(page)


def assert_no_exception(page) -> None:
    errors = page.locator('[data-testid="stException"]')
    if errors.count():
        raise AssertionError(f"the page shows an exception:\n{errors.first.inner_text()}")


def shot(page, test: str, name: str, focus=None) -> Path:
    """Save test-artifacts/<test>-<name>.png; with SKILLOPT_UPDATE_SCREENSHOTS=1 also
    data/screenshots/<name>.png (the README's images), so a plain test run leaves the tree clean.

    `focus` (a locator) is scrolled to the top of the view first, for a part below the fold.
    """
    settle(page)
    if focus is not None:
        focus.evaluate("el => el.scrollIntoView({block: 'start'})")
        settle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{test}-{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get(UPDATE_SHOTS_ENV) == "1":
        README_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, README_SHOTS / f"{name}.png")
    return path


# --- locators and waits the browser flows share ---

def reader(dash: Dashboard) -> Reader:
    return Reader(dash.db)


def metric(page, label: str):
    """The value element of the st.metric with this exact label."""
    box = page.get_by_test_id("stMetric").filter(has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue")


def status_line(page):
    """The Monitor's "Status: `…`" line (a markdown paragraph)."""
    return page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"^Status:")).first


def expect_text(locator, pattern: str):
    from playwright.sync_api import expect

    expect(locator).to_have_text(re.compile(pattern))


def button(page, name: str):
    """A button by its label; Streamlit puts a material icon's ligature text before it."""
    return page.get_by_role("button", name=re.compile(rf"(^|\s){re.escape(name)}$"))


def wait_status(dash: Dashboard, run_id: str, wanted: tuple[str, ...]) -> str:
    """Poll the store (not the page) until the run reaches one of `wanted`; fail after PAGE_S."""
    deadline = time.monotonic() + PAGE_S / 1000
    status = None
    while time.monotonic() < deadline:
        try:
            r = reader(dash)
            try:
                row = r.run(run_id)
            finally:
                r.close()
        except (UserError, sqlite3.OperationalError):  # the first trainer has not created the database yet
            row = None
        status = row and row["status"]
        if status in wanted:
            return status
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} is {status!r}, not one of {wanted}")

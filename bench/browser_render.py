"""Dashboard pages as a user waits for them: headless chromium through Playwright.

Used by bench/dashboard.py. For every page (Home, New run and the seven run pages, with
?run=<id>):

- first render: a dashboard server started for this page alone, as the README starts it
  (`python -m skillopt dashboard`: `streamlit run app.py` with the pages' libraries loaded
  before it serves), which has served no page yet (only its health endpoint was polled), and
  a fresh browser context opening the page's URL. The page's first script run, its first
  queries and the browser's download of the front end all count.
- rerender: the same URL opened again in that context (the front end in the browser's cache,
  the server's data caches warm): what a user pays to come back to a page.

Each page is measured REPEATS times on as many fresh servers, the pages taking turns; the
figures are the medians, and every sample is saved beside them.

Streamlit's own floor is measured the same way, in the same turns: FLOORS are apps of one title
and one line of text, and of the same with one small plotly chart, served with the same server
options and the same .streamlit/config.toml, plotly loaded before serving as the dashboard
loads it. No page can render faster than the floor on the same machine, so a page's figure
minus the floor is what the dashboard's own code costs; the targets are judged on the pages'
figures alone.

A render ends at the last change to the page's DOM (a MutationObserver installed before the
page's own scripts) once Streamlit's status widget is gone, the script has stopped and nothing
changes for QUIET_MS; the time is counted from the navigation's start (performance.now()). The
quiet period confirms the end and is not counted. Quiet also means the page's main thread was
free: a heartbeat timer that fell behind marks the thread busy, because while the browser
parses a big message (a 20,000-row table, a chart) no element changes, yet the page is not
drawn; without it a page measured "done" seconds before its chart appeared. Chromium is the system one, as in the tests
(tests/browser_util.py, which starts the servers); a missing Playwright or chromium makes the
browser figures "not measured", never a failure of the rest of the bench.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"Home": "app", "New run": "1_New_run", "Monitor": "2_Monitor", "Skill evolution": "3_Skill_evolution",
         "Gate timeline": "4_Gate_timeline", "Slow updates": "5_Slow_updates", "Approvals": "6_Approvals",
         "Rollouts": "7_Rollouts", "Compare runs": "8_Compare_runs"}
FIRST_TARGET_S, RERENDER_TARGET_S = 2.0, 1.0
QUIET_MS = 500
REPEATS = 3  # fresh servers per page: one sample of a first render varied by up to 0.5 s on 2 cores
LIMIT_S = 120  # longest a render may take before the bench gives up on the page
_FLOOR_TEXT = 'import streamlit as st\n\nst.title("Floor")\nst.write("One line of text.")\n'
FLOORS = {"Streamlit floor: text": _FLOOR_TEXT,
          "Streamlit floor: chart": _FLOOR_TEXT + "import plotly.graph_objects as go\n\n"
                                    "st.plotly_chart(go.Figure(go.Scatter(x=[0, 1, 2], y=[1, 3, 2])))\n"}
# Serves the app named by its first argument as `streamlit run` does, after loading plotly and
# building one figure (as skillopt.dashboard does before it serves), so the chart floor does
# not pay an import the dashboard's pages never pay.
FLOOR_LAUNCH = ("import sys\nimport plotly.graph_objects as go\ngo.Figure(go.Scatter(x=[0], y=[0])).to_json()\n"
                "from streamlit.web import cli\nsys.argv = ['streamlit', 'run', *sys.argv[1:]]\n"
                "cli.main(prog_name='streamlit')\n")

BEAT_MS, LATE_MS = 50, 150  # the heartbeat's period; a beat this late means the thread was busy
OBSERVE_JS = f"""
window.__lastChange = performance.now();
new MutationObserver(() => {{ window.__lastChange = performance.now(); }})
  .observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});
window.__beat = performance.now();
window.__busyAt = 0;
setInterval(() => {{
  const t = performance.now();
  if (t - window.__beat > {LATE_MS}) window.__busyAt = t;
  window.__beat = t;
}}, {BEAT_MS});
"""
STATE_JS = f"""() => {{
  const now = performance.now();
  if (now - window.__beat > {LATE_MS}) window.__busyAt = now;
  const app = document.querySelector('[data-testid="stApp"]');
  const busy = !app || app.getAttribute('data-test-script-state') !== 'notRunning'
    || !!document.querySelector('[data-testid="stStatusWidget"]');
  return {{now: now, last: window.__lastChange, quietSince: Math.max(window.__lastChange, window.__busyAt), busy: busy}};
}}"""


def missing() -> str | None:
    """Why the browser figures cannot be measured here, or None."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import playwright.sync_api  # noqa: F401
        import browser_util
    except ImportError as exc:
        return f"cannot import {exc.name} (pip install playwright==1.65.2 pytest; no `playwright install`)"
    chromium = Path(browser_util.CHROMIUM)
    return None if chromium.is_file() else f"{chromium} is missing (apt-get install chromium)"


def settled(page) -> float:
    """Seconds from the navigation's start to the page's last change before QUIET_MS of quiet."""
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        state = page.evaluate(STATE_JS)
        if not state["busy"] and state["now"] - state["quietSince"] >= QUIET_MS:
            return state["last"] / 1000
        page.wait_for_timeout(50)  # polling the page until it is quiet: the figure is read from it
    raise SystemExit(f"{page.url} did not settle within {LIMIT_S} s")


def visit(page, url: str) -> float:
    import browser_util

    page.goto(url, wait_until="commit")
    seconds = settled(page)
    browser_util.assert_no_exception(page)
    return seconds


def once(browser, serve) -> tuple[float, float]:
    """(first render s, rerender s) of one URL on a server of its own; `serve()` starts the
    server and returns (url, process)."""
    import browser_util

    url, proc = serve()
    try:
        context = browser.new_context(viewport=browser_util.VIEWPORT)
        context.add_init_script(OBSERVE_JS)
        page = context.new_page()
        times = visit(page, url), visit(page, url)
        context.close()
        return times
    finally:
        browser_util.stop_process(proc)


def page_server(db: Path, run_id: str, page_file: str, log: Path):
    import browser_util

    def serve():
        dash = browser_util.start_dashboard(db, log)
        return dash.page_url(page_file, run_id), dash.proc
    return serve


def floor_server(app: Path, log: Path):
    import browser_util

    def serve():
        url, proc = browser_util.start_server([sys.executable, "-c", FLOOR_LAUNCH, str(app)], {}, log)
        return f"{url}/", proc
    return serve


def measure(db: Path, run_id: str, repeats: int = REPEATS,
            pages: tuple[str, ...] = tuple(PAGES)) -> dict[str, list[tuple[float, float]]]:
    """name -> `repeats` (first render s, rerender s) samples, each on a fresh server, for the
    pages and for Streamlit's floor (FLOORS). They take turns (round-robin), so a burst of load
    on the machine spreads over all of them."""
    from playwright.sync_api import sync_playwright

    import browser_util

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in (*pages, *FLOORS)}
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-logs-") as logs, sync_playwright() as pw:
        folder = Path(logs)
        servers = {name: page_server(db, run_id, PAGES[name], folder / f"{PAGES[name]}.log") for name in pages}
        for i, (name, source) in enumerate(FLOORS.items()):
            app = folder / f"floor_{i}.py"
            app.write_text(source, encoding="utf-8")
            servers[name] = floor_server(app, folder / f"floor_{i}.log")
        browser = browser_util.launch_browser(pw)
        try:
            for _ in range(repeats):
                for name, serve in servers.items():
                    samples[name].append(once(browser, serve))
            for name, runs in samples.items():
                first, again = median(runs)
                print(f"  {name:<23} first {first:6.2f} s   rerender {again:6.2f} s   (median of {len(runs)}; first "
                      f"{' '.join(f'{f:.2f}' for f, _ in runs)}; rerender {' '.join(f'{r:.2f}' for _, r in runs)})",
                      flush=True)
        finally:
            browser.close()
    return samples


def median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(f for f, _ in runs), statistics.median(r for _, r in runs)


def rounded(groups: dict[str, list[tuple[float, float]]]) -> tuple[dict, dict, dict]:
    """(median first render, median rerender, samples) of each name, to the millisecond."""
    times = {name: median(runs) for name, runs in groups.items()}
    return ({name: round(first, 3) for name, (first, _) in times.items()},
            {name: round(again, 3) for name, (_, again) in times.items()},
            {name: [[round(f, 3), round(r, 3)] for f, r in runs] for name, runs in groups.items()})


def figures(samples: dict[str, list[tuple[float, float]]]) -> dict:
    """The pages' medians and samples, judged on the targets, and Streamlit's floor beside them."""
    pages = {name: runs for name, runs in samples.items() if name not in FLOORS}
    first, again, kept = rounded(pages)
    floor_first, floor_again, floor_kept = rounded({name: runs for name, runs in samples.items() if name in FLOORS})
    return {"browser_first_s": first, "browser_rerender_s": again, "browser_samples": kept,
            "browser_repeats": min(len(runs) for runs in pages.values()),
            "browser_floor_first_s": floor_first, "browser_floor_rerender_s": floor_again,
            "browser_floor_samples": floor_kept,
            "browser_first_target_s": FIRST_TARGET_S, "browser_rerender_target_s": RERENDER_TARGET_S,
            # judged on the figures the table shows, so a page shown at 2.000 s never reads "met"
            "browser_met": all(first[name] < FIRST_TARGET_S and again[name] < RERENDER_TARGET_S for name in first)}

"""What the dashboard showed wrong, checked where a user sees it: a real browser (Debian's
chromium through Playwright) on the dashboard server (`python -m skillopt dashboard`).

- The run being read follows the reader from page to page; an unknown run id is said so.
- The inline diff keeps unchanged lines unchanged and never cuts a word.
- New run's problems sit beside their fields (no traceback).
- Stop never signals a process it cannot identify by host, pid and start time.
- Metric labels stay whole on a 1024 px screen.

One server for the module, on one store built once by real simulated runs (in this process),
with a few rows then set the way a copied or shared store has them.
"""
from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

import pytest

from browser_util import (PAGE_S, assert_no_exception, launch_browser, open_page, require_browser, settle,
                          start_dashboard, stop_process)
from skillopt import process
from tests.helpers import run_sim

pytestmark = pytest.mark.browser

# A pair of skills on which character diffs showed the unchanged "## Legal" heading deleted and re-added.
OLD = ("# Ticket routing\n\n## Rules\n- answer account a only postal.\n"
       "- rule mentions with format courier legal account refund customer.\n## Legal\n"
       "- mentions a not format transit to.\n\n- Orders shipped to a P.O. Box go to courier.\n")
NEW = ("# Ticket routing\n\n## Rules\n- answer account a only postal.\n## Legal\n- ticket order route shipping.\n"
       "- mentions a not format transit to.\n\n- P.O. Box addresses get routed to postal.\n")
OTHER_HOST = "another-machine.example"
SMALL = ("num_epochs=1", "max_steps_per_epoch=1")


def sleeper() -> subprocess.Popen:
    """A process that is not a trainer, in its own session like a launched one."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


def set_rows(db, sql: str, params: tuple) -> None:
    with sqlite3.connect(db) as c:
        c.execute(sql, params)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The runs every test reads, oldest first: the newest is the one a lost run id falls back to."""
    require_browser()
    db = tmp_path_factory.mktemp("fixes") / "skillopt.db"
    runs = {"diff": run_sim(db, *SMALL, name="diff run")}
    set_rows(db, "UPDATE skill_versions SET content = ? WHERE run_id = ? AND step = 0 AND kind = 'seed'",
             (OLD, runs["diff"]))
    set_rows(db, "UPDATE runs SET state_json = json_set(state_json, '$.best_skill', ?) WHERE id = ?",
             (NEW, runs["diff"]))
    sleepers = {}
    for key, host in (("reused", process.host_name()), ("elsewhere", OTHER_HOST)):
        runs[key] = run_sim(db, *SMALL, name=f"{key} run")
        proc = sleepers[key] = sleeper()
        started = process.process_started_at(proc.pid)
        # "reused": the recorded pid now names a process that started later (a copied store, a
        # reboot); "elsewhere": the run is live on another machine that shares the store.
        set_rows(db, "UPDATE runs SET status = 'running', stage = 'reflect', pid = ?, host = ?, pid_started_at = ? "
                     "WHERE id = ?", (proc.pid, host, started - 3600 if key == "reused" else started, runs[key]))
    runs["older"] = run_sim(db, *SMALL, name="older run")
    runs["newer"] = run_sim(db, *SMALL, name="newer run")
    yield db, runs, sleepers
    for proc in sleepers.values():
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def dashboard(store, tmp_path_factory):
    db = store[0]
    dash = start_dashboard(db, db.parent / "streamlit.log")
    yield dash
    stop_process(dash.proc)


@pytest.fixture(scope="module")
def browser(dashboard):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = launch_browser(pw)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A 1024 px wide window: a laptop beside a projector, the width metric labels must fit."""
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE_S)
    context = browser.new_context(viewport={"width": 1024, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(PAGE_S)
    yield pg
    context.close()


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def run_picker(page) -> str:
    """The run the page shows: the run selector's value."""
    return page.get_by_role("combobox", name="Run").input_value()


def sidebar_link(page, name: str):
    return page.get_by_test_id("stSidebar").get_by_role("link", name=re.compile(rf"{re.escape(name)}$"))


def truncated_metric_labels(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricLabel"]')]
        .filter(l => [l, ...l.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
        .map(l => l.innerText)""")


# ---- the run follows the reader ------------------------------------------------------------

def test_the_run_follows_the_reader_from_page_to_page(dashboard, store, page):
    _, runs, _ = store
    older = runs["older"]
    open_page(page, dashboard, "2_Monitor", older, ready="Status:")
    links = page.get_by_test_id("stSidebar").get_by_role("link").all_inner_texts()
    assert links[0].split()[-1] == "Home" and not any(t.split()[-1] == "app" for t in links)
    assert "older run" in run_picker(page)
    assert not truncated_metric_labels(page)
    for name, stem in (("Skill evolution", "Skill_evolution"), ("Gate timeline", "Gate_timeline"),
                       ("Rollouts", "Rollouts")):
        sidebar_link(page, name).click()
        page.wait_for_url(re.compile(rf"/{stem}\?run={re.escape(older)}"))
        settle(page)
        assert_no_exception(page)
        assert "older run" in run_picker(page), f"{name} shows another run"
    sidebar_link(page, "Compare runs").click()
    page.wait_for_url(re.compile(r"/Compare_runs"))
    settle(page)
    expect(page.get_by_test_id("stMultiSelect").first).to_contain_text("older run")  # the run being read


def test_an_unknown_run_id_is_said_so_never_replaced(dashboard, store, page):
    open_page(page, dashboard, "3_Skill_evolution", "no-such-run")
    page.get_by_text(re.compile(r"There is no run `?no-such-run`? in this store")).wait_for()
    assert "newer run" not in run_picker(page) and not page.locator(".skillopt-diff").count()
    open_page(page, dashboard, "2_Monitor", "no-such-run")
    page.get_by_text(re.compile(r"There is no run `?no-such-run`?")).wait_for()
    assert not page.get_by_text(re.compile("is starting")).count()
    assert not page.get_by_test_id("stMetric").count()


# ---- the inline diff ---------------------------------------------------------------------

_PARTS_JS = """() => [...document.querySelector('.skillopt-diff').children]
    .map(e => [e.tagName.toLowerCase(), e.textContent])"""


def test_the_inline_diff_keeps_unchanged_lines_and_whole_words(dashboard, store, page):
    _, runs, _ = store
    open_page(page, dashboard, "3_Skill_evolution", runs["diff"], ready="Diff two versions")
    parts = page.evaluate(_PARTS_JS)
    assert {tag for tag, _ in parts} <= {"span", "del", "ins"}
    assert "".join(text for tag, text in parts if tag != "del") == NEW
    assert "".join(text for tag, text in parts if tag != "ins") == OLD
    assert not any("## Legal" in text for tag, text in parts if tag != "span"), "an unchanged heading shown changed"
    for drop in ("del", "ins"):
        pieces = [text for tag, text in parts if tag != drop and text]
        for before, after in zip(pieces, pieces[1:]):
            assert not (re.search(r"\w\Z", before) and re.match(r"\w", after)), f"a word cut: {before!r}|{after!r}"


# ---- New run: problems beside their fields ---------------------------------------------------

def column_of(locator):
    """The st.columns cell a widget sits in."""
    return locator.locator("xpath=ancestor::*[@data-testid='stColumn'][1]")


def test_new_run_problems_sit_beside_their_fields(dashboard, page, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    open_page(page, dashboard, "1_New_run", ready="Model preset")
    page.get_by_text("Upload JSONL / CSV", exact=True).click()
    table = tmp_path / "sums.csv"
    table.write_text("id,question,answer\n" + "".join(f"q{i},What is {i} plus {i}?,{2 * i}\n" for i in range(30)))
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(table))
    ratio = page.get_by_role("textbox", name="Split ratio train:selection:test")
    ratio.wait_for()
    for bad in ("a:b:c", "inf:1:1"):
        ratio.fill(bad)
        ratio.press("Enter")
        beside = column_of(ratio).get_by_test_id("stAlert").filter(has_text=f"split ratio '{bad}'")
        beside.wait_for()
        settle(page)
        assert_no_exception(page)  # "inf" parses as a number: importing it raised a traceback
        assert page.get_by_role("button", name=re.compile("Import task")).is_disabled()

    page.get_by_text("Built-in or imported task", exact=True).click()
    settle(page)
    floor = page.get_by_role("spinbutton", name="min_learning_rate", exact=True)
    # settle() can return before the radio's rerun has started; a click that lands in that
    # rerun is redrawn away and the group stays closed, so click until the field shows. While
    # that rerun draws, the old form's group and the new one can both be on the page: the
    # newest is the one that stays.
    for _ in range(3):
        if not floor.is_visible():
            page.get_by_text(re.compile(r"^Learning rate \(3\)$")).last.click()
        try:
            floor.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            settle(page)
    floor.fill("5")
    floor.press("Enter")
    # The group opens with the problem under the setting it names; section 5 only points to it.
    floor = page.get_by_role("spinbutton", name="min_learning_rate", exact=True)
    column_of(floor).get_by_test_id("stAlert").filter(has_text="min_learning_rate (5) > learning_rate").wait_for()
    page.get_by_text(re.compile(r"Learning rate \(3\) · has a problem")).wait_for()
    assert_no_exception(page)


# ---- Stop and process identity ------------------------------------------------------------

def test_stop_never_signals_a_process_it_cannot_identify(dashboard, store, page):
    _, runs, sleepers = store
    # The recorded pid now names another process (its start time differs): the trainer is gone.
    open_page(page, dashboard, "2_Monitor", runs["reused"], ready="Status:")
    status = page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"^Status:")).first
    expect(status).to_have_text(re.compile("interrupted"))
    stop = page.get_by_role("button", name=re.compile(r"(^|\s)Stop$"))
    if stop.count():  # were it offered, Stop must not reach the unrelated process
        stop.click()
        settle(page)
    assert sleepers["reused"].poll() is None

    # The run is live on another machine: Stop asks through the store and signals nothing here.
    open_page(page, dashboard, "2_Monitor", runs["elsewhere"], ready="Status:")
    page.get_by_role("button", name=re.compile(r"(^|\s)Stop$")).click()
    page.get_by_text(re.compile(rf"Stop: stop requested; the trainer runs on host {re.escape(OTHER_HOST)}.*"
                                r"not signalled")).wait_for()
    assert sleepers["elsewhere"].poll() is None, "Stop signalled a process of this machine by its pid alone"

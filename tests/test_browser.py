"""Issue 4 acceptance in a real browser: Debian's chromium, driven by Playwright, against
the dashboard server (`python -m skillopt dashboard`) and trainer subprocesses on the simulated models.

Flows: launch a run from New run and follow it on Monitor; see an applied edit in the Skill
evolution diff; approve, rewrite and un-decide edits on Approvals until the gate decides, then
find the rewritten edit, under the same number, on Skill evolution and in the blame; stop a
waiting run from Monitor and resume it; then visit the remaining pages. Each page visited is
saved as test-artifacts/<test>-<page>.png (SKILLOPT_UPDATE_SCREENSHOTS=1 also refreshes the
README's data/screenshots/<page>.png). What a page showed wrong before (the run lost between
pages, inline diffs, New run's errors, Stop's signal) is tested in test_browser_fixes.py.

Every wait is an explicit condition with a timeout (Playwright's auto-retrying
expectations); nothing sleeps for a fixed time and asserts afterwards.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from browser_util import (PAGE_S, VIEWPORT, Dashboard, assert_no_exception, button, expect_text, launch_browser,
                          metric, open_page, reader, require_browser, settle, shot, start_dashboard, status_line,
                          stop_process, stop_trainers, wait_status)
from skillopt import launcher
from skillopt.config import DEFAULTS

pytestmark = pytest.mark.browser

SIM = {"target_model": "sim/target", "optimizer_model": "sim/optimizer"}
# approval_poll_s: the waiting trainer notices decisions and stop requests within 0.2 s.
APPROVAL = {**SIM, "approval_mode": True, "approval_poll_s": 0.2}
STARTED: list[subprocess.Popen] = []  # trainer processes started by the tests themselves; ended with the dashboard


def start_run(dash: Dashboard, overrides: dict, name: str) -> tuple[str, subprocess.Popen]:
    """Launch a sim-rulebook trainer the way the dashboard does (launcher.start) and track its process."""
    run_id, proc = launcher.start("sim-rulebook", overrides, db=dash.db, name=name)
    STARTED.append(proc)
    return run_id, proc


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("browser")
    dash = start_dashboard(folder / "skillopt.db", folder / "streamlit.log")
    yield dash
    for proc in STARTED:  # trainers the tests launched, even those that never wrote their run row
        stop_process(proc)
    STARTED.clear()
    stop_trainers(dash.db)  # and those the dashboard launched
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
    from playwright.sync_api import expect

    expect.set_options(timeout=PAGE_S)
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(PAGE_S)
    yield pg
    context.close()


@pytest.fixture(scope="module")
def shared() -> dict:
    """Hands the run launched by the first test to the next one (see launched_run)."""
    return {}


def launched_run(dash: Dashboard, shared: dict) -> str:
    """The run the New-run test launched, or (when this test runs alone) the same run via the launcher."""
    if "run" not in shared:
        run_id, proc = start_run(dash, {**SIM, "num_epochs": 2}, "browser run")
        assert proc.wait(120) == 0, launcher.read_log(dash.db, run_id)
        shared["run"] = run_id
    return shared["run"]


# ---- 1. New run -> Monitor ---------------------------------------------------------------

def test_launch_from_new_run_and_watch_steps(dashboard, page, shared):
    open_page(page, dashboard, "1_New_run", ready="Model preset")
    page.get_by_test_id("stSelectbox").filter(has_text="Task").first.click()
    page.get_by_role("option", name=re.compile(r"^sim-rulebook")).click()
    expect_text(page.get_by_test_id("stCaptionContainer").filter(has_text="sim-rulebook").first, r"train")
    page.get_by_text("Simulated (instant demo)", exact=True).click()
    page.get_by_text("Simulated models are not real").wait_for()
    page.get_by_text("Loop (5)").click()
    epochs = page.get_by_role("spinbutton", name="num_epochs", exact=True)
    epochs.fill("2")
    epochs.press("Enter")
    page.get_by_role("textbox", name="Run name (optional)").fill("browser run")
    page.get_by_role("textbox", name="Run name (optional)").press("Enter")
    expect_text(metric(page, "Steps"), r"^6$")  # 2 epochs × 3 steps: the estimate follows the knob
    shot(page, "launch", "new_run", focus=page.get_by_role("heading", name="3 · Models"))

    button(page, "Launch run").click()
    success = page.get_by_text(re.compile(r"^Launched run \S+\.$"))
    success.wait_for()
    run_id = re.search(r"Launched run (\S+)\.", success.inner_text()).group(1)
    shared["run"] = run_id

    page.get_by_role("link", name=re.compile(rf"Watch run {re.escape(run_id)} on the Monitor page")).click()
    page.wait_for_url(re.compile(rf"/Monitor\?run={re.escape(run_id)}"))
    # The fragment refreshes every 2 s: wait for the step counter to pass 2 (out of 6).
    expect_text(metric(page, "Step"), r"^[2-6] / 6$")
    expect_text(status_line(page), r"completed")
    expect_text(metric(page, "Step"), r"^6 / 6$")
    page.get_by_text("This run used simulated models").wait_for()
    assert_no_exception(page)
    shot(page, "launch", "monitor")

    r = reader(dashboard)
    try:
        row = r.run(run_id)
        assert row["name"] == "browser run" and row["config"]["num_epochs"] == 2
        assert row["config"]["target_model"] == "sim/target"
        assert len(r.steps(run_id)) == 6
    finally:
        r.close()


# ---- 2. Skill evolution diff -------------------------------------------------------------

def test_skill_evolution_shows_an_applied_edit_in_the_diff(dashboard, page, shared):
    run_id = launched_run(dashboard, shared)
    r = reader(dashboard)
    try:
        best = r.best_skill(run_id) or ""
        lines = [e["content"].strip() for e in r.applied_edits(run_id) if e["op"] == "add" and e["content"]]
    finally:
        r.close()
    in_best = [c for c in lines if "\n" not in c and c in best.splitlines()]
    assert in_best, "the simulated run kept no added line in its best skill"
    added = in_best[0]

    open_page(page, dashboard, "3_Skill_evolution", run_id, ready="Diff two versions")
    diff = page.locator(".skillopt-diff")
    expect_text(diff, re.escape(added))  # seed vs best, inline: the edit's line is in the diff box
    assert page.locator(".skillopt-diff ins").count() > 0
    shot(page, "evolution", "skill_evolution", focus=page.get_by_role("tab", name="Diff two versions"))

    page.get_by_text("side by side", exact=True).click()
    cell = page.locator(".skillopt-diff td").filter(has_text=added)
    cell.first.wait_for()
    # Side by side, the added line sits in the right column on the green "inserted" background.
    assert re.search(r"background:\s*rgba\(60,\s*200,\s*90", cell.last.get_attribute("style"))
    page.get_by_text("Fold unchanged lines", exact=True).click()  # enabled only side by side
    expect_text(diff, r"… \d+ unchanged lines? …")
    cell.first.wait_for()  # the changes stay visible around the fold
    shot(page, "evolution", "skill_evolution_side_by_side", focus=page.get_by_role("tab", name="Diff two versions"))


# ---- 3. Approvals until the gate decides -------------------------------------------------

PERSON = " (checked by a person)"  # what the test's person appends to the edit they rewrite


def edit_number(card) -> int:
    return int(re.search(r"Edit (\d+):", card.inner_text()).group(1))


def approval_card(page, n: int = 0):
    """The bordered card of the n-th edit on Approvals: the block around its header's columns."""
    header = page.get_by_text(re.compile(r"^Edit \d+: ")).nth(n)
    return header.locator("xpath=ancestor::*[@data-testid='stHorizontalBlock'][1]"
                          "/ancestor::*[@data-testid='stVerticalBlock'][1]")


def approve_step_one(page) -> tuple[int, str]:
    """Decide step 1 the way a person would: reject the last edit and take that back, rewrite
    the first one, approve the rest. Returns the rewritten edit's number and its new text."""
    heading = page.get_by_text(re.compile(r"^Step 1: \d+ of \d+ edits wait for your decision$"))
    total = int(re.search(r"of (\d+) edits", heading.inner_text()).group(1))
    assert total >= 2, "step 1 proposes at least two edits"
    # A decision can be taken back while another edit of the step still waits.
    button(page, "Reject").last.click()
    expect_text(heading, rf"^Step 1: {total - 1} of {total} edits")
    button(page, "Undo this decision").click()
    expect_text(heading, rf"^Step 1: {total} of {total} edits")

    first = approval_card(page, 0)
    number = edit_number(first)
    proposed = first.get_by_test_id("stCode").first.inner_text().strip()
    first.get_by_role("button", name=re.compile("Edit, then approve")).click()
    box = page.get_by_role("textbox", name="Content")
    rewritten = proposed + PERSON
    box.fill(rewritten)
    box.press("Control+Enter")
    settle(page)
    button(page, "Approve edited").click()
    for left in range(total - 1, 0, -1):
        expect_text(heading, rf"^Step 1: {left} of {total} edits")
        button(page, "Approve").first.click()
    return number, rewritten


def test_approve_edits_until_the_gate_decides(dashboard, page):
    run_id, _ = start_run(dashboard, {**APPROVAL, "num_epochs": 1, "max_steps_per_epoch": 2}, "approval run")
    wait_status(dashboard, run_id, ("waiting_approval",))

    # A second tab on the Monitor page: its live fragment must follow the run without a reload.
    monitor = page.context.new_page()
    open_page(monitor, dashboard, "2_Monitor", run_id, ready="Status:")
    expect_text(status_line(monitor), r"waiting_approval")
    monitor.get_by_text("Edits wait for your approval: open Approvals").wait_for()
    expect_text(metric(monitor, "Step"), r"^0 / 2$")
    shot(monitor, "approval", "monitor_waiting")

    open_page(page, dashboard, "6_Approvals", run_id, ready="wait for your decision")
    page.get_by_text(re.compile(r"waits for your approval of step 1")).first.wait_for()  # the badge
    shot(page, "approval", "approvals")
    number, rewritten = approve_step_one(page)
    # All decided: the trainer applies them, gates step 1, and the next step's edits wait;
    # the page says what the gate made of step 1.
    page.get_by_text(re.compile(r"^Step 2: \d+ of \d+ edits wait for your decision$")).wait_for()
    verdict = page.get_by_text(re.compile(r"^Step 1: the gate (accepted|rejected)"))
    verdict.wait_for()
    shot(page, "approval", "approvals_step2", focus=verdict)

    # Monitor (no reload): step 1 is done; the gate timeline has its decision.
    expect_text(metric(monitor, "Step"), r"^1 / 2$")
    r = reader(dashboard)
    try:
        decision = r.steps(run_id)[0]["decision"]
        decided = {a["status"] for a in r.approvals(run_id, 1)}
    finally:
        r.close()
    assert decided == {"approved", "edited"}
    assert ("accepted" in verdict.inner_text()) == (decision in ("accept", "accept_new_best"))
    monitor.close()

    open_page(page, dashboard, "4_Gate_timeline", run_id, ready="Rejected-edit buffer")
    caption = page.get_by_text(re.compile(r"^1 steps · "))
    caption.wait_for()
    label = {"accept_new_best": "accept (new best): 1", "accept": "accept: 1", "reject": "reject: 1",
             "skip": "skip (no applicable edit): 1"}[decision]
    assert label in caption.inner_text()
    page.locator(".js-plotly-plot").first.wait_for()
    shot(page, "approval", "gate_timeline_step1")

    human_edit_is_shown_with_its_number(page, dashboard, run_id, number, rewritten, decision)
    launcher.stop(run_id, db=dashboard.db)  # step 2 would wait for ever; the trainer stops cooperatively
    wait_status(dashboard, run_id, ("stopped",))


def human_edit_is_shown_with_its_number(page, dash: Dashboard, run_id: str, number: int, rewritten: str,
                                        decision: str) -> None:
    """Skill evolution shows the person's text, the optimizer's proposal and the same number
    the edit had on Approvals; the blame names the person."""
    open_page(page, dash, "3_Skill_evolution", run_id, ready="Diff two versions")
    page.get_by_role("tab", name="Edits of a step").click()
    badges = page.get_by_test_id("stMarkdownContainer").filter(
        has=page.get_by_text(f"edit {number}", exact=True)).filter(has_text="edited by a person").first
    card = badges.locator("xpath=ancestor::*[@data-testid='stVerticalBlock'][1]")
    card.wait_for()
    card.get_by_test_id("stCode").nth(1).wait_for()  # the tab is built once opened: its code blocks stream in
    codes = [c.strip() for c in card.get_by_test_id("stCode").all_inner_texts()]
    assert codes[:2] == [rewritten, rewritten.removesuffix(PERSON)]  # the applied text first, then the proposal
    card.get_by_text("content, as a person rewrote it during approval (this text was applied)").wait_for()
    shot(page, "approval", "skill_evolution_edited", focus=card)
    if decision in ("accept", "accept_new_best"):  # the rewritten line is in the best skill: blame names the person
        page.get_by_role("tab", name="Blame of the best skill").click()
        page.get_by_text(re.compile(rf"Rewritten by a person during approval: step 1 · edit {number} \(1 line\)")
                         ).wait_for()


# ---- 4. Stop from Monitor, then resume ----------------------------------------------------

def test_stop_a_waiting_run_from_monitor_and_resume_it(dashboard, page):
    run_id, proc = start_run(dashboard, {**APPROVAL, "num_epochs": 4}, "run to stop")
    wait_status(dashboard, run_id, ("waiting_approval",))
    open_page(page, dashboard, "2_Monitor", run_id, ready="Status:")
    expect_text(status_line(page), r"waiting_approval")
    expect_text(metric(page, "Step"), r"^0 / 12$")
    shot(page, "stop", "monitor_live")

    button(page, "Stop").click()
    expect_text(status_line(page), r"stopped")
    button(page, "Resume").wait_for()  # a stopped run can be resumed
    assert not button(page, "Stop").count()
    settle(page)
    assert_no_exception(page)
    # The store says "done" for every end; a stopped run lights no stage of the strip.
    strip = page.get_by_test_id("stMarkdownContainer").filter(has_text="Rollout →").first
    expect_text(strip, r"ended early: stopped")
    assert not strip.locator("strong").filter(has_text="Done").count()
    shot(page, "stop", "monitor_stopped")
    proc.wait(30)
    assert proc.returncode not in (130, -15), "the trainer had to be killed instead of stopping cooperatively"
    assert wait_status(dashboard, run_id, ("stopped",)) == "stopped"
    r = reader(dashboard)
    try:
        assert r.run(run_id)["reason"] == "stop requested"  # the SIGTERM fallback would say otherwise
    finally:
        r.close()

    # Resume: at once no second Resume, and the page follows the trainer back to life by itself.
    from playwright.sync_api import expect

    button(page, "Resume").click()
    try:
        expect(button(page, "Resume")).to_have_count(0)
        expect_text(status_line(page), r"waiting_approval")
        button(page, "Stop").wait_for()
    finally:
        # The resumed trainer is the dashboard's child, not the test's: stop it once it has
        # reported (resuming clears a stop requested before it started).
        wait_status(dashboard, run_id, ("waiting_approval",))
        launcher.stop(run_id, db=dashboard.db)
        wait_status(dashboard, run_id, ("stopped",))


# ---- 5. the other pages, on the completed run ---------------------------------------------

PAGES = {  # page file stem -> (screenshot name, text that shows it rendered with data)
    "app": ("home", "runs shown"),
    "4_Gate_timeline": ("gate_timeline", "6 steps · "),
    "5_Slow_updates": ("slow_updates", "Guidance written this epoch"),
    "7_Rollouts": ("rollouts", "Flip matrix"),
    "8_Compare_runs": ("compare_runs", "keys differ"),
}


@pytest.mark.parametrize("stem", list(PAGES))
def test_every_page_renders_the_run(dashboard, page, shared, stem):
    run_id = launched_run(dashboard, shared)  # no wait: the data cache is keyed by the store's version
    name, ready = PAGES[stem]
    if stem == "8_Compare_runs":
        # The other gate than the default: the two runs differ at least in gate_mode.
        other_gate = "strict" if DEFAULTS["gate_mode"].default == "paired" else "paired"
        other, proc = start_run(dashboard, {**SIM, "num_epochs": 2, "gate_mode": other_gate}, f"{other_gate} gate")
        assert proc.wait(120) == 0
        open_page(page, dashboard, stem, ready=ready, runs=f"{run_id},{other}")
        expect_text(page.get_by_test_id("stMultiSelect"), rf"browser run.*{other_gate} gate")
        expect_text(page.get_by_text(re.compile(r"keys differ")), r"^[1-9]\d* of \d+ keys differ")  # gate_mode
    else:
        open_page(page, dashboard, stem, None if stem == "app" else run_id, ready=ready)
    shot(page, "tour", name)
    if stem == "7_Rollouts":  # the test split item by item, and the choice task's confusion table
        section = page.get_by_role("heading", name="Test split: seed skill vs best skill")
        page.get_by_text(re.compile(r"^\d+ test items · \d+ fixed · \d+ broken")).wait_for()
        shot(page, "tour", "rollouts_test_split", focus=section)

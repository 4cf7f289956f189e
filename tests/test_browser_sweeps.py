"""The Sweeps page in a real browser (Debian's chromium through Playwright, against the
dashboard server, `python -m skillopt dashboard`): build a small grid, launch the sweep from the page, watch the heatmap fill as trials
finish, click a cell to open its trial's run on the Monitor page.

Screenshots go to test-artifacts/sweeps-*.png (SKILLOPT_UPDATE_SCREENSHOTS=1 also refreshes the
README's data/screenshots/sweeps.png, the finished sweep). Every wait is an explicit condition with a timeout.
"""
from __future__ import annotations

import re
import time

import pytest

from browser_util import (ARTIFACTS, PAGE_S, VIEWPORT, assert_no_exception, launch_browser, open_page, require_browser, settle,
                          shot, start_dashboard, stop_process)
from skillopt.store.reader import Reader

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    require_browser()
    folder = tmp_path_factory.mktemp("browser-sweeps")
    dash = start_dashboard(folder / "skillopt.db", folder / "streamlit.log")
    yield dash
    stop_process(dash.proc)


@pytest.fixture
def page(dashboard):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=PAGE_S)
    with sync_playwright() as pw:
        browser = launch_browser(pw)
        pg = browser.new_context(viewport=VIEWPORT).new_page()
        pg.set_default_timeout(PAGE_S)
        yield pg
        browser.close()


def remove_choice(page, label: str, value: str) -> None:
    """Drop one chosen value of a multiselect (its chip's delete cross)."""
    box = page.get_by_test_id("stMultiSelect").filter(has_text=label)
    box.get_by_role("button", name=f"Remove {value}", exact=True).click()
    settle(page)


def shot_path(name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"sweeps-{name}.png"


def done_cells(page, cells: int = 4) -> int | None:
    """How many cells of the first heatmap show a finished trial ("1/1 done"); None while the
    refresh redraws the chart (not every cell's "k/1 done" label is drawn yet)."""
    text = page.get_by_test_id("stPlotlyChart").first.inner_text()
    return text.count("1/1 done") if text.count("/1 done") == cells else None


def test_launch_a_sweep_watch_the_heatmap_fill_and_open_a_trial(dashboard, page):
    from playwright.sync_api import expect

    open_page(page, dashboard, "9_Sweeps", ready="No sweeps yet")
    for value in ("8", "16"):
        remove_choice(page, "learning_rate values", value)
    for value in ("linear", "autonomous"):
        remove_choice(page, "lr_scheduler values", value)
    settings = page.get_by_role("textbox", name="Settings of every trial (one key=value per line)")
    settings.fill("num_epochs=1\nmax_steps_per_epoch=1\ntarget_model=sim/target?latency=0.01")
    workers = page.get_by_role("spinbutton", name="Trials at once (0 = default)")
    workers.fill("1")  # one at a time, so the heatmap visibly fills cell by cell
    workers.press("Enter")
    page.get_by_role("textbox", name="Sweep name (optional)").fill("browser sweep")
    page.get_by_role("textbox", name="Sweep name (optional)").press("Enter")
    settle(page)
    page.get_by_text("4 trials: each an ordinary run").wait_for()
    page.get_by_role("button", name=re.compile(r"Launch sweep$")).click()
    page.wait_for_url(re.compile(r"\?sweep=sweep-"))
    sweep_id = re.search(r"sweep=(sweep-[\w-]+)", page.url).group(1)

    seen: list[int] = []  # finished cells, each time the 2 s refresh redrew the heatmap
    deadline = time.monotonic() + PAGE_S / 1000 * 3
    while time.monotonic() < deadline and 4 not in seen:
        try:
            n = done_cells(page)
        except Exception:  # the chart is being redrawn by the refresh
            continue
        if n is None:  # half drawn: read it again
            time.sleep(0.05)
            continue
        if n not in seen:
            seen.append(n)
            if 0 < n < 4 and len([x for x in seen if 0 < x < 4]) == 1:
                page.screenshot(path=str(shot_path("sweeps_filling")))
        time.sleep(0.2)
    assert 4 in seen, seen
    assert any(0 < n < 4 for n in seen), f"never saw a partly filled heatmap: {seen}"
    assert seen == sorted(seen), seen  # cells only ever fill
    expect(page.get_by_text(re.compile(r"^4 of 4 trials finished"))).to_be_visible()
    expect(page.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"^Status:")).first) \
        .to_have_text(re.compile("completed"))
    settle(page)
    assert_no_exception(page)
    shot(page, "sweeps", "sweeps")

    reader = Reader(dashboard.db)
    try:
        trials = reader.sweep_trials(sweep_id)
        assert reader.sweep(sweep_id)["name"] == "browser sweep"
    finally:
        reader.close()
    assert [t["status"] for t in trials] == ["completed"] * 4

    # Click the top-left cell of the first heatmap: its trial's run opens on the Monitor page.
    chart = page.get_by_test_id("stPlotlyChart").first
    marker = chart.locator(".scatterlayer .trace .points path").first
    box = marker.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"/Monitor\?run=" + re.escape(sweep_id) + r"-\d{3}"))
    run_id = re.search(r"run=([\w-]+)", page.url).group(1)
    assert run_id in {t["run_id"] for t in trials}
    page.get_by_text("browser sweep · lr=").first.wait_for()
    settle(page)
    assert_no_exception(page)
    page.screenshot(path=str(shot_path("trial_monitor")))

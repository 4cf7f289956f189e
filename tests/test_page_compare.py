"""Compare runs page: two real simulated runs with different settings, overlaid and diffed."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import run_sim, tables
from skillopt.store.reader import Reader
from skillopt.ui import compare

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/8_Compare_runs.py"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    db = tmp_path_factory.mktemp("compare") / "skillopt.db"
    a = run_sim(db, "num_epochs=1", name="one epoch")
    b = run_sim(db, "num_epochs=2", "lr_scheduler=constant", name="two epochs")
    return db, a, b


def page(runs: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)
    if runs is not None:
        at.query_params["runs"] = runs
    at.run()
    assert not at.exception
    return at


def test_two_runs_overlaid_with_params_and_skill_diff(two_runs, monkeypatch):
    db, a, b = two_runs
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    reader = Reader(db)
    at = page(f"{a},{b}")
    assert at.multiselect[0].value == [a, b]

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    curves = {t["name"]: t for t in spec["data"]}
    assert len(curves) == 2
    for run_id, name in ((a, "one epoch"), (b, "two epochs")):
        trace = next(t for label, t in curves.items() if label.startswith(name))
        steps = reader.steps(run_id)
        assert trace["x"] == [0] + [s["step"] for s in steps]
        assert trace["y"][0] == pytest.approx(reader.seed_score(run_id))
        # the curve follows the incumbent after each step (a later epoch-end slow update is not a step)
        last = reader.steps(run_id)[-1]
        after = last["candidate_score"] if last["decision"].startswith("accept") else last["current_score"]
        assert trace["y"][-1] == pytest.approx(after)
        assert "SIMULATED" in next(label for label in curves if label.startswith(name))

    # What each run spent, side by side.
    costs = tables(at)[0]
    for run_id, column in zip((a, b), costs.columns):
        usage = reader.usage(run_id)
        assert costs.loc["target calls", column] == f"{usage['target_calls']:,}"
        assert costs.loc["prompt tokens", column] == f"{usage['prompt_tokens']:,}"
        assert costs.loc["evaluation-cache hits", column] == f"{usage['eval_cache_hits']:,}"
        assert costs.loc["wall time", column] != "—"
    # Each run its own colour.
    colours = [t["line"]["color"] for t in spec["data"]]
    assert len(set(colours)) == 2

    params = tables(at)[1]
    assert {"num_epochs", "lr_scheduler"} <= set(params.index)  # only differing keys by default
    assert "batch_size" not in params.index and "seed" not in params.index
    assert list(params.loc["num_epochs"]) == ["1", "2"]
    at.toggle[0].set_value(False).run()
    assert "batch_size" in tables(at)[1].index

    best_a, best_b = reader.best_skill(a), reader.best_skill(b)
    assert best_a != best_b
    diff_html = next(m.value for m in at.markdown if "skillopt-diff" in m.value)
    # The inline diff read without its insertions is run A's best skill, without its deletions run B's.
    assert side(diff_html, drop="ins") == best_a
    assert side(diff_html, drop="del") == best_b


def side(diff_html: str, drop: str) -> str:
    kept = re.sub(rf"<{drop}\b[^>]*>.*?</{drop}>", "", diff_html, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", kept))


def test_without_a_link_it_opens_on_the_current_run(two_runs, monkeypatch):
    db, a, b = two_runs
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)
    at.query_params["run"] = a  # the run another page was showing (b is newer)
    at.run()
    assert not at.exception
    assert at.multiselect[0].value == [a, b]


def test_runs_from_the_url_and_a_single_run(two_runs, monkeypatch):
    db, a, b = two_runs
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = page(a)
    assert at.multiselect[0].value == [a]
    assert any("Pick two runs" in c.value for c in at.caption)
    at.multiselect[0].set_value([b, a]).run()
    assert at.query_params["runs"] == [f"{b},{a}"] or at.query_params["runs"] == f"{b},{a}"


def test_params_frame_marks_differences():
    runs = [{"task": "t", "status": "completed", "simulated": 1, "best_score": 0.5,
             "config": {"num_epochs": 1, "seed": 42, "gate_alpha": 0.25}},
            {"task": "t", "status": "completed", "simulated": 1, "best_score": 0.75,
             "config": {"num_epochs": 2, "seed": 42, "gate_alpha": 0.25}}]
    frame, differing = compare.params_frame(runs, ["a", "b"])
    assert differing == ["best selection score", "num_epochs"]
    assert list(frame.loc["gate_alpha"]) == ["0.25", "0.25"] and list(frame.loc["simulated"]) == ["true", "true"]
    assert list(frame.loc["test: seed"]) == ["", ""]

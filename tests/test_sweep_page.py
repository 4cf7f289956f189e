"""The Sweeps page (AppTest) against a real simulated sweep with three axes: heatmaps, parallel
coordinates, the trial table, the best trial used as a seed; and the grid builder's launch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from skillopt import launcher
from skillopt.store.reader import Reader
from skillopt.sweep import local

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGE = "pages/9_Sweeps.py"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """(db, sweep id) of a completed 2 × 1 × 2 sweep (learning_rate × lr_scheduler × gate_mode)."""
    db = tmp_path_factory.mktemp("sweep-page") / "s.db"
    env = {k: v for k, v in os.environ.items() if k != "SKILLOPT_DB"}
    out = subprocess.run([sys.executable, "-m", "skillopt", "sweep", "start", "--task", "sim-rulebook",
                          "--grid", "learning_rate=2,4", "--grid", "lr_scheduler=constant", "--grid",
                          "gate_mode=strict,paired", "--set", "target_model=sim/target", "--set",
                          "optimizer_model=sim/optimizer", "--set", "num_epochs=1", "--set", "max_steps_per_epoch=1",
                          "--sweep-id", "sweep-page", "--db", str(db)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return db, "sweep-page"


def page(db: Path, monkeypatch, sweep_id: str | None = None) -> AppTest:
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)  # app.py stays the entrypoint, so page links resolve as in the browser
    if sweep_id:
        at.query_params["sweep"] = sweep_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_the_page_shows_heatmaps_parallel_coordinates_and_every_trial(swept, monkeypatch):
    db, sweep_id = swept
    at = page(db, monkeypatch, sweep_id)
    kinds = [s["data"][0]["type"] for s in specs(at)]
    assert kinds == ["heatmap", "heatmap", "parcoords"]  # three axes: parallel coordinates too
    selection = specs(at)[0]["data"][0]
    assert selection["x"] == ["2", "4"] and selection["y"] == ["constant"]
    assert all("2/2 done" in cell for cell in selection["text"][0])  # gate_mode's two trials pool in a cell
    frame = at.dataframe[0].value
    assert list(frame["trial"]) == [0, 1, 2, 3] and set(frame["status"]) == {"completed"}
    assert list(frame["open"]) == [f"Monitor?run={sweep_id}-{i:03d}" for i in range(4)]
    assert any("4 of 4 trials finished" in p.proto.text for p in at.get("progress"))


def test_the_best_trials_skill_seeds_a_new_run_with_its_settings(swept, monkeypatch):
    db, sweep_id = swept
    launched = []
    monkeypatch.setattr(launcher, "launch", lambda task, overrides, **kw: launched.append((task, overrides, kw))
                        or "new-run")
    at = page(db, monkeypatch, sweep_id)
    next(b for b in at.button if b.label == "Use the best trial's skill as a seed").click().run()
    reader = Reader(db)
    try:
        trials = reader.sweep_trials(sweep_id)
        best = max(trials, key=lambda t: (t["best_score"], t["best_test"], -t["idx"]))
        best_skill = reader.best_skill(best["run_id"])
    finally:
        reader.close()
    (task, overrides, kw), = launched
    assert task.endswith("sim-rulebook") and kw["seed_skill"] == best_skill
    assert {k: overrides[k] for k in ("learning_rate", "lr_scheduler", "gate_mode", "seed")} == {
        **json.loads(best["point_json"]), "seed": best["seed"]}
    assert "max_calls" not in overrides  # the sweep's budget share is not carried over
    assert any("new-run" in p.proto.page or "new-run" in str(p.proto) for p in at.get("page_link"))


def test_the_grid_builder_launches_the_sweep_it_shows(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(local, "start_controller", lambda args, db, sweep_id: started.append((args, sweep_id)))
    at = page(tmp_path / "empty.db", monkeypatch)
    assert any("No sweeps yet" in i.value for i in at.info)
    at.text_area[1].set_value("num_epochs=1\nmax_steps_per_epoch=1").run()
    assert any("16 trials" in c.value for c in at.caption)
    next(b for b in at.button if b.label == "Launch sweep").click().run()
    (args, sweep_id), = started
    assert args[:2] == ["start", "--task"] and "sim-rulebook" in args
    assert "learning_rate=2,4,8,16" in args and "lr_scheduler=cosine,linear,constant,autonomous" in args
    assert args[args.index("--sweep-id") + 1] == sweep_id and at.query_params["sweep"] in (sweep_id, [sweep_id])


def test_the_grid_builder_refuses_a_bad_grid_in_one_line(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(local, "start_controller", lambda *a: started.append(a))
    at = page(tmp_path / "empty.db", monkeypatch)
    at.text_area[0].set_value("learning_rat=2,4").run()
    next(b for b in at.button if b.label == "Launch sweep").click().run()
    assert not started
    assert any("unknown config key 'learning_rat'" in e.value for e in at.error)

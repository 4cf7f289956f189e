"""Monitor page and skillopt/ui/monitor.py, against a real simulated run."""
from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from skillopt import events as ev
from skillopt.store import export
from skillopt import launcher, schedules
from skillopt import process
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.ui import monitor as mon
from tests.helpers import tables

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/2_Monitor.py"


def page(run_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)  # app.py stays the entrypoint, so page links resolve as in the browser
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    return at


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def traces(spec: dict) -> dict[str, dict]:
    return {t["name"]: t for t in spec["data"]}


def copy_db(src: Path, dst: Path) -> Path:
    """A private copy of the fixture store (the backup API also copies the WAL's content)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def test_completed_run_shows_its_numbers(sim_db_env):
    db, run_id = sim_db_env
    reader = Reader(db)
    run, steps, tests = reader.run(run_id), reader.steps(run_id), reader.tests(run_id)
    at = page(run_id)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Step"] == f"{run['step']} / {run['total_steps']}"
    assert metrics["Epoch"] == f"{run['epoch']} / 3"
    assert metrics["Best selection"] == f"{run['best_score']:.3f}"
    assert metrics["Selection (current)"] == f"{run['current_score']:.3f}"
    usage = reader.usage(run_id)
    assert metrics["Model calls"] == f"{usage['target_calls'] + usage['optimizer_calls'] + usage['judge_calls']:,}"
    assert any("SIMULATED" in i.value or "simulated models" in i.value for i in at.info)

    curves, budget = charts(at)
    t = traces(curves)
    assert t["selection: current skill"]["x"] == [0] + [s["step"] for s in steps]
    assert t["selection: current skill"]["y"][0] == pytest.approx(reader.seed_score(run_id))
    assert t["selection: current skill"]["y"][-1] == pytest.approx(run["current_score"])
    assert t["best so far"]["y"][-1] == pytest.approx(run["best_score"])
    assert len(t["train batch (hard)"]["x"]) == len(steps)
    assert len(t["selection: candidate"]["x"]) == sum(s["candidate_score"] is not None for s in steps)
    for which in ("seed", "best", "final"):
        assert t[f"test: {which} skill"]["y"] == [pytest.approx(tests[which]["score"])]
    if "none" in tests:
        assert t["test: no skill"]["y"] == [pytest.approx(tests["none"]["score"])]
    # The headline: the test result first, and how long the run took.
    head = next(m.value for m in at.markdown if m.value.startswith("**Test split:**"))
    assert f"seed {tests['seed']['score']:.3f}" in head and f"**best {tests['best']['score']:.3f}**" in head
    detail = next(c.value for c in at.caption if " · took " in c.value)
    assert mon.human_duration(run["finished_at"] - run["started_at"]) in detail

    b = traces(budget)
    config = run["config"]
    assert b["schedule (cosine)"]["y"] == [schedules.budget("cosine", i, run["total_steps"], config["learning_rate"],
                                                            config["min_learning_rate"])
                                           for i in range(run["total_steps"])]
    assert b["edits applied"]["y"] == [s["n_applied"] for s in steps]

    usage_table = tables(at)[0]
    assert usage_table["calls"].astype(int).sum() == sum(r["calls"] for r in reader.usage_by_stage(run_id))
    assert set(usage_table["stage"]) >= {"rollout", "reflection", "gate", "test"}  # labels, not internal names
    events = tables(at)[1]
    assert "completed" in set(events["message"])
    labels = {b.label for b in at.button}
    assert "Stop" not in labels and "Resume" not in labels  # a completed run is final
    assert [d.label for d in at.get("download_button")] == ["run.json", "best_skill.md", "steps.csv"]


def test_export_files_match_the_cli_export(sim_run, tmp_path):
    db, run_id = sim_run
    reader = Reader(db)
    files = mon.export_files(reader, run_id)
    written = {p.name: p.read_text(encoding="utf-8") for p in export.export_run(reader, run_id, tmp_path)}
    for name, (_, produce) in files.items():
        assert produce() == written[name]
    rows = list(csv.DictReader(io.StringIO(files["steps.csv"][1]())))
    assert len(rows) == len(reader.steps(run_id))


def test_unknown_run_id_is_said_so_not_replaced(sim_db_env):
    at = page("20990101-000000-abcdef")
    assert any("There is no run `20990101-000000-abcdef`" in w.value for w in at.warning)
    assert not at.metric  # no other run's numbers in its place
    assert at.selectbox[0].value is None


def test_a_launched_run_without_a_row_is_starting(sim_db_env):
    db, _ = sim_db_env
    log = launcher.log_path(db, "20990101-000000-fedcba")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("loading the task…\n")
    try:
        at = page("20990101-000000-fedcba")
        assert any("is starting" in i.value for i in at.info)
        assert any("loading the task" in c.value for c in at.code)
        assert [b.label for b in at.button] == ["Show another run instead"]
    finally:
        log.unlink()


def test_stopped_run_offers_resume(sim_run, tmp_path, monkeypatch):
    db = copy_db(sim_run[0], tmp_path / "stopped.db")
    run_id = sim_run[1]
    store = Store(db)
    store.set_status(run_id, "stopped", "stop requested")
    store.close()
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    resumed = []
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a trainer still starting

    def fake_resume(rid, db=None):
        resumed.append((rid, db))
        return trainer

    monkeypatch.setattr(launcher, "resume", fake_resume)
    try:
        at = page(run_id)
        assert "Stop" not in [b.label for b in at.button]
        assert not any("**:blue[" in m.value for m in at.markdown if "Rollout" in m.value)  # stopped: no stage lit
        next(b for b in at.button if b.label == "Resume").click().run()
        assert not at.exception
        assert resumed == [(run_id, db)]
        # Until the trainer reports, the page says it is resuming and offers no second Resume.
        assert any(f"pid {trainer.pid}) is starting" in i.value for i in at.info)
        assert "Resume" not in [b.label for b in at.button]
    finally:
        trainer.kill()
        trainer.wait()


def test_model_call_faults_show_errors_and_notes_in_their_own_columns(sim_run, tmp_path, monkeypatch):
    """A retried call that answered is a note, not an error: the heading counts errors only."""
    import time

    from skillopt.models.llm import CallRecord

    db = copy_db(sim_run[0], tmp_path / "faults.db")
    run_id = sim_run[1]
    store = Store(db)
    before = Reader(db).usage(run_id)
    fitted = "prompt fitted to the context window: 4 of 8 cases"
    for error, note in (("context: Requested tokens (4126) exceed context window of 4096", ""), ("", fitted)):
        store.record_call(CallRecord(run_id, 98, "optimizer", "reflect", "local/qwen2.5-coder-1.5b", 5, 1, 0.0,
                                     0.01, False, error, 1, time.time(), note=note))
    for error, note in (("timeout: read timed out", ""), ("", "retried: rate_limit: slow down")):
        store.record_call(CallRecord(run_id, 99, "target", "test", "sim/target", 5, 1, 0.0, 0.01, False, error, 2,
                                     time.time(), note=note))
    store.close()
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = page(run_id)
    errors, notes = before["errors"] + 2, before["notes"] + 2
    assert [m.value for m in at.markdown if m.value.startswith("**Model call faults**")] == [
        f"**Model call faults** · {errors:,} error(s) · {notes:,} note(s)"]
    faults = next(t for t in tables(at) if "note" in t.columns)
    assert list(faults.columns) == ["step", "stage", "role", "model", "attempts", "error", "note", "cause"]
    causes = {s: c for s, c in zip(faults["step"].astype(int), faults["cause"]) if s in (98, 99)}  # sim: on purpose
    assert causes == {99: "injected by the simulated model", 98: "prompt longer than the model's context"}
    assert [tuple(r) for r in faults[["step", "error", "note"]].head(2).itertuples(index=False)] == [
        ("99", "", "retried: rate_limit: slow down"), ("99", "timeout: read timed out", "")]
    usage_table = tables(at)[0]
    assert (usage_table["errors"].astype(int).sum(), usage_table["notes"].astype(int).sum()) == (errors, notes)


def _set_live(db: Path, run_id: str, pid: int, host: str | None = None, started_at: float | None = None) -> None:
    """Mark the run live in trainer process `pid` of this host (its real start time by default)."""
    store = Store(db)
    store.set_status(run_id, "running", pid=pid)
    with store.tx() as c:
        c.execute("UPDATE runs SET host = ?, pid_started_at = ? WHERE id = ?",
                  (host or process.host_name(), started_at or process.process_started_at(pid), run_id))
    run = store.run(run_id)
    store(ev.StageChanged(run_id=run_id, step=run["step"], epoch=run["epoch"], stage="reflect"))
    store.close()


def test_live_run_can_be_stopped(sim_run, tmp_path, monkeypatch):
    db = copy_db(sim_run[0], tmp_path / "live.db")
    run_id = sim_run[1]
    _set_live(db, run_id, os.getpid())  # a process that certainly runs: this one
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    stopped = []
    monkeypatch.setattr(launcher, "stop", lambda rid, db=None, grace_s=0: stopped.append((rid, grace_s)) or "stopped")
    at = page(run_id)
    assert any("`running`" in m.value for m in at.markdown)
    assert "Resume" not in [b.label for b in at.button]
    next(b for b in at.button if b.label == "Stop").click().run()
    assert stopped and stopped[0][0] == run_id and stopped[0][1] > 0


def test_run_whose_process_died_is_interrupted_and_resumable(sim_run, tmp_path, monkeypatch):
    db = copy_db(sim_run[0], tmp_path / "dead.db")
    run_id = sim_run[1]
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    _set_live(db, run_id, child.pid)
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = page(run_id)
    assert any("`interrupted`" in m.value for m in at.markdown)
    assert any("process is gone" in w.value for w in at.warning)
    assert "Resume" in [b.label for b in at.button]


# ---- helpers ----------------------------------------------------------------------------

def test_eta_is_mean_step_duration_times_steps_left():
    steps = [{"step": 1, "duration_s": 10.0}, {"step": 2, "duration_s": 20.0}]
    assert mon.eta_seconds(steps, 6) == pytest.approx(4 * 15.0)
    assert mon.eta_seconds([], 6) is None
    assert mon.eta_seconds(steps, 2) == 0
    assert mon.human_duration(75) == "1m 15s" and mon.human_duration(3 * 3600 + 120) == "3h 02m"
    assert mon.human_duration(None) == "—"


def test_effective_status_spots_dead_trainers():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process.process_alive(os.getpid())
    assert not process.process_alive(child.pid) and not process.process_alive(None)
    assert mon.effective_status({"status": "running", "pid": child.pid}) == "interrupted"
    assert mon.effective_status({"status": "running", "pid": os.getpid()}) == "running"
    me = process.this_process()
    alive = {"status": "running", "pid": me.pid, "host": me.host, "pid_started_at": me.started_at}
    assert mon.effective_status(alive) == "running"
    # The same pid with another start time is another process: the trainer is gone.
    assert mon.effective_status(alive | {"pid_started_at": me.started_at - 1000}) == "interrupted"
    # A trainer on another host cannot be seen from here: its stored status stands.
    assert mon.effective_status(alive | {"host": "elsewhere.example", "pid": child.pid}) == "running"
    assert mon.effective_status({"status": "pending", "pid": None}) == "pending"
    assert mon.effective_status({"status": "completed", "pid": child.pid}) == "completed"
    assert mon.can_resume({"status": "failed"}) and not mon.can_resume({"status": "completed"})


def test_incumbent_after_follows_the_gate():
    assert mon.incumbent_after({"decision": "accept_new_best", "current_score": .2, "candidate_score": .5}) == .5
    assert mon.incumbent_after({"decision": "reject", "current_score": .2, "candidate_score": .5}) == .2
    assert mon.incumbent_after({"decision": "skip", "current_score": .2, "candidate_score": None}) == .2


def test_autonomous_schedule_shows_its_cosine_fallback():
    config = {"lr_scheduler": "autonomous", "learning_rate": 4, "min_learning_rate": 2}
    assert mon.scheduled_budgets(config, 4) == [4, 3, 2, 2]
    assert mon.scheduled_budgets({**config, "lr_scheduler": "constant"}, 3) == [4, 4, 4]


def test_waiting_run_links_to_approvals(sim_run, tmp_path, monkeypatch):
    db = copy_db(sim_run[0], tmp_path / "waiting.db")
    run_id = sim_run[1]
    _set_live(db, run_id, os.getpid())
    store = Store(db)
    run = store.run(run_id)  # entering the approval stage sets the run waiting_approval, as in the trainer
    store(ev.StageChanged(run_id=run_id, step=run["step"], epoch=run["epoch"], stage="approval"))
    store.close()
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    at = page(run_id)
    links = [p for p in at.get("page_link") if "approval" in p.value.lower()]
    assert links and links[0].proto.page.endswith("Approvals")
    assert any("**:blue[Approval]**" in m.value for m in at.markdown)  # the stage strip marks the stage


def test_stage_strip_and_call_totals():
    from skillopt.vocabulary import STAGES

    strip = mon.stage_strip("gate")
    assert strip.split(" → ") == ["**:blue[Gate]**" if s == "gate" else mon.STAGE_LABELS[s] for s in STAGES]
    assert "**:blue[Done]**" in mon.stage_strip("done", "completed")
    stopped = mon.stage_strip("done", "stopped")  # the store says "done" for every end
    assert "**:blue[" not in stopped and "Done" not in stopped and "ended early: stopped" in stopped
    assert mon.stage_label("") == "starting" and mon.stage_label("meta") == "Meta skill"
    assert mon.total_calls({"target_calls": 3, "optimizer_calls": 2, "judge_calls": 1, "cache_hits": 9}) == 6
    assert mon.tests_caption({"best": {"score": 0.5}, "seed": {"score": 0.25}, "none": {"score": 0.2}}) == \
        "Test split: no skill 0.200 · seed skill 0.250 · best skill 0.500"


def test_a_run_gated_on_partial_credit_names_its_metric_and_gives_hard_accuracy():
    figures = (("none", 0.2, 0.0), ("seed", 0.3, 0.0), ("best", 0.6, 0.1), ("final", 0.6, 0.1))
    tests = {w: {"score": score, "hard": hard} for w, score, hard in figures}
    run = {"config": {"gate_metric": "mixed"}, "status": "completed", "started_at": 0.0, "finished_at": 60.0}
    head, detail = mon.test_headline(run, tests, None)
    assert head == "**Test split (mixed score):** no skill 0.200 / seed 0.300 → **best 0.600**"
    assert "hard accuracy no skill 0.000 / seed 0.000 → best 0.100 · took" in detail
    head, detail = mon.test_headline({**run, "config": {"gate_metric": "hard"}}, tests, None)
    assert head.startswith("**Test split:**") and "hard accuracy" not in detail


def test_resume_and_the_dashboard_share_one_liveness_check(sim_run, tmp_path):
    """`resume` refuses a run whose trainer process still lives, the one the Monitor shows as running."""
    from skillopt import runner
    from skillopt.errors import UserError

    db = copy_db(sim_run[0], tmp_path / "alive.db")
    run_id = sim_run[1]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _set_live(db, run_id, child.pid)
        assert mon.effective_status({"status": "running", "pid": child.pid}) == "running"
        store = Store(db)
        try:
            with pytest.raises(UserError, match=f"still running \\(pid {child.pid}\\)"):
                runner.resume(store, run_id)
        finally:
            store.close()
    finally:
        child.kill()
        child.wait()
    assert not process.process_alive(child.pid)


def long_run_steps(n: int = 500) -> list[dict]:
    """Step rows of a long run (the shape the Reader returns): every 3rd candidate accepted."""
    rows, current = [], 0.3
    for i in range(1, n + 1):
        decision = "accept" if i % 3 == 0 else "reject"
        candidate = round(current + (0.001 if decision == "accept" else -0.01), 4)
        rows.append({"step": i, "epoch": (i - 1) // 10 + 1, "train_hard": 0.5, "train_soft": 0.6, "decision": decision,
                     "current_score": current, "candidate_score": candidate, "best_score": max(current, candidate),
                     "edit_budget": 4, "n_applied": i % 3, "n_proposed": 5, "duration_s": 1.0})
        current = candidate if decision == "accept" else current
    return rows


def test_long_run_curves_keep_every_value_and_every_decision_marker(monkeypatch):
    """On a long run the Monitor draws the lines without a marker per step (1,000 SVG elements
    the browser drew twice); every value and each candidate's accepted/rejected marker stay."""
    from skillopt.ui.plotting import plain_lines

    steps = long_run_steps()
    fig = plain_lines(mon.step_curves(steps, 0.3, {}, len(steps)), len(steps))
    t = {tr.name: tr for tr in fig.data}
    assert t["train batch (hard)"].mode == "lines" and t["selection: current skill"].mode == "lines"
    assert list(t["selection: current skill"].x) == [0] + [s["step"] for s in steps]
    cand = t["selection: candidate"]
    assert cand.mode == "markers" and list(cand.x) == [s["step"] for s in steps]
    accepted = [x for x, symbol in zip(cand.x, cand.marker.symbol) if symbol == "circle"]
    assert accepted == [s["step"] for s in steps if s["decision"] == "accept"]  # every accepted step kept
    short = plain_lines(mon.step_curves(steps[:10], 0.3, {}, 10), 10)
    assert {tr.name: tr.mode for tr in short.data}["train batch (hard)"] == "lines+markers"


def test_budget_chart_is_bars_on_a_short_run_and_filled_steps_on_a_long_one():
    config = {"lr_scheduler": "cosine", "learning_rate": 4, "min_learning_rate": 2}
    steps = long_run_steps()
    long = {t.name: t for t in mon.budget_chart(steps, config, len(steps)).data}
    assert long["edits applied"].type == "scatter" and long["edits applied"].fill == "tozeroy"
    assert list(long["edits applied"].y) == [s["n_applied"] for s in steps]  # one value per step, all kept
    assert list(long["edit budget used"].y) == [s["edit_budget"] for s in steps]
    assert long["schedule (cosine)"].mode == "lines" and len(long["schedule (cosine)"].y) == len(steps)
    short = {t.name: t for t in mon.budget_chart(steps[:6], config, 6).data}
    assert short["edits applied"].type == "bar" and short["schedule (cosine)"].mode == "lines+markers"


def test_closed_sections_send_nothing_until_opened(sim_db_env):
    """Configuration and the best skill are built only once their expander is opened."""
    db, run_id = sim_db_env
    at = page(run_id)
    assert {e.label for e in at.expander} >= {"Configuration", "Best skill so far"}
    assert not at.json and not at.code
    at.session_state["monitor_best_skill"] = True
    at.session_state["monitor_config"] = True
    at.run()
    assert not at.exception
    reader = Reader(db)
    assert [c.value.strip() for c in at.code] == [reader.best_skill(run_id).strip()]
    assert json.loads(at.json[0].value)["gate_mode"] == reader.run(run_id)["config"]["gate_mode"]
    reader.close()


def test_the_lift_breakdown_is_a_closed_section_showing_the_stored_groups(sim_db_env):
    """The simulated run's task has labels: its lift is broken down by expected answer, and the
    table shows each answer's stored scores and best minus the lift's baseline."""
    db, run_id = sim_db_env
    lift = Reader(db).lift(run_id)
    assert lift["breakdown_by"] == "answer" and lift["breakdown"]
    title, rows = mon.breakdown_rows(lift)
    at = page(run_id)
    assert title in {e.label for e in at.expander}
    assert not any("expected answer" in t.columns for t in tables(at))  # closed: nothing sent
    at.session_state["monitor_breakdown"] = True
    at.run()
    assert not at.exception
    shown = next(t for t in tables(at) if "expected answer" in t.columns)
    base = mon.TEST_LABELS[lift["baseline"]]
    assert list(shown["expected answer"]) == list(lift["breakdown"])
    for _, row in shown.iterrows():
        g = lift["breakdown"][row["expected answer"]]
        assert row["items"] == str(g["n"]) and row["best"] == f"{g['best']:.3f}" and row["seed"] == f"{g['seed']:.3f}"
        assert row["no skill"] == f"{g['none']:.3f}" and row[f"best − {base}"] == f"{g['best'] - g[lift['baseline']]:+.3f}"


def test_breakdown_rows_name_fields_and_say_nothing_without_a_breakdown():
    lift = {"baseline": "none", "breakdown_by": "field",
            "breakdown": {"date": {"n": 4, "best": 0.75, "seed": 0.5, "none": 0.25}}}
    title, rows = mon.breakdown_rows(lift)
    assert title.startswith("Test split by field")
    assert rows == [{"field": "date", "items": 4, "no skill": 0.25, "seed": 0.5, "best": 0.75,
                     "best − no skill": 0.5}]
    assert mon.breakdown_rows(None) == ("", []) and mon.breakdown_rows({**lift, "breakdown": {}}) == ("", [])

"""The learning bench (bench/learning.py); its held-out tasks are tested in test_heldout_tasks.py.

The targets are checked at their edges, on rows read from the store of a real simulated run
(sim/target with the non-oracle sim/learner, fast) and on made-up rows; a missing figure is null
and misses its target; a stopped run resumes; the README block labels a quick run and never shows
an absent full run as measured. Reading the store is tested in test_learning_store.py."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.learning_util import ROOT, SIM, copy_db, edited_copy, measure_sim, query

import benchkit  # noqa: E402  (bench/ on sys.path: tests.learning_util put it there)
import learning  # noqa: E402
import learning_store  # noqa: E402
import learning_tables  # noqa: E402
import report  # noqa: E402

TASK_DIR = ROOT / "data" / "tasks" / "waste-sorting"


@pytest.fixture(scope="module")
def sim_bench(tmp_path_factory) -> tuple[Path, dict]:
    return measure_sim(tmp_path_factory)


# ------------------------------------------------------------ targets read from a run's store

def test_an_accepted_contradicted_edit_misses_its_target(sim_bench, tmp_path):
    db = copy_db(sim_bench[0], tmp_path)
    run_id, before = sim_bench[1]["run_id"], sim_bench[1]["edits"]
    conn = sqlite3.connect(db)
    with conn:
        (step, idx), = conn.execute("SELECT step, idx FROM edits WHERE run_id = ? AND gate = 'accepted' "
                                    "AND note NOT LIKE '%contradicted%' LIMIT 1", (run_id,)).fetchall()
        # The contradiction is a later part of a joined note, not its first word: still counted.
        conn.execute("UPDATE edits SET note = 'merged 2; contradicted: 4 of 5 train items with the trigger "
                     "expect hold' WHERE run_id = ? AND step = ? AND idx = ?", (run_id, step, idx))
        conn.execute("UPDATE edits SET fate = 'dropped', status = '', gate = '', note = 'contradicted: 3 of 3' "
                     "WHERE rowid = (SELECT rowid FROM edits WHERE run_id = ? AND fate = 'clipped' LIMIT 1)",
                     (run_id,))
    conn.close()
    after = learning_store.read_run(db, run_id)["edits"]
    assert after["contradicted"] == before["contradicted"] + 2
    assert after["contradicted_accepted"] == before["contradicted_accepted"] + 1
    assert after["not_applied"].get("contradicted", 0) == before["not_applied"].get("contradicted", 0) + 1
    assert after["not_applied"]["clipped"] == before["not_applied"]["clipped"] - 1
    check = learning.targets("classification", {**fake_row(), "edits": after})["no_contradicted"]
    assert not check["met"] and check["detail"].startswith(f"{after['contradicted_accepted']} accepted of")


def test_a_store_without_the_no_skill_row_or_the_lift_reads_null_and_misses(sim_bench, tmp_path):
    run_id = sim_bench[1]["run_id"]
    db = edited_copy(sim_bench, tmp_path, ("DELETE FROM tests WHERE run_id = ? AND which = 'none'", (run_id,)),
                     ("DELETE FROM rollouts WHERE run_id = ? AND purpose = 'test_none'", (run_id,)),
                     ("DROP TABLE IF EXISTS lift", ()))  # a store from before the lift table
    row = learning_store.read_run(db, run_id)
    assert row["test"]["none"] is None and row["lift"] is None and row["test"]["best"] is not None
    assert row["test_hard"]["none"] is None and row["lift_hard"] is None
    checks = learning.targets("classification", row)
    assert not checks["lift"]["met"] and "no-skill test" in checks["lift"]["detail"]
    assert "lift interval" in checks["lift"]["detail"] and not checks["no_harm"]["met"]


# ------------------------------------------------------------ targets

def fake_row(none=0.5, seed=0.4, best=0.6, ci_low=0.01, usable=20, replies=20, status="completed") -> dict:
    scores = {"none": none, "seed": seed, "best": best, "final": best}
    return {"status": status, "reason": "", "test": scores, "test_hard": scores, "lift": {"ci_low": ci_low},
            "lift_hard": {"ci_low": ci_low}, "edits": {"contradicted": 0, "contradicted_accepted": 0},
            "optimizer_replies": {"usable": usable, "all": replies,
                                  "share": usable / replies if replies else None}}


def test_a_run_gated_on_mixed_is_judged_on_hard_accuracy():
    row = {**fake_row(none=0.2, seed=0.3, best=0.6, ci_low=0.1), "metric": "mixed",
           "test_hard": {"none": 0.0, "seed": 0.0, "best": 0.05, "final": 0.05}, "lift_hard": {"ci_low": 0.0}}
    checks = learning.targets("format", row)  # +30 points of partial credit, +5 of items wholly right
    assert not checks["lift"]["met"] and "best 0.050" in checks["lift"]["detail"]


@pytest.mark.parametrize("best, ci_low, met", [
    (0.3, 0.01, True),     # exactly +10 points over max(no skill, seed) = 0.2 (0.3 - 0.2 is 0.0999... in floats)
    (0.29, 0.01, False),   # +9 points
    (0.5, 0.0, False),     # a lower bound of 0 is not above 0
    (0.5, 0.05, True),
])
def test_the_format_target_needs_ten_points_and_a_positive_lower_bound(best, ci_low, met):
    checks = learning.targets("format", fake_row(none=0.2, seed=0.0, best=best, ci_low=ci_low))
    assert checks["lift"]["met"] is met and "no_harm" not in checks


def test_the_classification_target_needs_a_gain_and_no_harm():
    tie = learning.targets("classification", fake_row(none=0.5, seed=0.4, best=0.5, ci_low=0.0))
    assert not tie["lift"]["met"] and tie["no_harm"]["met"]
    worse = learning.targets("classification", fake_row(none=0.5, seed=0.55, best=0.52, ci_low=-0.1))
    assert not worse["lift"]["met"] and not worse["no_harm"]["met"]
    better = learning.targets("classification", fake_row(none=0.5, seed=0.4, best=0.52, ci_low=0.01))
    assert better["lift"]["met"] and better["no_harm"]["met"]


@pytest.mark.parametrize("usable, replies, met", [(19, 20, True), (18, 20, False), (0, 0, False)])
def test_usable_replies_need_95_percent(usable, replies, met):
    assert learning.targets("format", fake_row(usable=usable, replies=replies))["usable_replies"]["met"] is met


def test_a_run_that_did_not_complete_misses():
    checks = learning.targets("classification", fake_row(status="failed"))
    assert not checks["completed"]["met"] and checks["lift"]["met"]


def test_task_types_are_read_off_the_run_and_the_scorer():
    """A seed and no skill that get (almost) nothing wholly right make a format task, whatever the
    task; otherwise the scorer decides: labels are classification, numbers and JSON "other"."""
    failing = {"none": 0.0, "seed": 0.04, "best": 0.6, "final": 0.6}
    assert learning.task_type("word-problems", failing) == "format"
    assert learning.task_type("ticket-routing", failing) == "format"  # the rule, not the name
    assert learning.task_type("word-problems", {**failing, "seed": 0.05}) == "other"
    assert learning.task_type("invoice-extraction", {**failing, "none": None}) == "other"
    assert learning.task_type("clinic-desk", {**failing, "none": 0.3}) == "classification"
    assert learning.task_type(str(TASK_DIR)) == "classification"
    assert learning.task_type("courier-addresses", {**failing, "none": 0.3}) == "other"  # free-text answers
    assert learning.TASKS[0] == "hall-bookings" and "sim-rulebook" not in learning.TASKS  # the newest family first


def test_every_saved_row_has_the_type_the_rule_gives_it():
    """The rule gives each built-in task the type it was judged by when it ran."""
    saved = json.loads((ROOT / "bench" / "results" / "learning.json").read_text())
    for task, row in saved["figures"]["tasks"].items():
        assert learning.task_type(task, row["test_hard"]) == row["type"], task


def test_other_tasks_are_judged_like_classification_ones():
    checks = learning.targets("other", fake_row(none=0.5, seed=0.55, best=0.52, ci_low=-0.1))
    assert not checks["lift"]["met"] and not checks["no_harm"]["met"]


# ------------------------------------------------------------ the command line and the saved line

def test_the_bench_ends_with_one_json_line_and_a_trial_is_not_saved(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(benchkit, "RESULTS", tmp_path / "results")
    argv = ["--quick", "--tasks", "sim-rulebook", "--db", str(tmp_path / "runs.db"), *(f"--set={s}" for s in SIM)]
    monkeypatch.setattr(sys, "argv", [str(ROOT / "bench" / "learning.py"), *argv])
    learning.main(argv)
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    fig = line["figures"]
    assert line["bench"] == "learning" and fig["mode"] == "quick" and fig["trial"] is True
    row = fig["tasks"]["sim-rulebook"]
    assert set(row) >= {"test", "lift", "steps", "optimizer_replies", "edits", "calls", "wall_s", "targets", "met"}
    assert set(row["test"]) == {"none", "seed", "best", "final"}
    assert "selection_size=12" in fig["options"] and "test_size=20" in fig["options"]
    assert row["test_items"]["seed"]["n"] == 20
    assert not (tmp_path / "results").exists()  # a trial with other settings is not the bench's result
    with pytest.raises(SystemExit, match="must name a new file"):
        learning.main(argv)


def test_a_stopped_run_is_resumed_with_its_time_so_far_and_ends_as_an_uninterrupted_one(tmp_path, monkeypatch,
                                                                                        capsys):
    from skillopt import events as ev
    from skillopt import runner
    from skillopt.config import load_config
    from skillopt.store.writer import Store

    def interrupt(event):  # a kill after step 2's record: the run is left "stopped", resumable
        if isinstance(event, ev.StepCompleted) and event.step == 2:
            raise KeyboardInterrupt

    db = tmp_path / "runs.db"
    store = Store(db)
    with pytest.raises(KeyboardInterrupt):
        runner.start(store, "sim-rulebook", load_config(None, list(learning.overrides(True, SIM))),
                     name="bench learning sim-rulebook", callbacks=(interrupt,))
    store.close()
    with sqlite3.connect(db) as conn:  # 100 s already run: a figure the 0.1 s rounding of wall_s cannot hide
        conn.execute("UPDATE runs SET started_at = heartbeat_at - 100")
    ran = learning.unfinished(db, "sim-rulebook")
    assert ran is not None and ran["ran_s"] == pytest.approx(100.0)
    monkeypatch.setattr(benchkit, "RESULTS", tmp_path / "results")
    argv = ["--quick", "--tasks", "sim-rulebook", "--db", str(db), "--resume", *(f"--set={s}" for s in SIM)]
    monkeypatch.setattr(sys, "argv", [str(ROOT / "bench" / "learning.py"), *argv])
    row = learning.main(argv)["figures"]["tasks"]["sim-rulebook"]
    assert "resuming sim-rulebook run" in capsys.readouterr().out
    assert row["status"] == "completed" and row["run_id"] == ran["id"] and row["wall_s"] >= 100.0
    fresh = learning.measure(tmp_path / "fresh.db", "sim-rulebook", learning.overrides(True, SIM))
    assert row["test"] == fresh["test"] and row["steps"] == fresh["steps"]  # as if never stopped
    with pytest.raises(SystemExit, match="already completed"):
        learning.main(argv)
    with pytest.raises(SystemExit, match="--resume needs --db"):
        learning.main(["--resume", "--tasks", "sim-rulebook"])


def test_the_full_bench_is_the_documented_setting():
    options = learning.overrides(quick=False)
    assert options == ("target_model=local/qwen2.5-coder-1.5b", "optimizer_model=local/qwen2.5-coder-1.5b",
                       "num_epochs=2", "batch_size=20")


# ------------------------------------------------------------ the README block

def saved(row: dict, mode: str) -> dict:
    return {"bench": "learning", "commit": "a" * 40, "dirty": False, "date": "2026-12-01 08:00 UTC",
            "command": "python bench/learning.py" + (" --quick --tasks sim-rulebook" if mode == "quick" else ""),
            "figures": {"mode": mode, "trial": False, "tasks": {"sim-rulebook": row}}}


def test_the_readme_labels_a_quick_run_and_keeps_the_full_run_not_measured(sim_bench):
    text = learning_tables.learning({"learning": saved(sim_bench[1], "quick")})
    first, *rest = text.splitlines()
    assert "bench/learning.py" in first and first.endswith(f"{report.NOT_MEASURED}.")
    assert any(line.startswith("Quick run (`--quick`:") for line in rest)
    (cells,) = [line for line in rest if line.startswith("| sim-rulebook |")]
    row = sim_bench[1]
    assert cells.count(" | ") == 14 and f"{row['test']['best']:.3f}" in cells
    assert "bench/" not in cells  # the table's rows hold figures, the command is above it


def test_the_readme_shows_a_full_run_without_not_measured(sim_bench):
    text = learning_tables.learning({"learning": saved(sim_bench[1], "full")})
    assert report.NOT_MEASURED not in text and text.startswith("Full run (2 epochs")
    broken = {"task": "x", "type": "format", "status": "error", "reason": "UserError: boom"}
    text = learning_tables.learning({"learning": {**saved(sim_bench[1], "full"),
                                         "figures": {"mode": "full", "tasks": {"x": broken}}}})
    (cells,) = [line for line in text.splitlines() if line.startswith("| x |")]
    assert cells.count(" | ") == 14 and "**missed**" in cells


def test_each_finished_task_is_saved_with_the_rest_pending(sim_bench, tmp_path, monkeypatch):
    monkeypatch.setattr(learning, "measure", lambda db, task, options, resume=False: {**sim_bench[1], "task": task})
    monkeypatch.setattr(benchkit, "RESULTS", tmp_path / "results")
    seen = []
    figures = learning.run(["a", "b", "c"], tmp_path / "x.db", quick=True, on_task=seen.append)
    assert [f["pending"] for f in seen] == [["b", "c"], ["c"], []]
    assert [list(f["tasks"]) for f in seen] == [["a"], ["a", "b"], ["a", "b", "c"]]
    assert not seen[0]["met"] and figures["pending"] == []
    text = learning_tables.learning({"learning": {**saved(sim_bench[1], "full"), "figures": seen[0]}})
    pending = [line for line in text.splitlines() if line.startswith(("| b |", "| c |"))]
    assert len(pending) == 2 and all("not measured" in p and p.count(" | ") == 14 for p in pending)


def test_the_saved_result_keeps_the_tasks_this_run_did_not_measure_each_with_its_commit(sim_bench):
    row = {k: v for k, v in sim_bench[1].items() if k != "measured"}
    earlier = {"bench": "learning", "commit": "b" * 40, "dirty": False, "date": "2026-12-01 08:00 UTC",
               "command": "python bench/learning.py --tasks old-task",
               "figures": {"mode": "full", "trial": False, "tasks": {"old-task": {**row, "met": False},
                                                                     "sim-rulebook": {**row, "wall_s": 1.0}}}}
    now = {"commit": "c" * 40, "dirty": False, "date": "2026-12-02 09:00 UTC", "command": "python bench/learning.py"}
    figures = learning.figures_of({"sim-rulebook": {**row, "met": True, "measured": now}}, [], False, (), False)
    out = learning.merged(earlier, figures)
    assert list(out["tasks"]) == ["old-task", "sim-rulebook"] and out["met"] is False  # the old row still misses
    assert out["tasks"]["old-task"]["measured"]["commit"] == "b" * 40  # the file's stamp, for a row without one
    assert out["tasks"]["sim-rulebook"]["measured"] == now and out["tasks"]["sim-rulebook"]["wall_s"] != 1.0
    assert learning.merged({**earlier, "figures": {**earlier["figures"], "mode": "quick"}}, figures) == figures
    assert learning.merged(earlier, {**figures, "trial": True})["tasks"].keys() == {"sim-rulebook"}
    # a trial's rows grow task by task, only beside rows of the same settings
    trial = {**earlier, "figures": {**earlier["figures"], "trial": True, "options": ["clue_rules=false"]}}
    same = {**figures, "trial": True, "options": ["clue_rules=false"]}
    assert learning.merged(trial, same)["tasks"].keys() == {"old-task", "sim-rulebook"}
    assert learning.merged(trial, {**same, "options": ["seed=2"]})["tasks"].keys() == {"sim-rulebook"}
    assert learning.merged(None, figures) == figures
    text = learning_tables.learning({"learning": {**earlier, **now, "figures": out}})
    assert "the latest of each task" in text
    assert any(line.startswith("| old-task (2026-12-01, `bbbbbbb`) |") for line in text.splitlines())
    assert any(line.startswith("| sim-rulebook (2026-12-02, `ccccccc`) |") for line in text.splitlines())


def test_a_saved_trial_gets_its_own_table_and_none_shows_nothing(sim_bench):
    row = sim_bench[1]
    trial = {**saved(row, "full"), "command": "python bench/learning.py --set worked_examples=false"}
    text = learning_tables.learning({"learning": saved(row, "full"), "learning-examples-off": trial})
    assert "Worked examples off (`worked_examples=false`" in text and "--set worked_examples=false" in text
    assert len([line for line in text.splitlines() if line.startswith("| sim-rulebook |")]) == 2
    assert "Worked examples off" not in learning_tables.learning({"learning": saved(row, "full")})


def test_the_steps_cell_counts_the_worked_examples_trials(sim_bench):
    row = {**sim_bench[1], "examples_trials": {"accepted": 2, "rejected": 5, "skipped": 0, "failed": 0}}
    assert "(worked examples kept 2 of 7)" in learning_tables.learning_cells("sim-rulebook", row)
    assert "worked examples kept" not in learning_tables.learning_cells("sim-rulebook", {**row, "examples_trials": None})


def test_the_steps_cell_says_whether_the_reply_template_was_kept(sim_bench):
    db, row = sim_bench
    templates = query(db, "SELECT COUNT(*) FROM edits WHERE run_id = ? AND source = 'template'", (row["run_id"],))
    assert sum(row["template_trials"].values()) == templates[0][0] <= 1  # once per run, read from the store
    counts = {"accepted": 0, "rejected": 0, "skipped": 0, "failed": 0}
    kept = {**sim_bench[1], "template_trials": {**counts, "accepted": 1}}
    assert "(reply template kept)" in learning_tables.learning_cells("sim-rulebook", kept)
    lost = {**sim_bench[1], "template_trials": {**counts, "rejected": 1}}
    assert "(reply template rejected)" in learning_tables.learning_cells("sim-rulebook", lost)
    for untried in (counts, None):  # no trial ran, or a result saved before the template existed
        cell = learning_tables.learning_cells("sim-rulebook", {**sim_bench[1], "template_trials": untried})
        assert "reply template" not in cell


def test_a_row_gated_on_mixed_shows_both_metrics(sim_bench):
    lift = {"baseline": "seed", "lift": 0.2, "ci_low": 0.1, "ci_high": 0.3}
    row = {**sim_bench[1], "metric": "mixed", "test": {"none": 0.2, "seed": 0.3, "best": 0.5, "final": 0.5},
           "test_hard": {"none": 0.0, "seed": 0.0, "best": 0.05, "final": 0.05}, "lift": lift,
           "lift_hard": {**lift, "baseline": "none", "lift": 0.05, "ci_low": 0.0, "ci_high": 0.1}}
    cell = learning_tables.learning_cells("invoice-extraction", row)
    assert "| 0.200 mixed, 0.000 hard | 0.300 mixed, 0.000 hard | 0.500 mixed, 0.050 hard |" in cell
    assert "mixed: +20.0 pts over seed (+10.0 to +30.0); hard: +5.0 pts over none (+0.0 to +10.0)" in cell
    assert " hard |" not in learning_tables.learning_cells("sim-rulebook", sim_bench[1])  # a hard run: one figure each

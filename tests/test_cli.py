"""The command line, run as a user runs it: `python -m skillopt ...` in a subprocess."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIM = ["--set", "target_model=sim/target", "--set", "optimizer_model=sim/optimizer"]
BUILT_IN = ("invoice-extraction", "sim-rulebook", "ticket-routing", "word-problems")


def cli(*args: str, db: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLOPT_DB", "SKILLOPT_TASKS_DIR")}
    argv = [sys.executable, "-m", "skillopt", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    db = tmp_path_factory.mktemp("cli") / "runs.db"
    proc = cli("train", "--task", "sim-rulebook", *SIM, "--set", "num_epochs=1", db=db)
    return db, proc


def run_id_of(proc: subprocess.CompletedProcess) -> str:
    match = re.search(r"run id: (\S+) \(completed\)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    return match.group(1)


def test_train_prints_progress_and_the_run_id(trained):
    _, proc = trained
    assert proc.returncode == 0, proc.stderr
    run_id = run_id_of(proc)
    assert f"run id: {run_id}" in proc.stderr  # announced at the start, before any step
    bars = [line for line in proc.stderr.splitlines() if re.match(r"\[[#-]{24}\] step \d+/3 ", line)]
    assert len(bars) >= 3 and bars[-1].startswith("[" + "#" * 24 + "]")
    assert "test best:" in proc.stderr and f"run {run_id} completed" in proc.stderr


def test_runs_lists_the_run_as_simulated(trained):
    db, proc = trained
    out = cli("runs", db=db)
    assert out.returncode == 0
    line = next(line for line in out.stdout.splitlines() if line.startswith(run_id_of(proc)))
    assert "completed" in line and "sim-rulebook" in line and "(simulated)" in line and "3/3" in line


def test_show_prints_steps_and_json(trained):
    db, proc = trained
    run_id = run_id_of(proc)
    out = cli("show", run_id, db=db)
    assert out.returncode == 0 and "SIMULATED" in out.stdout
    assert len(re.findall(r"^\s+step\s+\d+ epoch 1", out.stdout, re.M)) == 3
    doc = json.loads(cli("show", run_id, "--json", db=db).stdout)
    assert doc["run"]["id"] == run_id and len(doc["steps"]) == 3


def test_export_writes_the_files(trained, tmp_path):
    db, proc = trained
    run_id = run_id_of(proc)
    out = cli("export", run_id, "--out", str(tmp_path / "out"), db=db)
    assert out.returncode == 0, out.stderr
    names = {Path(line).name for line in out.stdout.split()}
    assert names == {"best_skill.md", "steps.csv", "run.json"}
    doc = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert doc["run"]["id"] == run_id and doc["run"]["status"] == "completed"
    assert len(list(csv.DictReader((tmp_path / "out" / "steps.csv").open(encoding="utf-8")))) == 3
    assert (tmp_path / "out" / "best_skill.md").read_text(encoding="utf-8").strip()


def test_tasks_lists_the_built_in_tasks():
    out = cli("tasks")
    assert out.returncode == 0
    names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    assert all(name in names for name in BUILT_IN)


def test_validate_task_ok():
    out = cli("validate-task", "data/tasks/ticket-routing")
    assert out.returncode == 0 and out.stdout.strip() == "data/tasks/ticket-routing: ok"


def test_validate_task_lists_problems(tmp_path):
    (tmp_path / "task.toml").write_text('name = "broken"\n', encoding="utf-8")
    out = cli("validate-task", str(tmp_path))
    assert out.returncode == 1 and "problem(s)" in out.stderr and out.stdout.strip()


def test_eval_prints_json(tmp_path):
    out = cli("eval", "--task", "sim-rulebook", *SIM, "--split", "test", db=tmp_path / "e.db")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["split"] == "test" and result["items"] == 120 and result["errors"] == 0
    assert 0.0 <= result["hard"] <= 1.0


@pytest.mark.parametrize("args,message", [
    (("train", "--task", "no-such-task", *SIM), "no-such-task: no such task folder"),
    (("train", "--task", "sim-rulebook", "--set", "bogus=1"), "unknown config key 'bogus'"),
    (("train", "--task", "sim-rulebook", "--set", "batch_size=many"), "batch_size"),
    (("eval", "--task", "sim-rulebook", *SIM, "--skill", "missing.md"), "missing.md: skill file not found"),
    (("show", "nope"), "no run nope"),
    (("export", "nope", "--out", "unused"), "no run nope"),
    (("resume", "nope"), "no run nope"),
])
def test_user_errors_exit_2_with_one_line(trained, args, message):
    db, _ = trained
    out = cli(*args, db=db)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args,message", [
    (("train", "--task", "ticket-routing", "--set", "target_model=nosuchprovider/xyz"),
     "error: target model nosuchprovider/xyz: unknown provider 'nosuchprovider'; use a litellm model string such "
     "as openai/gpt-4o-mini"),
    (("train", "--task", "ticket-routing", *SIM),
     "error: target model sim/target is simulated, but task ticket-routing is not a simulated task"),
    (("train", "--task", "ticket-routing", "--set", "target_model=openai/gpt-4o-mini", "--set",
      "optimizer_model=sim/optimizer"), "error: optimizer model sim/optimizer is simulated"),
    (("eval", "--task", "word-problems", *SIM), "error: target model sim/target is simulated"),
])
def test_preflight_refuses_a_run_before_anything_is_written(tmp_path, args, message):
    db = tmp_path / "runs.db"
    out = cli(*args, db=db)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), out.stderr
    assert out.stdout == ""
    assert not db.exists() and not (tmp_path / "logs").exists()  # no store opened: no run, no log


def test_allow_simulated_models_overrides_the_preflight(tmp_path):
    out = cli("eval", "--task", "word-problems", *SIM, "--set", "allow_simulated_models=true", "--split", "selection",
              db=tmp_path / "e.db")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hard"] == 0.0  # what the refusal protects from: a run of zeros


def test_reading_a_missing_database_is_a_user_error(tmp_path):
    out = cli("runs", db=tmp_path / "none.db")
    assert out.returncode == 2 and out.stderr.strip() == f"error: {tmp_path / 'none.db'}: no database yet (start a run first)"
    assert not (tmp_path / "none.db").exists()  # a reader never creates the file


def test_approve_takes_the_edit_numbers_the_dashboard_shows(trained):
    from skillopt import events as ev
    from skillopt.patch import Edit
    from skillopt.store.writer import Store

    db, proc = trained
    run_id = run_id_of(proc)
    edits = (Edit(op="add", content="- one"), Edit(op="add", content="- two"))
    store = Store(db)
    try:  # step 99: edits 3 and 5 of the step wait (its edits 1, 2 and 4 were not selected)
        store(ev.ApprovalRequested(run_id=run_id, step=99, edits=edits, diffs=("", ""), numbers=(2, 4)))
    finally:
        store.close()
    out = cli("approve", run_id, "99", "5", "--reject", db=db)
    assert out.returncode == 0 and "rejected 1 edit(s) of step 99" in out.stdout, out.stderr
    wrong = cli("approve", run_id, "99", "2", db=db)
    assert wrong.returncode == 2 and "step 99 has no edit 2 for approval (its edits: 3, 5)" in wrong.stderr
    none = cli("approve", run_id, "98", "1", db=db)
    assert none.returncode == 2 and f"run {run_id} has no edits of step 98 for approval" in none.stderr
    store = Store(db)
    try:
        rows = {r["idx"]: r["status"] for r in store.approvals(run_id, 99)}
    finally:
        store.close()
    assert rows == {0: "pending", 1: "rejected"}

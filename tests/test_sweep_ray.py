"""Sweeps through a real local Ray instance (ray.init on 127.0.0.1, no dashboard, usage stats off):
trials give the same runs as the local backend; every Ray server listens on loopback only; a
trial gets its task folder shipped (Python evaluator included) and never reads the head's copy;
each step reaches the head's store while the trial runs; a trial whose worker dies is re-run
from its start with no duplicate row; stop and resume; model keys travel as variable names.

One Ray instance serves the module (a start costs seconds on 2 cores); the CLI test starts its
own, the way `sweep start --backend ray` does for a user.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skillopt.cli import parser
from skillopt.store.reader import Reader
from skillopt.sweep import commands, ray_backend
from skillopt.tasks.loader import BUILTIN_DIR

ROOT = Path(__file__).resolve().parent.parent
SIM = ["--set", "target_model=sim/target", "--set", "optimizer_model=sim/optimizer", "--set", "num_epochs=1",
       "--set", "max_steps_per_epoch=2"]
SLOW = ["--set", "target_model=sim/target?latency=0.05", "--set", "optimizer_model=sim/optimizer",
        "--set", "num_epochs=1", "--set", "max_steps_per_epoch=2"]
LOOPBACK = {"tcp": {"0100007F"}, "tcp6": {"00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}}


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray instance in this process, started exactly as the backend starts one."""
    assert ray_backend.start(num_cpus=2) is True
    import ray

    yield ray
    ray.shutdown()


def sweep(db: Path, *args: str, sweep_id: str, task: str = "sim-rulebook") -> int:
    ns = parser().parse_args(["sweep", "start", "--task", task, *args, "--backend", "ray",
                              "--sweep-id", sweep_id, "--db", str(db)])
    return commands.run(ns)


def reader_q(db: Path, sql: str, params: tuple = ()) -> list[dict]:
    r = Reader(db)
    try:
        return r.q(sql, params)
    finally:
        r.close()


def outcome(db: Path, run_id: str) -> dict:
    """What a run learned and spent, comparable across stores."""
    return {"steps": reader_q(db, "SELECT step, decision, current_score, candidate_score, best_score FROM steps "
                                  "WHERE run_id = ? ORDER BY step", (run_id,)),
            "tests": reader_q(db, "SELECT which, score FROM tests WHERE run_id = ? ORDER BY which", (run_id,)),
            "calls": reader_q(db, "SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ?", (run_id,))[0]["n"],
            "events": reader_q(db, "SELECT type, COUNT(*) AS n FROM events WHERE run_id = ? GROUP BY type "
                                   "ORDER BY type", (run_id,))}


def local_reference(tmp_path: Path, *args: str) -> dict:
    """The same trial trained by the local backend into a store of its own (no shared cache)."""
    db = tmp_path / "reference.db"
    out = subprocess.run([sys.executable, "-m", "skillopt", "train", "--task", "sim-rulebook", *args, "--db", str(db),
                          "--run-id", "reference"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "SKILLOPT_DB"})
    assert out.returncode == 0, out.stderr
    return outcome(db, "reference")


def test_ray_trials_are_the_same_runs_the_local_backend_trains(ray_local, tmp_path):
    db = tmp_path / "ray.db"
    assert sweep(db, "--grid", "learning_rate=2,4", *SIM, sweep_id="sweep-ray-same") == 0
    trials = reader_q(db, "SELECT * FROM sweep_trials ORDER BY idx")
    assert [t["status"] for t in trials] == ["completed", "completed"]
    runs = reader_q(db, "SELECT id, sweep_id, task_path, status FROM runs ORDER BY id")
    assert [(r["id"], r["sweep_id"], r["status"]) for r in runs] == [
        ("sweep-ray-same-000", "sweep-ray-same", "completed"), ("sweep-ray-same-001", "sweep-ray-same", "completed")]
    assert runs[0]["task_path"] == str(BUILTIN_DIR / "sim-rulebook")  # the head's path, not the worker's
    ray_run = outcome(db, "sweep-ray-same-001")
    assert ray_run == local_reference(tmp_path, *SIM, "--set", "learning_rate=4")


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*") if Path(f"/proc/{pid}/fd").exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def test_every_ray_server_listens_on_loopback_only_with_no_dashboard_and_no_usage_stats(ray_local):
    pids = descendants(os.getpid())
    inodes = socket_inodes(pids)
    listening, ports = [], []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                listening.append((table, fields[1].rsplit(":", 1)[0]))
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    assert len(listening) >= 3, listening  # the GCS, the raylet, the object manager, workers...
    outward = [(t, a) for t, a in listening if a not in LOOPBACK[t]]
    assert outward == [], f"Ray listens beyond loopback: {outward}"
    commands_of = [Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ") for p in pids
                   if Path(f"/proc/{p}/cmdline").exists()]
    assert any(b"gcs_server" in c for c in commands_of)
    # include_dashboard=False: Ray keeps only a minimal head process for its own APIs, no web UI.
    heads = [c for c in commands_of if b"dashboard/dashboard.py" in c]
    assert all(b"--minimal" in c and b"--disable-frontend" in c for c in heads), heads
    assert not any(port == 8265 for port in ports), ports
    gcs = next(p for p, c in zip(pids, commands_of) if b"gcs_server" in c)
    assert b"RAY_USAGE_STATS_ENABLED=0" in Path(f"/proc/{gcs}/environ").read_bytes().split(b"\0")


def test_a_trial_gets_its_task_folder_shipped_with_its_python_evaluator(ray_local, tmp_path, monkeypatch):
    task = tmp_path / "tasks" / "shipped-rulebook"
    shutil.copytree(BUILTIN_DIR / "sim-rulebook", task)
    toml = (task / "task.toml").read_text()
    head, _, _ = toml.partition("[evaluator]")
    rest = toml.split("[splits]", 1)[1]
    (task / "task.toml").write_text(head.replace('name = "sim-rulebook"', 'name = "shipped-rulebook"')
                                    + '[evaluator]\ntype = "python:routecheck:score"\n\n[splits]' + rest)
    (task / "routecheck.py").write_text(
        "def score(item, output):\n    ok = output.strip().lower() == str(item.expected).strip().lower()\n"
        "    return (1.0 if ok else 0.0), (1.0 if ok else 0.0), 'routecheck: ' + ('right' if ok else 'wrong')\n")
    packed = ray_backend.pack

    def pack_then_hide(folder):
        files = packed(folder)
        assert Path(folder).resolve() == task.resolve()  # never move any folder but this test's own copy
        Path(folder).rename(Path(folder).with_name("hidden-from-workers"))  # the head's copy is gone
        return files

    monkeypatch.setattr(ray_backend, "pack", pack_then_hide)
    db = tmp_path / "ship.db"
    assert sweep(db, "--grid", "learning_rate=4", *SIM, sweep_id="sweep-ray-ship", task=str(task)) == 0
    assert not task.exists()
    feedback = reader_q(db, "SELECT DISTINCT feedback FROM rollouts WHERE run_id = 'sweep-ray-ship-000'")
    assert {f["feedback"] for f in feedback} == {"routecheck: right", "routecheck: wrong"}


def watch_and(db: Path, run_id: str, action, seen: dict) -> threading.Thread:
    """In a thread: wait until the head's store shows a step of the running trial, then act."""
    def body() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                rows = reader_q(db, "SELECT r.status, r.pid, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) "
                                    "AS steps FROM runs r WHERE r.id = ?", (run_id,))
            except (sqlite3.OperationalError, Exception):
                rows = []
            if rows and rows[0]["status"] == "running" and rows[0]["steps"] >= 1:
                seen.update(rows[0])
                action(rows[0])
                return
            time.sleep(0.05)
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_each_step_reaches_the_head_live_and_a_lost_worker_reruns_the_trial_from_its_start(ray_local, tmp_path):
    db = tmp_path / "loss.db"
    seen: dict = {}
    thread = watch_and(db, "sweep-ray-loss-000", lambda row: os.kill(row["pid"], signal.SIGKILL), seen)
    assert sweep(db, "--grid", "learning_rate=4", *SLOW, sweep_id="sweep-ray-loss") == 0
    thread.join(5)
    assert seen.get("steps", 0) >= 1  # a step was in the head's store while the trial still ran: then killed
    assert [t["status"] for t in reader_q(db, "SELECT status FROM sweep_trials")] == ["completed"]
    # Re-run from its start on a new worker: the lost attempt's rows are gone, nothing is doubled.
    assert outcome(db, "sweep-ray-loss-000") == local_reference(tmp_path, *SLOW, "--set", "learning_rate=4")
    assert reader_q(db, "SELECT pid FROM runs")[0]["pid"] != seen["pid"]


def test_stop_reaches_a_ray_trial_and_resume_reruns_it(ray_local, tmp_path):
    db = tmp_path / "stop.db"

    def stop(_row) -> None:
        ns = parser().parse_args(["sweep", "stop", "sweep-ray-stop", "--db", str(db)])
        commands.run(ns)

    seen: dict = {}
    thread = watch_and(db, "sweep-ray-stop-000", stop, seen)
    assert sweep(db, "--grid", "learning_rate=4", *SLOW, sweep_id="sweep-ray-stop") == 3
    thread.join(5)
    assert seen
    assert reader_q(db, "SELECT status FROM sweeps")[0]["status"] == "stopped"
    assert reader_q(db, "SELECT status FROM sweep_trials")[0]["status"] == "stopped"
    assert reader_q(db, "SELECT status FROM runs")[0]["status"] == "stopped"
    assert commands.run(parser().parse_args(["sweep", "resume", "sweep-ray-stop", "--db", str(db)])) == 0
    run = outcome(db, "sweep-ray-stop-000")
    assert {e["type"]: e["n"] for e in run["events"]}["started"] == 1 and len(run["steps"]) == 2


def test_model_keys_travel_as_variable_names_never_values(monkeypatch):
    secret = "sk-planted-ray-0123456789abcdef"
    monkeypatch.setenv("SKILLOPT_RAY_TEST_KEY", secret)
    sent = []

    class Remote:
        def options(self, **kw):
            return self

        def remote(self, *args):
            sent.append(pickle.dumps(args[0]))
            return object()

    backend = ray_backend.RayBackend()
    backend.remote, backend.task_files, backend.hub = Remote(), None, None
    config = {"target_model": "openai/gpt-4o-mini", "optimizer_model": "openai/gpt-4o",
              "target_api_key_env": "SKILLOPT_RAY_TEST_KEY", "optimizer_api_key_env": "SKILLOPT_RAY_TEST_KEY"}
    trial = {"idx": 0, "run_id": "r", "config_json": json.dumps(config), "point_json": "{}", "seed": 42}
    backend.launch({"id": "s", "name": "n", "seed_skill": None}, trial)
    assert b"SKILLOPT_RAY_TEST_KEY" in sent[0] and secret.encode() not in sent[0]
    assert ray_backend.trial_cpus(config) == ray_backend.API_TRIAL_CPUS
    assert ray_backend.trial_cpus({"target_model": "local/qwen2.5-coder-1.5b"}) == 1.0


def test_cli_sweep_starts_its_own_local_ray_instance(tmp_path):
    db = tmp_path / "cli.db"
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLOPT_DB", "RAY_ADDRESS")}
    out = subprocess.run([sys.executable, "-m", "skillopt", "sweep", "start", "--task", "sim-rulebook", "--grid",
                          "lr_scheduler=cosine,constant", *SIM, "--backend", "ray", "--db", str(db)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "(2 trials, ray backend, 2 at once)" in out.stdout
    trials = reader_q(db, "SELECT t.status, r.best_score FROM sweep_trials t JOIN runs r ON r.id = t.run_id")
    assert [t["status"] for t in trials] == ["completed", "completed"] and all(t["best_score"] for t in trials)

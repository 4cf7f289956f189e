"""Sweep wall time: one grid, run with 1 local worker, 4 local workers and 4 Ray workers.

    python bench/sweep.py [--quick] [--no-save]

The grid is learning_rate 2,4,8,16 × lr_scheduler cosine,linear,constant,autonomous × 2 seeds =
32 trials on `sim-rulebook`. The simulated models wait like remote APIs do (latency as sleeps:
`sim/target?latency=0.05`, `sim/optimizer?latency=0.2`), so trials overlap on 2 cores the way
API-bound trials overlap on any machine. Each arm is `python -m skillopt sweep start` into a fresh
store, timed from the command's start to its exit (Python start-up and, for Ray, starting and
stopping the local Ray instance on 127.0.0.1 included). Every arm must do the same work, so the
trials run with use_cache=false (local trials would otherwise share the store's evaluation cache,
while Ray trials, each with a store of its own node, would not) and speculative_rollouts=false
(how far a speculative rollout gets before the gate decides depends on timing, so its calls vary
with the load); the calls of each arm are reported and checked equal. The ratios are measured in
the same run: 1-worker wall time / the arm's.

Rule of every bench (bench/README.md): a reference arm emulates the published behaviour; here
the reference arm is one trial at a time (the published SkillOpt trains runs one by one).

The last line is one JSON object with every figure, also saved to bench/results/sweep.json
(`--quick`, a 2 × 2 smoke test, never saves).
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)

TARGET = "sim/target?latency=0.05"
OPTIMIZER = "sim/optimizer?latency=0.2"
TRIAL = ["num_epochs=1", "max_steps_per_epoch=2", "batch_size=20", "selection_size=30", "test_size=30",
         "use_cache=false", "speculative_rollouts=false", f"target_model={TARGET}", f"optimizer_model={OPTIMIZER}"]
FULL = {"learning_rate": "2,4,8,16", "lr_scheduler": "cosine,linear,constant,autonomous", "seeds": 2}
QUICK = {"learning_rate": "2,4", "lr_scheduler": "cosine,constant", "seeds": 1}
ARMS = (("local, 1 worker", "local", 1), ("local, 4 workers", "local", 4), ("ray, 4 workers", "ray", 4))
SPEEDUP_TARGET = 2.5  # of 4 ideal: trials that mostly wait overlap, process and Ray start-up do not


def run_arm(folder: Path, backend: str, workers: int, grid: dict) -> dict:
    db = folder / f"{backend}-{workers}.db"
    argv = [sys.executable, "-m", "skillopt", "sweep", "start", "--task", "sim-rulebook",
            "--grid", f"learning_rate={grid['learning_rate']}", "--grid", f"lr_scheduler={grid['lr_scheduler']}",
            "--seeds", str(grid["seeds"]), "--workers", str(workers), "--backend", backend, "--db", str(db)]
    for item in TRIAL:
        argv += ["--set", item]
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLOPT_DB", "RAY_ADDRESS")}
    started = time.perf_counter()
    out = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{backend} × {workers} failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    with sqlite3.connect(db) as conn:
        trials = conn.execute("SELECT COUNT(*), SUM(status = 'completed') FROM sweep_trials").fetchone()
        calls = conn.execute("SELECT COUNT(*) FROM llm_calls WHERE cached = 0").fetchone()[0]
        spans = conn.execute("SELECT MIN(started_at), MAX(finished_at) FROM sweep_trials").fetchone()
        best = conn.execute("SELECT MAX(r.best_test) FROM runs r").fetchone()[0]
    return {"wall_s": round(wall, 1), "trials": trials[0], "completed": trials[1], "calls": calls,
            "trials_span_s": round(spans[1] - spans[0], 1), "best_test": best}


def ray_start_s() -> float:
    """Starting and stopping a local Ray instance alone (part of the Ray arm's wall time)."""
    code = ("import time; t = time.perf_counter(); from skillopt.sweep import ray_backend; ray_backend.start(); "
            "import ray; ray.shutdown(); print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    return round(float(out.stdout.strip().splitlines()[-1]), 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a 2 × 2 grid, one seed (smoke test; not saved)")
    p.add_argument("--no-save", action="store_true")
    args = p.parse_args()
    grid = QUICK if args.quick else FULL
    arms = {}
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-sweep-") as tmp:
        for name, backend, workers in ARMS:
            arms[name] = run_arm(Path(tmp), backend, workers, grid)
            print(f"{name}: {json.dumps(arms[name])}", file=sys.stderr, flush=True)
    base = arms["local, 1 worker"]["wall_s"]
    speedup = {name: round(base / arm["wall_s"], 2) for name, arm in arms.items()}
    n = arms["local, 1 worker"]["trials"]
    same_work = len({arm["calls"] for arm in arms.values()}) == 1
    figures = {"mode": "quick" if args.quick else "full", "grid": grid, "trials": n, "trial": TRIAL,
               "cpus": os.cpu_count(), "arms": arms, "speedup": speedup, "same_calls_in_every_arm": same_work,
               "ray_start_stop_s": ray_start_s(), "speedup_target": SPEEDUP_TARGET,
               "met": all(v >= SPEEDUP_TARGET for k, v in speedup.items() if k != "local, 1 worker")
               and all(arm["completed"] == n for arm in arms.values())}
    finish("sweep", figures, save=not (args.no_save or args.quick))


if __name__ == "__main__":
    main()

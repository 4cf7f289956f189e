"""Real training with the embedded model: the published behaviour vs the project defaults.

    python bench/real_model.py            # the full comparison: 30 to 60 minutes on 2 cores
    python bench/real_model.py --quick    # tiny splits, 1 epoch: a smoke test of the script (~7 min)

The built-in `ticket-routing` task, `local/qwen2.5-coder-1.5b` (llama.cpp, in process) as both
target and optimizer, 2 epochs x batch 20, seed 42, two runs one after the other, each in its
own fresh database:

- reference: the published SkillOpt's behaviour, the reference arm of every bench
  (bench/calls.py's REFERENCE: strict gate on hard accuracy, no evaluation cache, every stage
  sequential, none of the project's additions: no evidence check, no model-free trials, the
  seed always the start, the slow update forced in);
- defaults: the project's defaults, nothing else set.

Figures per arm: target calls (also by stage) and optimizer calls (real calls: cache hits are not
calls, and a test evaluation of a skill text already tested in the run is counted once, as in every bench),
tokens of those calls, wall time of the run, and the test score of the best skill (and of no
skill, the seed and the final skill). The model is loaded before either run and its KV cache emptied before
each, so neither run pays the load nor inherits the other's cache. Target: defaults <= 0.6x the
reference's target calls and <= 0.5x its wall time at an equal or better test score. One seed,
one run per arm: a real run takes 15-35 minutes on 2 cores (measured 2026-12-07: reference 17.5,
defaults 15.2; on an earlier machine 32 and 25), so the figure is a single measurement, not an interval.

--quick (1 epoch of at most 2 steps of 4 items, 6 selection and 6 test items) checks that the
script works end to end; its figures say nothing about the targets, so it never saves them.
--task, --target and --optimizer exist to test the script itself on the simulated world.
The last line is one JSON object, saved to bench/results/real_model.json by a full run.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from calls import REFERENCE, paid_calls  # noqa: E402

TASK, MODEL, SEED = "ticket-routing", "local/qwen2.5-coder-1.5b", 42
FULL = ("num_epochs=2", "batch_size=20")
QUICK = ("num_epochs=1", "batch_size=4", "max_steps_per_epoch=2", "selection_size=6", "test_size=6")
ARMS = {"reference": REFERENCE, "defaults": ()}
CALLS_RATIO, WALL_RATIO = 0.6, 0.5


def measure(db: Path, task: str, overrides: tuple[str, ...]) -> dict:
    """Train once into `db`: calls by the counting rule, tokens, wall time and test scores."""
    from skillopt import runner
    from skillopt.config import load_config
    from skillopt.store.reader import Reader
    from skillopt.store.writer import Store

    store = Store(db)
    try:
        start = time.perf_counter()
        run_id, status = runner.start(store, task, load_config(None, [*overrides, f"seed={SEED}"]))
        wall = time.perf_counter() - start
    finally:
        store.close()
    reader = Reader(db)
    try:
        paid = paid_calls(reader, run_id)
    finally:
        reader.close()
    tests = paid["tests"]
    score = {which: round(tests[which]["score"], 4) if which in tests else None
             for which in ("none", "seed", "best", "final")}
    return {"status": status, **{k: paid[k] for k in ("target_calls", "optimizer_calls", "tokens", "steps", "stages")},
            "wall_s": round(wall, 2), "test": score, "accepted": paid["accepts"]}


def cold_model(model: str) -> None:
    """Load an embedded model now (not inside a timed run) and empty its KV cache."""
    if not model.startswith("local/"):
        return
    from skillopt.models import local

    name = model.split("/", 1)[1]
    problem = local.preflight(name)
    if problem:
        raise SystemExit(problem)
    local.load(name).forget()


def compare(task: str, target: str, optimizer: str, schedule: tuple[str, ...]) -> dict:
    """Both arms in fresh databases; their figures and the ratios of defaults to reference."""
    models = (f"target_model={target}", f"optimizer_model={optimizer}")
    arms = {}
    for name, overrides in ARMS.items():
        for model in {target, optimizer}:
            cold_model(model)
        with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
            arms[name] = measure(Path(tmp) / "runs.db", task, (*models, *schedule, *overrides))
        a = arms[name]
        print(f"{name:<10} {a['status']:<10} target {a['target_calls']:>5}  optimizer {a['optimizer_calls']:>4}  "
              f"tokens {a['tokens']:>8,}  wall {a['wall_s']:>7.1f} s  test none/seed/best/final "
              f"{a['test']['none']}/{a['test']['seed']}/{a['test']['best']}/{a['test']['final']}  "
              f"accepted {a['accepted']}/{a['steps']}  target calls by stage "
              f"{' '.join(f'{k}={v}' for k, v in a['stages'].items())}",
              flush=True)
    ref, new = arms["reference"], arms["defaults"]
    ratio = {key: round(new[key] / ref[key], 3) if ref[key] else None
             for key in ("target_calls", "optimizer_calls", "tokens", "wall_s")}
    test_diff = round((new["test"]["best"] or 0) - (ref["test"]["best"] or 0), 4)
    met = (ratio["target_calls"] is not None and ratio["target_calls"] <= CALLS_RATIO
           and ratio["wall_s"] is not None and ratio["wall_s"] <= WALL_RATIO and test_diff >= 0)
    return {"arms": arms, "ratio": ratio, "test_diff": test_diff, "met": met}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny splits and 1 epoch: checks the script, saves nothing")
    ap.add_argument("--task", default=TASK, help="task (default ticket-routing; other tasks test the script)")
    ap.add_argument("--target", default=MODEL, help="target model (default the embedded model)")
    ap.add_argument("--optimizer", default=MODEL, help="optimizer model (default the embedded model)")
    ap.add_argument("--no-save", action="store_true", help="do not overwrite bench/results/real_model.json")
    args = ap.parse_args()
    full = not args.quick and (args.task, args.target, args.optimizer) == (TASK, MODEL, MODEL)
    schedule = QUICK if args.quick else FULL
    print(f"{args.task}, target {args.target}, optimizer {args.optimizer}, {' '.join(schedule)}, seed {SEED}, "
          f"{os.cpu_count()} CPUs; reference = {' '.join(REFERENCE)}")
    result = compare(args.task, args.target, args.optimizer, schedule)
    r = result["ratio"]
    print(f"defaults / reference: target calls {r['target_calls']}x (target <= {CALLS_RATIO}), wall time "
          f"{r['wall_s']}x (target <= {WALL_RATIO}), tokens {r['tokens']}x, best test {result['test_diff']:+.3f} "
          f"-> {'met' if result['met'] else 'MISSED'}{'' if full else ' (not the full comparison: not saved)'}")
    finish("real_model", {"mode": "full" if full else "quick", "task": args.task, "target": args.target,
                          "optimizer": args.optimizer,
                          "schedule": list(schedule), "seed": SEED, "reference": list(REFERENCE), **result,
                          "targets": {"target_calls_ratio": CALLS_RATIO, "wall_ratio": WALL_RATIO},
                          "cpus": os.cpu_count()}, save=full and not args.no_save)


if __name__ == "__main__":
    main()

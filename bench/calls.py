"""Model calls of a full training run: the reference behaviour vs the project's best configuration.

    python bench/calls.py [--seeds 3] [--workers 4] [--tune 16]

On `sim-rulebook` (simulated models, so calls are counted, not timed), each seed runs the
full default schedule (4 epochs, batch 40) under:

- reference: gate_mode=strict, use_cache=false, speculative_rollouts=false -- the published
  SkillOpt's behaviour: every candidate scored on the whole selection split, the seed skill
  re-scored on the test split, every stage strictly sequential;
- best: the configuration with the fewest target calls at a test score no lower (BEST below;
  with --tune N it is picked afresh among CANDIDATES on N seeds disjoint from the reported ones,
  so it never rests on the luck of the reported seeds);
- for context, the project defaults and the best configuration with speculative rollouts.

Every run writes into its own fresh temporary database, so no cache entry of one run
(not even the seed skill's test results) is reused by another: the savings shown are
within-run only. A last row shows what sharing one database adds. Target calls are model
calls actually made (response-cache hits are not calls); tokens are those of those calls.
The last line is one JSON object with every figure.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TASK = "sim-rulebook"
SIM = ("target_model=sim/target", "optimizer_model=sim/optimizer")
REFERENCE = ("gate_mode=strict", "use_cache=false", "speculative_rollouts=false")
# Why each knob: the paired gate walks the incumbent's failures first and stops as soon as the
# candidate cannot win (exact: the same decision as scoring every item); a 30-item selection
# sample (of 60) makes each full check cheaper; failure_only reflects on failures only (the
# successes' minibatches rarely propose useful edits, and their edits cost gate calls); the
# cache never scores a skill twice on an item; speculation is off because it spends calls to
# save wall time ("+ speculative" row).
# Chosen on tuning seeds 1000-1007, never on the reported ones (there: 0.475x the reference's
# target calls, test 0.870 vs 0.857): with seeds this noisy, picking on the reported seeds
# would only pick luck. `--tune N` repeats the search among CANDIDATES.
BEST = ("gate_mode=paired", "gate_alpha=0.5", "selection_size=30", "failure_only=true", "use_cache=true",
        "speculative_rollouts=false")
# --tune searches these on seeds disjoint from the reported ones (TUNE_SEED up) and reports the
# one with the fewest target calls whose tuning score is not below the reference's (see tune).
CANDIDATES = tuple(("gate_mode=paired", f"gate_alpha={alpha}", f"selection_size={size}", f"failure_only={fo}",
                    "use_cache=true", "speculative_rollouts=false")
                   for size in (30, 40, 0) for alpha in (0.5, 0.3) for fo in ("true", "false"))
TUNE_SEED = 1000
STAGES = ("rollout", "gate", "slow_update", "test")


def configs(best: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    speculative = tuple(o for o in best if not o.startswith("speculative")) + ("speculative_rollouts=true",)
    return {"reference": REFERENCE, "defaults": (), "best": best, "best + speculative": speculative}


def measure(db: Path, overrides: tuple[str, ...], seed: int) -> dict:
    """Train once into `db`; return the run's calls, tokens and test scores."""
    from skillopt import runner
    from skillopt.config import load_config
    from skillopt.store.reader import Reader
    from skillopt.store.writer import Store

    store = Store(db)
    try:
        run_id, status = runner.start(store, TASK, load_config(None, [*SIM, *overrides, f"seed={seed}"]))
    finally:
        store.close()
    reader = Reader(db)
    try:
        made = reader.one(
            "SELECT SUM(role = 'target') AS target, SUM(role = 'optimizer') AS optimizer, "
            "COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS tokens "
            "FROM llm_calls WHERE run_id = ? AND cached = 0", (run_id,))
        stages = {r["stage"]: r["n"] for r in reader.q(
            "SELECT stage, COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target' AND cached = 0 "
            "GROUP BY stage", (run_id,))}
        tests = reader.tests(run_id)
        decisions = [s["decision"] for s in reader.steps(run_id)]
    finally:
        reader.close()
    return {"seed": seed, "status": status, "target_calls": made["target"] or 0,
            "optimizer_calls": made["optimizer"] or 0, "tokens": made["tokens"],
            "stages": {s: stages.get(s, 0) for s in STAGES},
            "test_best": tests["best"]["score"], "test_seed": tests["seed"]["score"],
            "accepts": sum(d.startswith("accept") for d in decisions)}


def fresh_run(args: tuple[str, tuple[str, ...], int]) -> tuple[str, dict]:
    name, overrides, seed = args
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
        return name, measure(Path(tmp) / "runs.db", overrides, seed)


def shared_runs(overrides: tuple[str, ...], seeds: list[int]) -> list[dict]:
    """The same runs one after another into ONE database: cross-run reuse (the seed's test)."""
    with tempfile.TemporaryDirectory(prefix="skillopt-bench-") as tmp:
        return [measure(Path(tmp) / "runs.db", overrides, s) for s in seeds]


def mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r[key] for r in rows)


def run_all(named: dict[str, tuple[str, ...]], seeds: list[int], workers: int) -> dict[str, list[dict]]:
    jobs = [(name, overrides, seed) for name, overrides in named.items() for seed in seeds]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(fresh_run, jobs))
    failed = [(n, r["seed"], r["status"]) for n, r in results if r["status"] != "completed"]
    if failed:
        raise SystemExit(f"runs did not complete: {failed}")
    return {name: [r for n, r in results if n == name] for name in named}


def tune(n_seeds: int, workers: int) -> tuple[str, ...]:
    """The candidate with the fewest target calls whose tuning score is not below the reference's.

    "Not below" allows one standard error of the per-seed differences (same seeds for both):
    on a few dozen seeds the means of equally good configurations differ by about that much,
    and a strict >= would pick whichever one was luckier, not the cheaper of equals.
    """
    seeds = list(range(TUNE_SEED, TUNE_SEED + n_seeds))
    named = {"reference": REFERENCE, **{" ".join(c): c for c in CANDIDATES}}
    rows = run_all(named, seeds, workers)
    ref = [r["test_best"] for r in rows["reference"]]

    def shortfall(c: tuple[str, ...]) -> float:
        diffs = [r["test_best"] - b for r, b in zip(rows[" ".join(c)], ref)]
        stderr = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
        return -statistics.fmean(diffs) - stderr  # > 0: lower than the reference beyond the noise

    print(f"tuning on seeds {seeds[0]}..{seeds[-1]} (disjoint from the reported seeds):")
    print(f"  {mean(rows['reference'], 'target_calls'):7.1f} calls  test {statistics.fmean(ref):.3f}  reference")
    for c in CANDIDATES:
        rs = rows[" ".join(c)]
        print(f"  {mean(rs, 'target_calls'):7.1f} calls  test {mean(rs, 'test_best'):.3f}  "
              f"{'ok ' if shortfall(c) <= 0 else 'low'}  {' '.join(c)}")
    fit = [c for c in CANDIDATES if shortfall(c) <= 0]
    chosen = (min(fit, key=lambda c: mean(rows[" ".join(c)], "target_calls")) if fit
              else min(CANDIDATES, key=shortfall))
    print(f"  -> {' '.join(chosen)}" + ("" if fit else " (none matched the reference: the closest one)") + "\n")
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="number of seeds, from 42 up (default 3)")
    ap.add_argument("--workers", type=int, default=4, help="runs in parallel processes (counts do not depend on it)")
    ap.add_argument("--tune", type=int, default=0, metavar="N",
                    help="first pick the best configuration among CANDIDATES on N other seeds (e.g. 16)")
    args = ap.parse_args()
    seeds = list(range(42, 42 + args.seeds))
    chosen = tune(args.tune, args.workers) if args.tune else BEST
    rows = run_all(configs(chosen), seeds, args.workers)
    shared = shared_runs(chosen, seeds)

    ref_calls = mean(rows["reference"], "target_calls")
    print(f"{TASK}, 4 epochs x batch 40, seeds {seeds[0]}..{seeds[-1]}; every run in its own fresh database "
          f"(no cross-run cache reuse). Means over seeds.")
    print(f"best = {' '.join(chosen)}\n")
    head = (f"{'configuration':<20} {'target calls':>12} {'ratio':>6} {'optimizer':>9} {'tokens':>9} "
            f"{'test best':>9} {'accepts':>7}   target calls by stage")
    print(head)
    print("-" * len(head) + "-" * 36)
    for name, rs in rows.items():
        calls = mean(rs, "target_calls")
        by_stage = " ".join(f"{s}={statistics.fmean(r['stages'][s] for r in rs):.0f}" for s in STAGES)
        print(f"{name:<20} {calls:>12.1f} {calls / ref_calls:>6.2f} {mean(rs, 'optimizer_calls'):>9.1f} "
              f"{mean(rs, 'tokens'):>9.0f} {mean(rs, 'test_best'):>9.3f} {mean(rs, 'accepts'):>7.1f}   {by_stage}")
    shared_calls = mean(shared, "target_calls")
    print(f"{'best, shared db':<20} {shared_calls:>12.1f} {shared_calls / ref_calls:>6.2f} "
          f"{mean(shared, 'optimizer_calls'):>9.1f} {mean(shared, 'tokens'):>9.0f} {mean(shared, 'test_best'):>9.3f} "
          f"{mean(shared, 'accepts'):>7.1f}   (the {len(seeds)} runs in ONE database: later runs reuse the seed's test)")

    best, ref = rows["best"], rows["reference"]
    ratio = mean(best, "target_calls") / ref_calls
    verdict = "PASS" if ratio <= 0.5 and mean(best, "test_best") >= mean(ref, "test_best") else "MISS"
    print(f"\nbest / reference target calls: {ratio:.3f} (target <= 0.5), test score {mean(best, 'test_best'):.3f} "
          f"vs {mean(ref, 'test_best'):.3f} (target: no lower) -> {verdict}")
    figures = {
        "reference_target_calls": round(ref_calls, 1),
        "target_calls": round(mean(best, "target_calls"), 1),
        "target_calls_ratio": round(ratio, 3),
        "reference_test_score": round(mean(ref, "test_best"), 4),
        "test_score": round(mean(best, "test_best"), 4),
        "reference_optimizer_calls": round(mean(ref, "optimizer_calls"), 1),
        "optimizer_calls": round(mean(best, "optimizer_calls"), 1),
        "reference_tokens": round(mean(ref, "tokens")),
        "tokens": round(mean(best, "tokens")),
        "seeds": seeds,
        "best_config": list(chosen),
        "per_seed": {name: [{k: r[k] for k in ("seed", "target_calls", "test_best")} for r in rs]
                     for name, rs in rows.items()},
        "defaults_target_calls": round(mean(rows["defaults"], "target_calls"), 1),
        "speculative_target_calls": round(mean(rows["best + speculative"], "target_calls"), 1),
        "shared_db_target_calls": round(shared_calls, 1),
        "pass": verdict == "PASS",
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

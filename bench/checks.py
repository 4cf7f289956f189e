"""Which checks earn their calls: the label-evidence check, the minibatch check and the slow update's gate.

    python bench/checks.py [--seeds 16] [--workers 2] [--no-save]

On `sim-rulebook` with the non-oracle simulated optimizer (`sim/learner`: it sees only the
prompts and learns rules from the cases, 20% of its rules wrong or irrelevant; it does not read
the hidden rules), the project defaults otherwise (4 epochs, batch 40), every run in its own
fresh database. Four arms, fixed here before any run, each with the arm it is compared with:

- no checks: check_evidence=false minibatch_check=false (nothing checked before the gate);
- defaults: the label-evidence check only (check_evidence=true, the project default), vs no checks;
- defaults + minibatch check: minibatch_check=true, vs no checks;
- defaults, slow update forced: slow_update_gate=false (the epoch-end guidance goes in without
  the gate, as in the published SkillOpt), vs defaults: does the gate cost the learning?

Each arm is compared with its baseline seed by seed (seeds 42 up): the mean and 95% t-interval
of the target-calls ratio and of the test-score difference (best skill, 120 test items). A
check earns its calls when the score difference's interval lies above 0, or when it saves
calls at a score difference whose interval contains 0; otherwise it is reported as not
earning them. The slow update's arm drops a check (its gate), so its verdict says whether the
gate costs the learning: it does when the forced arm's score difference lies above 0. Calls follow bench/calls.py's counting rule (a test evaluation of a skill text
already tested in the run counts once). The last line is one JSON object, also saved to
bench/results/checks.json.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import finish  # noqa: E402  (bench/ is the script's folder, first on sys.path)
from calls import compare, run_all  # noqa: E402

MODEL = ("target_model=sim/target", "optimizer_model=sim/learner")
ARMS = {"no checks": ("check_evidence=false", "minibatch_check=false"),
        "defaults": (),
        "defaults + minibatch check": ("minibatch_check=true",),
        "defaults, slow update forced": ("slow_update_gate=false",)}
BASELINE = {"defaults": "no checks", "defaults + minibatch check": "no checks",
            "defaults, slow update forced": "defaults"}
REPORT_SEED = 42


def gate_costs(stats: dict) -> str:
    """The slow update's arm: forcing the guidance in shows what its gate costs."""
    if stats["test_diff"]["low"] > 0:
        return "the gate costs the learning: forced in, the guidance scores higher"
    return "the gate does not cost the learning: forced in, no higher score"


def earns(stats: dict) -> str:
    r, d = stats["ratio"], stats["test_diff"]
    if d["low"] > 0:
        return "earns its calls: a higher test score"
    if d["low"] <= 0 <= d["high"] and r["mean"] < 1:
        return "earns its calls: fewer calls at a score no different"
    return "does not earn its calls"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    seeds = list(range(REPORT_SEED, REPORT_SEED + args.seeds))
    rows = run_all({name: (*MODEL, *arm) for name, arm in ARMS.items()}, seeds, args.workers)
    print(f"sim-rulebook, non-oracle sim/learner, 4 epochs x batch 40, seeds {seeds[0]}..{seeds[-1]}; means over seeds")
    print(f"{'arm':<28} {'target calls':>12} {'optimizer':>9} {'test best':>9} {'accepts':>7}")
    arms = {}
    for name, rs in rows.items():
        print(f"{name:<28} {statistics.fmean(r['target_calls'] for r in rs):>12.1f} "
              f"{statistics.fmean(r['optimizer_calls'] for r in rs):>9.1f} "
              f"{statistics.fmean(r['test_best'] for r in rs):>9.3f} {statistics.fmean(r['accepts'] for r in rs):>7.1f}")
        arms[name] = {"target_calls": round(statistics.fmean(r["target_calls"] for r in rs), 1),
                      "test_best": round(statistics.fmean(r["test_best"] for r in rs), 4)}
        if name in BASELINE:
            arms[name] |= {"baseline": BASELINE[name], **compare(rows[BASELINE[name]], rs)}
            arms[name]["verdict"] = (gate_costs if "slow_update_gate=false" in ARMS[name] else earns)(arms[name])
    for name, a in arms.items():
        if "ratio" in a:
            r, d = a["ratio"], a["test_diff"]
            print(f"{name} / {a['baseline']}, per seed: calls ratio {r['mean']:.3f} (95% CI {r['low']:.3f}..{r['high']:.3f}), "
                  f"test difference {d['mean']:+.4f} (95% CI {d['low']:+.4f}..{d['high']:+.4f}) -> {a['verdict']}")
    return finish("checks", {"task": "sim-rulebook", "optimizer": "sim/learner (non-oracle)", "seeds": seeds,
                             "arms": arms}, save=not args.no_save)


if __name__ == "__main__":
    main()

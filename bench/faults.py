"""Fault-injection harness: the reliability sweeps of tests/test_crash.py, test_faults.py and
test_bad_input.py, run once and counted.

    python bench/faults.py            # a few minutes on 2 cores

Prints kill points survived / tried, faults injected / survived and bad inputs rejected
cleanly / tried, then ONE line holding those figures as a JSON object. Uses only the
simulated models and fake providers: no network, no key, no GPU.

- kill points: SIGKILL at named moments of a run (and again while resuming); survived =
  the resumed run equals an uninterrupted one, no step lost or duplicated, integrity ok.
- faults: every fault the fake litellm provider and the simulated models inject; survived =
  the run ended as it should (completed, or failed naming a dead model) and the fault is on
  its llm_calls row.
- bad inputs: broken task folders, configs, seed skills (CLI) and uploads (New run page
  functions); clean = non-zero exit, one line naming the file and the problem, no traceback,
  no run row, no partial task folder.

The last line is also saved to bench/results/faults.json (`--no-save` keeps it).

Rule of every bench (bench/README.md): a reference arm emulates the published behaviour
(gate_mode=strict, use_cache=false), and in every arm a test evaluation of a skill text already
tested in the run is counted once. This bench counts no calls and has no reference arm: each
case has its own expected outcome.
"""
from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import pytest  # noqa: E402  (MonkeyPatch, used outside a test run)

import killer  # noqa: E402
from benchkit import finish  # noqa: E402
import test_bad_input as bad  # noqa: E402
import test_crash as crash  # noqa: E402
import test_faults as faults  # noqa: E402
from skillopt.models import llm  # noqa: E402
from skillopt.store.reader import Reader  # noqa: E402


def kill_sweep(tmp: Path) -> tuple[int, int]:
    ref_db = tmp / "ref.db"
    assert killer.run_killer(ref_db, "run", 0, "start", *crash.OVERRIDES) == 0, "the reference run failed"
    reference = killer.fingerprint(ref_db, "run")

    def one(n_point):
        n, (kills, stage) = n_point
        result = killer.survive(tmp / f"k{n}.db", "run", kills, crash.OVERRIDES)
        return kills, crash.survived(result, reference, stage)

    survived = 0
    with ThreadPoolExecutor(crash.WORKERS) as pool:
        for kills, problems in pool.map(one, enumerate(crash.KILL_POINTS)):
            survived += not problems
            print(f"  kill {' then '.join(kills):<45} {'survived' if not problems else 'FAILED: ' + '; '.join(problems)}")
    approval_ok = approval_kill(tmp)
    print(f"  kill {'poll@3 (waiting for approval)':<45} {'survived' if approval_ok else 'FAILED'}")
    return len(crash.KILL_POINTS) + 1, survived + approval_ok


def approval_kill(tmp: Path) -> bool:
    try:
        crash.test_killed_while_waiting_for_approval_resumes_to_the_same_result(tmp / "approval")
    except AssertionError as exc:
        print(f"    {exc}")
        return False
    return True


def fault_sweep(tmp: Path) -> tuple[int, int]:
    mp = pytest.MonkeyPatch()
    mp.setattr(llm, "_sleep", lambda s: None)
    injected = survived = 0
    try:
        # 1. every kind of fault, through litellm
        db = tmp / "flaky.db"
        run_id, flaky = faults.flaky_run(db)
        ok = Reader(db).run(run_id)["status"] == "completed"
        found, expected = faults.accounted(db, run_id), faults.expected_records(flaky.injected)
        n = sum(flaky.injected.values())
        kept = recorded(n, found, expected) if ok else 0
        injected, survived = injected + n, survived + kept
        print(f"  fake litellm provider: {n} faults injected ({dict(flaky.injected)}), {kept} recorded, "
              f"run {Reader(db).run(run_id)['status']}")
        # 2. the simulated models' own faults
        db = tmp / "sim.db"
        run_id, sim_injected = faults.sim_fault_run(db, mp)
        ok = Reader(db).run(run_id)["status"] == "completed"
        found = faults.accounted(db, run_id)
        n = sum(sim_injected.values())
        expected = Counter({k: sim_injected[k] for k in faults.TRANSPORT}, invalid_json=sim_injected["malformed"])
        kept = recorded(n, found, expected) if ok else 0
        injected, survived = injected + n, survived + kept
        print(f"  simulated models: {n} faults injected ({dict(sim_injected)}), {kept} recorded")
        # 3. dead models: each is one persistent fault that must fail the run naming the model
        for n_case, (case, (overrides, model)) in enumerate(faults.DEAD.items()):
            db = tmp / f"dead-{n_case}.db"
            run_id = faults.dead_run(db, overrides)
            run = Reader(db).run(run_id)
            ok = run["status"] == "failed" and model in run["reason"]
            injected, survived = injected + 1, survived + ok
            print(f"  dead model ({case}): {run['status']} — {run['reason'][:90]}")
    finally:
        mp.undo()
    return injected, survived


def recorded(injected: int, found: Counter, expected: Counter) -> int:
    """Injected faults that are on their llm_calls rows: all of them, less any the store lacks."""
    missing = sum(max(0, expected[k] - found[k]) for k in expected)
    return max(0, injected - missing)


def bad_input_sweep(tmp: Path) -> tuple[int, int]:
    cases = bad.cases(tmp)

    def one(n_case):
        n, case = n_case
        return case, bad.problems_of(case, bad.run_case(case, tmp / f"case{n}.db"))

    tried = clean = 0
    with ThreadPoolExecutor(bad.WORKERS) as pool:
        for case, problems in pool.map(one, enumerate(cases)):
            tried, clean = tried + 1, clean + (not problems)
            if problems:
                print(f"  NOT CLEAN {case.name}: {'; '.join(problems)}")
    for name, (data, spec) in bad.upload_cases(tmp).items():
        problems = bad.upload_rejected_cleanly(name, data, spec, tmp / f"upload-{len(name)}-{tried}")
        tried, clean = tried + 1, clean + (not problems)
        if problems:
            print(f"  NOT CLEAN upload {name}: {'; '.join(problems)}")
    print(f"  {clean} of {tried} bad inputs rejected cleanly (CLI: task folders, configs, seed skills; uploads)")
    return tried, clean


def main() -> None:
    save = "--no-save" not in sys.argv[1:]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="skillopt-faults-") as tmp_dir:
        tmp = Path(tmp_dir)
        for sub in ("kills", "faults", "bad"):
            (tmp / sub).mkdir()
        print("kill points (SIGKILL, then resume):")
        kills_tried, kills_survived = kill_sweep(tmp / "kills")
        print(f"kill points survived / tried: {kills_survived} / {kills_tried}\n")
        print("faulty models:")
        faults_injected, faults_survived = fault_sweep(tmp / "faults")
        print(f"faults survived / injected: {faults_survived} / {faults_injected}\n")
        print("bad inputs:")
        bad_tried, bad_clean = bad_input_sweep(tmp / "bad")
        print(f"bad inputs rejected cleanly / tried: {bad_clean} / {bad_tried}\n")
    elapsed = time.monotonic() - started
    print(f"({elapsed:.0f} s)")
    finish("faults", {"kills_tried": kills_tried, "kills_survived": kills_survived,
                      "faults_injected": faults_injected, "faults_survived": faults_survived,
                      "bad_inputs_tried": bad_tried, "bad_inputs_clean": bad_clean, "wall_s": round(elapsed)},
           save=save)


if __name__ == "__main__":
    main()

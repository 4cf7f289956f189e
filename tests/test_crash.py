"""Crash safety: a run SIGKILLed anywhere (once, or again while resuming) and resumed ends
exactly like an uninterrupted run: same steps, decisions, edits, skills and test scores,
no step lost or duplicated, and a database that passes PRAGMA integrity_check.

The kill points are named moments of the loop (tests/killer.py documents the syntax), so
each one provably lands in the stage it is meant to test: the test checks the stage the
killed run left in the store. The sweep runs its subprocesses a few at a time.
"""
from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from killer import fingerprint, integrity, run_killer, survive
from skillopt.store.writer import Store

# check_evidence=false: the sweep needs steps the gate rejects, which the evidence check would
# mostly pre-empt on the simulated world; seed=2 gives a run whose first two steps are accepted
# and last two rejected (test_reference_run_exercises_accepts_rejects_and_a_slow_update).
OVERRIDES = ("num_epochs=2", "max_steps_per_epoch=2", "batch_size=16", "slow_update_samples=8",
             "selection_size=20", "test_size=20", "check_evidence=false", "seed=2")
WORKERS = 3  # subprocesses at a time: they mostly wait on SQLite and process start-up

# (kill points in order: the start, then each resume; the stage the FIRST kill must leave the run in)
KILL_POINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("1",), "gate"),                        # the very first model call: scoring the seed skill
    (("SeedScored@1:tx",), "gate"),          # inside the seed's transaction, before COMMIT
    (("rollout@1+5",), "rollout"),           # during the first step's rollouts
    (("rollout@3+2",), "rollout"),           # during rollouts of epoch 2
    (("reflect@1+1",), "reflect"),           # at the first reflection call
    (("reflect@2+2",), "reflect"),           # mid-reflection, other minibatches in flight
    (("aggregate@1",), "aggregate"),         # reflections done, nothing aggregated yet
    (("select@2",), "select"),               # budget chosen, edits not applied yet
    (("gate@1",), "gate"),                   # between apply and gate
    (("gate@1+4",), "gate"),                 # during the gate
    (("gate@3+6",), "gate"),                 # during a later gate
    (("StepCompleted@1",), "gate"),          # right after a step is committed
    (("StepCompleted@2:tx",), "gate"),       # inside a step's transaction, before COMMIT
    (("EpochCompleted@1:tx",), "gate"),      # inside the end of epoch 1, before COMMIT
    (("slow_update@1",), "slow_update"),     # as the slow update starts
    (("slow_update@1+3",), "slow_update"),   # during the slow update's rollouts
    (("slow_update@1+10",), "slow_update"),  # later in the slow update (its optimizer call or gate)
    (("meta@1",), "meta"),                   # as the meta update starts
    (("meta@1+1",), "meta"),                 # during the meta update's optimizer call
    (("EpochCompleted@2",), "meta"),         # after the last epoch end, before the final tests
    (("test@1+3",), "test"),                 # during the seed skill's test evaluation
    (("test@2+1",), "test"),                 # during the best skill's test evaluation
    (("test@3",), "test"),                   # as the final skill's test evaluation starts
    (("TestEvaluated@2:tx",), "test"),       # inside a test result's transaction
    # inside the flush of buffered call rows and cache entries, in the transaction of an event
    (("rollout@1:flush",), "rollout"),       # the first step's rollouts, flushed with their rows
    (("gate@2:flush",), "gate"),             # rows buffered during the first step's gate
    (("slow_update@1:flush",), "slow_update"),  # rows of the slow update's rollouts
    (("test@2:flush",), "test"),             # rows of the best skill's test evaluation
    # killed again while resuming (twice, then three times)
    (("gate@1+4", "reflect@1+1"), "gate"),
    (("rollout@3+2", "gate@1+2", "StepCompleted@1:tx"), "rollout"),
    (("gate@2:flush", "rollout@1:flush"), "gate"),
)


def _id(point: tuple[tuple[str, ...], str]) -> str:
    return " then ".join(point[0])


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    db = tmp_path_factory.mktemp("ref") / "ref.db"
    assert run_killer(db, "run", 0, "start", *OVERRIDES) == 0
    return fingerprint(db, "run")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, reference) -> dict[tuple[str, ...], dict]:
    """Every kill point, run in parallel once; each test below checks one of them."""
    base = tmp_path_factory.mktemp("kills")

    def one(n_point):
        n, (kills, _) = n_point
        return kills, survive(base / f"k{n}.db", "run", kills, OVERRIDES)

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(one, enumerate(KILL_POINTS)))


def survived(result: dict, reference: dict, stage: str) -> list[str]:
    """Every way the run failed to survive (empty = survived); shared with bench/faults.py."""
    problems = []
    if any(code != -9 for code in result["codes"]):
        problems.append(f"not killed as planned (return codes {result['codes']})")
    left = result["left"][0]
    if left is None or left[0] == "completed" or left[1] != stage:
        problems.append(f"first kill left the run at {left}, expected a live run in stage {stage!r}")
    if result["final_code"] != 0:
        problems.append(f"final resume exited with {result['final_code']}")
    got = result["fingerprint"]
    for key in reference:
        if got[key] != reference[key]:
            problems.append(f"{key} differs from the uninterrupted run")
    steps = [s[0] for s in got["steps"]]
    if steps != list(range(1, len(steps) + 1)):
        problems.append(f"steps lost or duplicated: {steps}")
    if result["integrity"] != "ok":
        problems.append(f"integrity_check: {result['integrity']}")
    return problems


def test_kill_points_cover_every_stage():
    stages = {stage for _, stage in KILL_POINTS}
    assert {"rollout", "reflect", "aggregate", "select", "gate", "slow_update", "meta", "test"} <= stages
    assert len(KILL_POINTS) >= 20
    assert any(len(kills) >= 2 for kills, _ in KILL_POINTS)


def test_reference_run_exercises_accepts_rejects_and_a_slow_update(reference):
    decisions = {s[3] for s in reference["steps"]}
    assert reference["status"] == "completed" and len(reference["steps"]) == 4
    assert "reject" in decisions and any(d.startswith("accept") for d in decisions)
    assert reference["slow"] and reference["meta"] and set(reference["tests"]) == {"seed", "best", "final", "none"}


@pytest.mark.parametrize("point", KILL_POINTS, ids=[_id(p) for p in KILL_POINTS])
def test_killed_run_resumes_to_the_same_result(sweep, reference, point):
    kills, stage = point
    assert survived(sweep[kills], reference, stage) == []


def _paid(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM llm_calls WHERE cached = 0").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("kill", ["StepCompleted@1", "gate@2:flush"])
def test_a_response_paid_for_is_paid_again_only_if_its_unit_was_in_flight(tmp_path, kill):
    """Call rows and cache entries are buffered until the next event's transaction, so a kill
    loses those of the unit in flight: their rows vanish with them and the resumed run pays
    them once more. Everything committed before is served from the cache. Either way the paid
    calls on record add up to exactly the uninterrupted run's; a cache that lost committed
    entries would make the resumed run pay them again, on top."""
    ref_db, db = tmp_path / "ref.db", tmp_path / "killed.db"
    assert run_killer(ref_db, "run", 0, "start", *OVERRIDES) == 0
    assert run_killer(db, "run", kill, "start", *OVERRIDES) == -9
    before = _paid(db)
    assert 0 < before < _paid(ref_db)
    assert run_killer(db, "run", 0, "resume") == 0
    assert _paid(db) == _paid(ref_db)


# ---- approval mode: killed while waiting for a person -------------------------------------------

APPROVAL = (*OVERRIDES, "approval_mode=true", "approval_poll_s=0.02")


def decision(step: int, idx: int) -> tuple[str, str | None]:
    """The person's (deterministic) decision on edit idx of a step."""
    kind = ("approved", "rejected", "edited")[idx % 3]
    return kind, f"- Reviewer's rule (step {step}, edit {idx}): double-check the route." if kind == "edited" else None


class Approver:
    """A person at the Approvals page: decides every pending edit through the store."""

    def __init__(self, db: Path):
        self.db, self.done = db, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(30)

    def loop(self) -> None:
        store = None
        while not self.done.wait(0.02):  # polling the store like the page does, not a timed assertion
            if store is None:
                if not self.db.exists() or not _has_runs(self.db):
                    continue
                store = Store(self.db)
            for row in store.query("SELECT run_id, step, idx FROM approvals WHERE status = 'pending'"):
                status, content = decision(row["step"], row["idx"])
                store.decide(row["run_id"], row["step"], row["idx"], status, content)
        if store is not None:
            store.close()


def _has_runs(db: Path) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return bool(conn.execute("SELECT 1 FROM runs LIMIT 1").fetchall())
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def test_killed_while_waiting_for_approval_resumes_to_the_same_result(tmp_path):
    ref_db, db = tmp_path / "ref.db", tmp_path / "killed.db"
    with Approver(ref_db):
        assert run_killer(ref_db, "run", 0, "start", *APPROVAL) == 0
    reference = fingerprint(ref_db, "run")
    assert reference["status"] == "completed" and reference["approvals"]
    assert {a[2] for a in reference["approvals"]} == {"approved", "rejected", "edited"}

    assert run_killer(db, "run", "poll@3", "start", *APPROVAL) == -9  # nobody decides: it waits, then dies
    store = Store(db)
    try:
        assert store.run("run")["status"] == "waiting_approval"
        pending = store.query("SELECT step, idx FROM approvals WHERE status = 'pending' ORDER BY idx")
        assert pending
        first = pending[0]  # a person decides one edit while the trainer is dead ...
        store.decide("run", first["step"], first["idx"], *decision(first["step"], first["idx"]))
    finally:
        store.close()
    with Approver(db):  # ... and the rest once it is resumed
        assert run_killer(db, "run", 0, "resume") == 0
    assert fingerprint(db, "run") == reference
    assert integrity(db) == "ok"

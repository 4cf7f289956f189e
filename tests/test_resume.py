"""A run killed with SIGKILL at a random point and resumed ends exactly like an uninterrupted run."""
from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.store.reader import Reader

KILLER = Path(__file__).with_name("killer.py")
OVERRIDES = ("num_epochs=2", "max_steps_per_epoch=2", "slow_update_samples=10")


def killer(db: Path, run_id: str, kill_at: int, mode: str, *overrides: str) -> int:
    return subprocess.run([sys.executable, str(KILLER), str(db), run_id, str(kill_at), mode, *overrides],
                          capture_output=True, timeout=300).returncode


def fingerprint(db: Path, run_id: str) -> dict:
    r = Reader(db)
    return {
        "steps": [(s["step"], s["epoch"], s["edit_budget"], s["decision"], s["current_score"],
                   s["candidate_score"], s["best_score"]) for s in r.steps(run_id)],
        "edits": [(e["step"], e["idx"], e["op"], e["content"], e["fate"], e["status"], e["gate"])
                  for e in r.edits(run_id)],
        "slow": [(u["epoch"], u["decision"], u["guidance"]) for u in r.slow_updates(run_id)],
        "meta": [(m["epoch"], m["content"]) for m in r.meta_skills(run_id)],
        "tests": {k: v["score"] for k, v in r.tests(run_id).items()},
        "best": r.best_skill(run_id),
        "final": r.skill_at(run_id, 10_000),
        "status": r.run(run_id)["status"],
        "rejected": [(b["step"], b["edit_json"]) for b in r.rejected_buffer(run_id)],
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    db = tmp_path_factory.mktemp("ref") / "ref.db"
    assert killer(db, "run", 0, "start", *OVERRIDES) == 0
    calls = Reader(db).q("SELECT COUNT(*) AS n FROM llm_calls")[0]["n"]
    return fingerprint(db, "run"), calls


@pytest.mark.parametrize("seed", range(4))
def test_killed_and_resumed_run_matches_uninterrupted(tmp_path, reference, seed):
    ref, total_calls = reference
    kill_at = random.Random(seed).randint(1, total_calls - 1)
    db = tmp_path / "k.db"
    assert killer(db, "run", kill_at, "start", *OVERRIDES) == -9  # really killed
    assert Reader(db).run("run")["status"] != "completed"
    assert killer(db, "run", 0, "resume") == 0
    got = fingerprint(db, "run")
    assert got == ref
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    steps = [s[0] for s in got["steps"]]
    assert steps == sorted(set(steps))  # no step lost or duplicated


def test_a_checkpoint_keeps_an_edits_line_and_companions_and_loads_one_without_them():
    import json

    from skillopt.patch import Edit
    from skillopt.state import RejectedEdit, State

    by_line = Edit("replace", target="- a", content="- b", line=3)
    other = Edit("add", content="- c", section="Rules")
    state = State(step=2, skill="s", current_score=0.5, best_skill="s", best_score=0.5, best_step=0,
                  epoch_start_skill="s", rejected=(RejectedEdit(2, by_line, 0.5, 0.4, "gate", companions=(other,)),),
                  accepted=(by_line,))
    again = State.from_json(json.loads(json.dumps(state.to_json())))
    assert again.rejected == state.rejected and again.accepted == (by_line,) and again.accepted[0].line == 3
    old = state.to_json()  # a checkpoint written before edits had a line or rejections had companions
    for e in [old["accepted"][0], old["rejected"][0]["edit"]]:
        del e["line"]
    del old["rejected"][0]["companions"]
    loaded = State.from_json(json.loads(json.dumps(old)))
    assert loaded.accepted[0].line == 0 and loaded.rejected[0].companions == ()

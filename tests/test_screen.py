"""The minibatch check (skillopt/screen.py): a candidate must gain on its step's train items,
and a harmful edit of a multi-edit candidate is found by leaving it out."""
from __future__ import annotations

import sqlite3

import pytest

from skillopt.patch import Edit, apply_edits
from skillopt.rollout import Batch
from skillopt.screen import Screen, contribution, verdict
from skillopt.tasks.task import Evaluation, Item, Trajectory
from tests.helpers import run_sim

SKILL = "# Skill\n\n## Rules\n\n- Answer briefly.\n"
GOOD = Edit(op="add", section="Rules", content="- Rule GOOD.")
BAD = Edit(op="add", section="Rules", content="- Rule BAD.")
USELESS = Edit(op="add", section="Rules", content="- Rule USELESS.")
ITEMS = [Item(id=i, input={"q": i}, expected="x", split="train") for i in ("f1", "f2", "f3", "p1", "p2", "p3")]
BEFORE = {"f1": 0.0, "f2": 0.0, "f3": 0.0, "p1": 1.0, "p2": 1.0, "p3": 1.0}


def world(skill: str, item_id: str) -> float:
    """GOOD fixes f1 and f2; BAD breaks p1; nothing else changes an item."""
    if item_id in ("f1", "f2") and "GOOD" in skill:
        return 1.0
    if item_id == "p1" and "BAD" in skill:
        return 0.0
    return BEFORE[item_id]


class Recorder:
    def __init__(self, errors: frozenset[str] = frozenset()):
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.errors = errors

    def evaluate(self, skill, items, *, step, split, purpose, stage):
        assert split == "train" and stage == "gate"
        self.calls.append((purpose, tuple(it.id for it in items)))
        return Batch(trajectories=tuple(
            Trajectory(item_id=it.id, prompt="", output="", expected="x",
                       evaluation=Evaluation(hard=world(skill, it.id), soft=0.0, feedback=""),
                       error="boom" if it.id in self.errors else "") for it in items),
            cached=tuple(False for _ in items))


def screen(rec: Recorder) -> Screen:
    return Screen(rec.evaluate, lambda b: {t.item_id: t.evaluation.hard for t in b.scored}, 0.85, 0.05)


def test_verdict_counts_fixed_broken_and_the_net_gain():
    v = verdict(BEFORE, {**BEFORE, "f1": 1.0, "p1": 0.0, "p2": 0.0})
    assert (v.fixed, v.broken, v.gain, v.n_items) == (("f1",), ("p1", "p2"), -1.0, 6)
    assert not v.helps and v.before == pytest.approx(0.5) and v.after == pytest.approx(1 / 3)
    assert "fixed 1 and broke 2" in v.note() and v.note().startswith("contradicted:")
    assert verdict(BEFORE, {**BEFORE, "f3": 1.0}).helps
    # An item scored under one skill only says nothing.
    assert verdict(BEFORE, {"f1": 1.0}).n_items == 1


def test_contribution_is_what_the_edit_adds_on_the_items_scored_both_ways():
    assert contribution({"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0, "c": 1.0}) == 0.0
    assert contribution({"a": 0.0}, {"a": 1.0}) == -1.0


def test_a_candidate_that_fixes_nothing_is_dropped_whole():
    rec = Recorder()
    patch, dropped = screen(rec).check(3, SKILL, [USELESS], ITEMS, BEFORE)
    assert patch is not None and patch.text == SKILL and patch.applied == ()
    assert [d.edit for d in dropped] == [USELESS] and dropped[0].companions == ()
    assert "fixed 0 and broke 0" in dropped[0].note
    assert rec.calls == [("check", tuple(BEFORE))]


def test_a_helpful_candidate_passes_unchanged_with_one_scoring_of_the_batch():
    rec = Recorder()
    assert screen(rec).check(3, SKILL, [GOOD, USELESS], ITEMS, BEFORE) == (None, ())
    assert rec.calls == [("check", tuple(BEFORE))]  # nothing broke: no leave-one-out


def test_a_harmful_edit_riding_on_a_good_one_is_found_by_leaving_it_out():
    rec = Recorder()
    patch, dropped = screen(rec).check(3, SKILL, [GOOD, BAD], ITEMS, BEFORE)
    assert [d.edit for d in dropped] == [BAD] and "left out" in dropped[0].note
    assert dropped[0].score_before > dropped[0].score_after  # without it the items score higher
    assert patch.applied == (GOOD,) and "GOOD" in patch.text and "BAD" not in patch.text
    purposes = [p for p, _ in rec.calls]
    # The candidate, then each edit left out on the 3 items it changed, then the rest again.
    assert purposes == ["check", "check_leave_one_out", "check_leave_one_out", "check"]
    assert all(sorted(ids) == ["f1", "f2", "p1"] for p, ids in rec.calls if p == "check_leave_one_out")


def test_when_every_edit_is_harmful_the_candidate_is_empty():
    rec = Recorder()
    patch, dropped = screen(rec).check(3, SKILL, [BAD, USELESS], ITEMS, BEFORE)
    assert {d.edit for d in dropped} == {BAD, USELESS} and patch.applied == ()
    # BAD is found by leaving it out; USELESS then fixes nothing alone and goes with the verdict.
    notes = {d.edit: d.note for d in dropped}
    assert "left out" in notes[BAD] and "fixed 0 and broke 0" in notes[USELESS]


def test_no_failure_or_too_many_errors_is_no_evidence():
    passing = {k: 1.0 for k in BEFORE}
    rec = Recorder()
    assert screen(rec).check(1, SKILL, [BAD], ITEMS, passing) == (None, ()) and rec.calls == []
    rec = Recorder(errors=frozenset({"f1"}))  # 1 of 6 errored: above max_error_rate 0.05
    assert screen(rec).check(1, SKILL, [USELESS], ITEMS, BEFORE) == (None, ())


def test_the_check_apply_matches_the_patch_module():
    patch, _ = screen(Recorder()).check(3, SKILL, [GOOD, BAD], ITEMS, BEFORE)
    assert patch.text == apply_edits(SKILL, [GOOD]).text


def _rows(db, sql, *args):
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def test_a_run_with_the_check_records_its_drops_and_never_gates_them(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "optimizer_model=sim/learner?noise=0.2", "num_epochs=2", "minibatch_check=true")
    checked = _rows(db, "SELECT purpose, COUNT(*) AS n FROM rollouts WHERE run_id = ? AND purpose LIKE 'check%' "
                        "GROUP BY purpose", run_id)
    assert {r["purpose"] for r in checked} >= {"check"}
    dropped = _rows(db, "SELECT step, gate, note FROM edits WHERE run_id = ? AND note LIKE '%contradicted: %' "
                        "AND (note LIKE '%train items of its step%' OR note LIKE '%left out%')", run_id)
    assert dropped and all(r["gate"] == "" for r in dropped)
    steps = {r["step"]: r["decision"] for r in _rows(db, "SELECT step, decision FROM steps WHERE run_id = ?", run_id)}
    whole = [r for r in dropped if "train items of its step" in r["note"]]
    # A step whose every edit was dropped has no candidate: it is skipped, never gated.
    for r in whole:
        gated = _rows(db, "SELECT COUNT(*) AS n FROM edits WHERE run_id = ? AND step = ? AND gate != ''",
                      run_id, r["step"])[0]["n"]
        if not gated:
            assert steps[r["step"]] == "skip"


def test_the_check_is_off_by_default(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "num_epochs=1")
    assert not _rows(db, "SELECT 1 FROM rollouts WHERE run_id = ? AND purpose LIKE 'check%'", run_id)

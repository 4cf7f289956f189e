"""flips: the selection split's step x item matrix (synthetic rows and a real simulated run)."""
from __future__ import annotations

import json
import math

from skillopt.ui.flips import build, flip_counts

ROWS = [
    (0, "gate_current", "a", 0.0), (0, "gate_current", "b", 1.0), (0, "gate_current", "c", 0.0),
    (1, "gate_candidate", "a", 1.0), (1, "gate_candidate", "b", 1.0), (1, "gate_candidate", "c", 0.0),
    (2, "gate_candidate", "a", 1.0), (2, "gate_candidate", "b", 0.0), (2, "gate_candidate", "c", 1.0),
    (3, "gate_current", "a", 0.0),  # paired mode measures the incumbent directly
    (3, "gate_candidate", "a", 1.0), (3, "slow_update_candidate", "a", 1.0),
    (3, "slow_update_candidate", "b", 1.0), (3, "slow_update_candidate", "c", 1.0),
]


def test_incumbent_follows_accepted_candidates():
    m = build(ROWS, {1: "accept_new_best", 2: "reject", 3: "reject", 4: "skip"}, {3: "accept"})
    assert m.steps == (0, 1, 2, 3, 4) and m.items == ("a", "b", "c")
    assert m.column("incumbent", 0) == [0.0, 1.0, 0.0]
    assert m.column("incumbent", 1) == [1.0, 1.0, 0.0]  # step 1 accepted
    assert m.column("incumbent", 2) == [1.0, 1.0, 0.0]  # step 2 rejected: unchanged
    assert m.column("incumbent", 3) == [1.0, 1.0, 1.0]  # the slow update after step 3 was accepted
    assert m.column("incumbent", 4) == [1.0, 1.0, 1.0]
    assert m.column("candidate", 2) == [1.0, 0.0, 1.0] and m.column("candidate", 4) == [None, None, None]
    assert m.column("flips", 1) == [1.0, 0.0, 0.0]
    assert m.column("flips", 2) == [0.0, -1.0, 1.0]
    assert m.column("flips", 3) == [1.0, None, None]  # measured incumbent 0.0 for a; b, c not re-evaluated
    assert flip_counts(m) == [(0, 0, 0), (1, 1, 0), (2, 1, 1), (3, 1, 0), (4, 0, 0)]


def test_matrix_of_a_real_run_matches_the_gate(sim_run):
    from skillopt.store.reader import Reader

    db, run_id = sim_run
    r = Reader(db)
    try:
        steps = r.steps(run_id)
        gates = r.gate_decisions(run_id)
        m = build(r.selection_matrix(run_id), {s["step"]: s["decision"] for s in steps},
                  {g["step"]: g["decision"] for g in gates if g["kind"] == "slow_update"})
        current = {v["step"]: v["score"] for v in r.versions(run_id) if v["kind"] in ("seed", "current")}
    finally:
        r.close()
    assert len(m.items) > 0
    assert m.steps == tuple(range(0, len(steps) + 1))
    for step, score in current.items():  # on the hard metric the incumbent's mean is its stored score
        assert math.isclose(sum(m.column("incumbent", step)) / len(m.items), score)
    flipped = {g["step"]: json.loads(g["flipped_json"]) for g in gates if g["kind"] == "step"}
    assert flipped, "the fixture run gated at least one step"
    for step, flips in flipped.items():
        got = {item: v for item, v in zip(m.items, m.column("flips", step)) if v}
        assert got == {item: cand - inc for item, inc, cand in flips}
    for s in steps:
        cand = m.column("candidate", s["step"])
        if s["candidate_score"] is None:
            assert cand == [None] * len(m.items)
        else:  # the paired gate stops early: an item it did not score counts as unchanged
            before = m.column("incumbent", s["step"] - 1)
            filled = [c if c is not None else b for c, b in zip(cand, before)]
            assert math.isclose(sum(filled) / len(filled), s["candidate_score"])

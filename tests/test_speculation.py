"""Speculative rollouts run only where the target has workers to spare (speculation.py)."""
from __future__ import annotations

from skillopt import speculation
from skillopt.store.reader import Reader
from tests.helpers import run_sim


def _spied_run(monkeypatch, db, *overrides: str) -> tuple[list[bool], list[str]]:
    warmed: list[bool] = []
    real = speculation.warming

    def spy(evaluator, skill, items, step, should_stop):
        warmed.append(items is not None)
        return real(evaluator, skill, items, step, should_stop)

    monkeypatch.setattr(speculation, "warming", spy)
    run_id = run_sim(db, "num_epochs=1", "batch_size=10", "seed=3", *overrides)
    steps = [r["decision"] for r in Reader(db).q("SELECT decision FROM steps WHERE run_id = ? ORDER BY step",
                                                 (run_id,))]
    return warmed, steps


def test_a_target_taking_one_call_at_a_time_is_not_warmed_and_decides_the_same(monkeypatch, tmp_path):
    # an instant simulated target computes one call at a time (concurrency 1), like the embedded model
    one, one_steps = _spied_run(monkeypatch, tmp_path / "one.db")
    assert one and not any(one)
    # the same world behind a remote-like latency has no limit of its own: the next batch is warmed
    spare, spare_steps = _spied_run(monkeypatch, tmp_path / "spare.db", "target_model=sim/target?latency=0.001")
    assert any(spare)
    assert one_steps == spare_steps  # warming only fills the cache: the decisions are the same
    # max_concurrency=1 leaves no spare worker either
    capped, _ = _spied_run(monkeypatch, tmp_path / "capped.db", "target_model=sim/target?latency=0.001",
                           "max_concurrency=1")
    assert capped and not any(capped)

"""The data plan: deterministic batches, one pass over train per epoch, split caps."""
from __future__ import annotations

import pytest

from tests.helpers import sim_config
from skillopt.errors import TaskError
from skillopt.plan import Plan, examples_gate_calls, max_reflections
from skillopt.tasks.task import Item


class FakeTask:
    """Just what Plan.make reads: a name and three splits."""

    def __init__(self, n_train=10, n_selection=6, n_test=8):
        self.name = "fake"
        self.splits = {name: tuple(Item(id=f"{name}-{i:03d}", input={"q": str(i)}, expected="a", split=name)
                                   for i in range(n))
                       for name, n in (("train", n_train), ("selection", n_selection), ("test", n_test))}

    def split(self, name):
        return self.splits[name]


def plan(task=None, *overrides: str) -> Plan:
    return Plan.make(task or FakeTask(), sim_config(*overrides))


def ids(items) -> list[str]:
    return [it.id for it in items]


@pytest.mark.parametrize("n_train,batch,steps", [(10, 4, 3), (10, 5, 2), (10, 10, 1), (10, 40, 1), (120, 40, 3)])
def test_steps_per_epoch_is_ceil_of_train_over_batch(n_train, batch, steps):
    p = plan(FakeTask(n_train=n_train), f"batch_size={batch}", "num_epochs=3")
    assert p.steps_per_epoch == steps and p.total_steps == 3 * steps


def test_an_epoch_is_one_pass_over_train_without_repeats():
    p = plan(None, "batch_size=4", "num_epochs=3")  # 10 items: batches of 4, 4, 2
    train = set(ids(p.train))
    for epoch in range(1, 4):
        steps = range((epoch - 1) * p.steps_per_epoch + 1, epoch * p.steps_per_epoch + 1)
        batches = [ids(p.batch(s)) for s in steps]
        assert [len(b) for b in batches] == [4, 4, 2]
        flat = [i for b in batches for i in b]
        assert len(flat) == len(set(flat)) == len(train) and set(flat) == train
        assert all(p.epoch_of(s) == epoch for s in steps)


def test_epochs_reshuffle_and_seeds_differ():
    p = plan(None, "batch_size=5", "num_epochs=2")
    assert ids(p.batch(1)) + ids(p.batch(2)) != ids(p.batch(3)) + ids(p.batch(4))  # epoch 2 is a new order
    other = plan(None, "batch_size=5", "num_epochs=2", "seed=43")
    assert ids(p.batch(1)) != ids(other.batch(1))


def test_batches_are_deterministic_across_plans():
    """A resumed run rebuilds the plan: it must see the very same batches and samples."""
    a, b = plan(None, "batch_size=3"), plan(None, "batch_size=3")
    assert [ids(a.batch(s)) for s in range(1, a.total_steps + 1)] == \
           [ids(b.batch(s)) for s in range(1, b.total_steps + 1)]
    assert ids(a.slow_sample(2)) == ids(b.slow_sample(2))
    assert a.step_seed(5) == b.step_seed(5) and a.step_seed(5) != a.step_seed(6)


def test_max_steps_per_epoch_caps_and_batches_stay_disjoint():
    p = plan(None, "batch_size=3", "max_steps_per_epoch=2", "num_epochs=2")
    assert p.steps_per_epoch == 2 and p.total_steps == 4
    first = ids(p.batch(1)) + ids(p.batch(2))
    assert len(first) == len(set(first)) == 6
    assert p.epoch_of(3) == 2


def test_selection_and_test_caps():
    task = FakeTask(n_selection=20, n_test=30)
    full = plan(task)
    assert len(full.selection) == 20 and len(full.test) == 30  # 0 = whole split
    capped = plan(task, "selection_size=7", "test_size=11")
    assert len(capped.selection) == 7 and len(capped.test) == 11
    assert set(ids(capped.selection)) <= set(ids(task.split("selection")))
    assert ids(capped.selection) == sorted(ids(capped.selection))  # file order kept: stable plots
    assert ids(capped.selection) == ids(plan(task, "selection_size=7").selection)  # deterministic
    assert ids(capped.selection) != ids(plan(task, "selection_size=7", "seed=1").selection)
    assert len(plan(task, "selection_size=99").selection) == 20  # a cap above the size is the whole split


def test_rolled_is_the_batches_after_a_step_up_to_another_each_item_once():
    p = plan(None, "batch_size=4", "num_epochs=2")  # 10 items: 3 steps an epoch
    assert ids(p.rolled(0, 2)) == ids(p.batch(1)) + ids(p.batch(2))
    assert ids(p.rolled(1, 2)) == ids(p.batch(2)) and p.rolled(2, 2) == ()
    across = ids(p.rolled(2, 4))  # the last batch of epoch 1 and the first of epoch 2 may share items
    assert len(across) == len(set(across)) and set(across) == set(ids(p.batch(3))) | set(ids(p.batch(4)))
    assert set(ids(p.rolled(0, 6))) == set(ids(p.train))


def test_slow_sample_is_distinct_train_items():
    p = plan(FakeTask(n_train=30), "slow_update_samples=12")
    sample = ids(p.slow_sample(2))
    assert len(sample) == len(set(sample)) == 12 and set(sample) <= set(ids(p.train))
    assert sample != ids(p.slow_sample(3))
    assert len(plan(FakeTask(n_train=5), "slow_update_samples=12").slow_sample(2)) == 5


def test_all_items_and_empty_split():
    p = plan()
    assert len(p.all_items()) == 10 + 6 + 8
    with pytest.raises(TaskError, match="fake: the selection split is empty"):
        plan(FakeTask(n_selection=0))


# ---- call forecast ------------------------------------------------------------------------

def test_max_reflections_bounds_the_minibatch_packing():
    from skillopt.minibatch import make_minibatches
    from skillopt.tasks.task import Evaluation, Trajectory

    def trajs(labels, hard):
        return [Trajectory(f"i{n}", "p", "o", label, Evaluation(hard(n), 0.0, "")) for n, label in enumerate(labels)]

    # Three answers with 5 failures each, in minibatches of 8: one minibatch per answer,
    # more than ceil(15 / 8), so the bound has to allow for the grouping.
    grouped = trajs([f"l{n // 5}" for n in range(15)], lambda n: 0.0)
    assert len(make_minibatches(grouped, 8, seed=1)) == 3 == max_reflections(15, 8, failure_only=True)
    mixed = trajs([f"l{n % 11}" for n in range(40)], lambda n: float(n % 2))
    for cases, failure_only in ((grouped, False), (mixed, False), (mixed, True)):
        made = make_minibatches(cases, 8, seed=1, failure_only=failure_only)
        assert len(made) <= max_reflections(len(cases), 8, failure_only)
    assert max_reflections(15, 8) == 4 and max_reflections(3, 8) == 2
    assert max_reflections(1, 8) == 1 and max_reflections(0, 8) == 0


def test_call_forecast_follows_the_trainer_stage_by_stage():
    # 10 train items in batches of 4 (4, 4, 2), 6 selection and 8 test items.
    strict = ("batch_size=4", "num_epochs=3", "minibatch_size=2", "slow_update_samples=5", "use_cache=false",
              "gate_mode=strict")
    p = plan(None, *strict)
    f = p.call_forecast(sim_config(*strict))
    assert p.batch_sizes() == [4, 4, 2]
    # Seed scoring (the seed and no skill) + one strict gate per step (the candidate only); two
    # slow updates, each comparing both epochs' skills on 5 items and gating the new guidance;
    # four tests (the seed, best and final skills and no skill).
    # A trial may be gated after each of the 9 steps: a paired gate, which without the cache
    # scores the incumbent again, and scores the candidate on the 10 train items too (a
    # worked-examples trial judged alone, a seed ablation: fair items).
    assert f.target == {"gate": 2 * 6 + 9 * 6, "examples": 9 * (2 * 6 + 10), "rollout": 3 * 10,
                        "slow_update": 2 * (2 * 5 + 6), "test": 4 * 8}
    selection_only = sim_config(*strict, "trial_train_items=false", "seed_ablations=0")
    assert plan(None, *strict).call_forecast(selection_only).target["examples"] == 9 * 2 * 6
    ablations_only = sim_config(*strict, "worked_examples=false", "clue_rules=false")
    assert plan(None, *strict).call_forecast(ablations_only).target["examples"] == 9 * (2 * 6 + 10)
    off = sim_config(*strict, "worked_examples=false", "clue_rules=false", "seed_ablations=0")
    assert plan(None, *strict).call_forecast(off).target["examples"] == 0
    reflect = 3 * (max_reflections(4, 2) + max_reflections(4, 2) + max_reflections(2, 2))
    assert f.optimizer == {"reflect": reflect, "merge": 0, "lr": 0, "slow_update": 2, "meta": 2}
    assert f.target_calls == sum(f.target.values()) and f.optimizer_calls == 2 * f.optimizer_questions

    options = ("batch_size=4", "num_epochs=3", "minibatch_size=2", "gate_mode=paired", "merge_mode=llm",
               "lr_scheduler=autonomous", "use_meta_skill=false", "slow_update_gate=false")
    f = plan(None, *options).call_forecast(sim_config(*options))
    # The paired gate evaluates the incumbent too; the cache's speculative rollouts may roll
    # out an epoch's later batches twice; merge and edit-budget questions once a step.
    assert f.target["gate"] == 2 * 6 + 9 * 12 and f.target["rollout"] == 3 * (10 + 4 + 2)
    assert f.target["examples"] == 9 * (6 + 10)  # the incumbent's values are cached
    assert f.target["slow_update"] == 2 * 2 * 10  # slow_update_samples (20) capped at the 10 train items
    assert (f.optimizer["merge"], f.optimizer["lr"], f.optimizer["meta"]) == (9, 9, 0)

    # The paired gate on the guidance also scores the candidate on the 5 train items outside
    # the sample (their incumbent values are cached).
    fair = ("batch_size=4", "num_epochs=3", "minibatch_size=2", "slow_update_samples=5")
    assert plan(None, *fair).call_forecast(sim_config(*fair)).target["slow_update"] == 2 * (2 * 5 + 2 * 6 + 5)
    off = (*fair, "slow_train_items=false")
    assert plan(None, *off).call_forecast(sim_config(*off)).target["slow_update"] == 2 * (2 * 5 + 2 * 6)


def _calls_by_stage(r, run_id: str) -> tuple[dict, dict]:
    """(role, stage) -> real calls, and -> calls whose reply was asked again (a repair)."""
    calls = {(u["role"], u["stage"]): u["calls"] - (u["cache_hits"] or 0) for u in r.usage_by_stage(run_id)}
    repaired: dict = {}
    for c in r.call_faults(run_id, limit=100_000):
        if "(repair asked)" in c["note"]:
            repaired[(c["role"], c["stage"])] = repaired.get((c["role"], c["stage"]), 0) + 1
    return calls, repaired


@pytest.mark.parametrize("overrides", [
    ("num_epochs=1", "use_cache=false", "gate_mode=strict"),
    ("num_epochs=2", "use_cache=false", "merge_mode=llm", "lr_scheduler=autonomous", "gate_mode=strict"),
])
def test_call_forecast_bounds_a_real_run(tmp_path, overrides):
    """Without the cache and with the strict gate nothing stops early: the target's calls are
    exact but for the gates that did not run (a step or slow update without a candidate);
    the optimizer's depend on the replies and stay within the bound."""
    from skillopt.store.reader import Reader
    from skillopt.tasks.loader import load_task
    from tests.helpers import run_sim

    db = tmp_path / "skillopt.db"
    run_id = run_sim(db, *overrides)
    config = sim_config(*overrides)
    p = Plan.make(load_task("sim-rulebook"), config)
    forecast = p.call_forecast(config)
    r = Reader(db)
    try:
        assert r.run(run_id)["status"] == "completed"
        calls, repaired = _calls_by_stage(r, run_id)
        usage = r.usage(run_id)
        skipped = sum(s["decision"] == "skip" for s in r.steps(run_id))
        trials = [g for g in r.gate_decisions(run_id) if g["kind"] == "examples"]
        slow_gated = sum(g["kind"] == "slow_update" for g in r.gate_decisions(run_id))
        slow_runs = len(r.slow_updates(run_id))
    finally:
        r.close()
    n_sel = len(p.selection)
    target = {stage: calls.get(("target", stage), 0) for stage in forecast.target}
    assert target["rollout"] == forecast.target["rollout"]
    assert target["test"] == forecast.target["test"]
    # Each trial's paired gate scores the incumbent again (no cache) and the candidate until it
    # stops, on fair train items too; the forecast counts a full one after every step.
    n_train = len(p.train)
    assert forecast.target["examples"] == p.total_steps * examples_gate_calls(config, n_sel, n_train) \
        == p.total_steps * (2 * n_sel + n_train)
    assert target["examples"] == sum(n_sel + g["n_evaluated"] for g in trials) <= forecast.target["examples"]
    assert target["gate"] == forecast.target["gate"] - skipped * n_sel
    assert slow_runs == config.num_epochs - 1
    assert target["slow_update"] == forecast.target["slow_update"] - (slow_runs - slow_gated) * n_sel
    assert usage["target_calls"] == sum(target.values()) <= forecast.target_calls
    for stage, bound in forecast.optimizer.items():
        questions = calls.get(("optimizer", stage), 0) - repaired.get(("optimizer", stage), 0)
        exact = stage in ("slow_update", "meta")  # once per epoch end from the second on
        assert questions == bound if exact else questions <= bound, stage
    assert forecast.optimizer["reflect"] > 0 and calls[("optimizer", "reflect")] > 0
    assert usage["optimizer_calls"] <= forecast.optimizer_calls

"""The gate run for real (skillopt/validation.py): a paired comparison that also counts train
items (a trial's fair items) decides on all of them, and reports the selection split."""
from __future__ import annotations

from types import SimpleNamespace

from skillopt import events as ev
from skillopt.config import load_config
from skillopt.rollout import Batch
from skillopt.tasks.task import Evaluation, Item, Trajectory
from skillopt.validation import Validator

SELECTION = tuple(Item(i, {}, "x", "selection") for i in ("s1", "s2", "s3", "s4"))
TRAIN = tuple(Item(i, {}, "x", "train") for i in ("t1", "t2", "t3", "t4", "t5"))
# The incumbent fails s1, s2, t1, t2, t3 and passes the rest; the candidate fixes s1 and all
# three train failures and breaks nothing: 1-0 on the selection split, 4-0 with the train items.
CURRENT = {"s1": 0, "s2": 0, "s3": 1, "s4": 1, "t1": 0, "t2": 0, "t3": 0, "t4": 1, "t5": 1}
CANDIDATE = {**CURRENT, "s1": 1, "t1": 1, "t2": 1, "t3": 1}


def traj(item_id: str, hard: float) -> Trajectory:
    return Trajectory(item_id, "p", "out", "x", Evaluation(hard, hard, ""))


class Stub:
    """The trainer's evaluate() and the Evaluator's one(): fixed results per skill."""

    def __init__(self):
        self.asked = []

    def __call__(self, skill, items, *, step, split, purpose, stage):
        return Batch(tuple(traj(it.id, CURRENT[it.id]) for it in items), (False,) * len(items))

    def one(self, skill, item, *, step, stage):
        self.asked.append(item.id)
        return traj(item.id, CANDIDATE[item.id]), False


def gated(extra_ids: tuple[str, ...]):
    config = load_config(None, ["gate_mode=paired", "gate_metric=hard", "gate_alpha=0.2"])
    plan = SimpleNamespace(selection=SELECTION, train=TRAIN, step_seed=lambda s: 1)
    stub, events = Stub(), []
    v = Validator(config, plan, evaluator=stub, evaluate=stub, emit=events.append, run_id="r")
    result = v.run(3, "cur", "cand", {}, "examples", extra=tuple(traj(i, CURRENT[i]) for i in extra_ids))
    return result, events, stub


def test_train_items_join_the_decision_and_the_scores_stay_the_selection_splits():
    alone, _, _ = gated(())
    # On the selection split alone even 2-0 (p = 0.25) could not pass at 0.2: rejected unevaluated.
    assert not alone.decision.accept and alone.decision.n_evaluated == 0

    result, events, stub = gated(("t1", "t2", "t3", "t4", "t5"))
    d = result.decision
    assert d.accept and (d.wins, d.losses) == (4, 0)  # p = 1/16
    assert "on the 4 selection items and 5 train items the change was not made from" in d.reason
    assert (d.current_score, d.candidate_score) == (0.5, 0.75)  # the selection split's, not the union's
    assert {i for i, _ in result.candidate_values} <= {"s1", "s2", "s3", "s4"}
    assert {i for i, _, _ in result.flipped} == {"s1", "t1", "t2", "t3"}
    done = {e.split: {t.item_id for t in e.trajectories} for e in events if isinstance(e, ev.RolloutsDone)}
    assert set(done) == {"selection", "train"}
    assert done["train"] <= {"t1", "t2", "t3", "t4", "t5"} and done["selection"] <= {"s1", "s2", "s3", "s4"}
    assert {"t1", "t2", "t3"} <= set(stub.asked)


def test_an_extra_item_of_the_selection_split_or_errored_is_not_counted_twice():
    errored = Trajectory("t1", "p", "", "x", Evaluation(0, 0, ""), error="timeout")
    config = load_config(None, ["gate_mode=paired", "gate_metric=hard", "gate_alpha=0.2"])
    plan = SimpleNamespace(selection=SELECTION, train=TRAIN, step_seed=lambda s: 1)
    stub = Stub()
    v = Validator(config, plan, evaluator=stub, evaluate=stub, emit=lambda e: None, run_id="r")
    d = v.run(3, "cur", "cand", {}, "examples", extra=(errored, traj("s1", 0), traj("t2", 0))).decision
    assert "on the 4 selection items and 1 train items" in d.reason
    assert "t1" not in stub.asked

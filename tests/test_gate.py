import math
import random

import pytest

from skillopt.gate import (GateDecision, PairedGate, Prior, mean_score, metric_value, order_items, paired,
                           sign_test_p, strict)


@pytest.mark.parametrize("hard, soft, metric, w, expected", [
    (1.0, 0.3, "hard", 0.5, 1.0),
    (0.0, 0.7, "soft", 0.5, 0.7),
    (1.0, 0.0, "mixed", 0.5, 0.5),
    (0.0, 1.0, "mixed", 0.25, 0.25),
    (1.0, 1.0, "mixed", 0.9, 1.0),
])
def test_metric_value(hard, soft, metric, w, expected):
    assert metric_value(hard, soft, metric, w) == pytest.approx(expected)


def test_metric_value_rejects_unknown_metric():
    with pytest.raises(ValueError, match="unknown gate metric"):
        metric_value(1, 1, "f1", 0.5)
    with pytest.raises(ValueError, match="resolved by RunConfig.for_task"):
        metric_value(1, 1, "auto", 0.5)  # a run resolves "auto" before it scores anything


@pytest.mark.parametrize("w", [0.1, 0.3, 0.5, 0.7, 0.9, 1 / 3])
def test_mixed_is_exactly_hard_on_an_all_or_nothing_item(w):
    # exact, not approximate: the "auto" metric promises the same decisions as hard on such items
    assert metric_value(1.0, 1.0, "mixed", w) == 1.0 and metric_value(0.0, 0.0, "mixed", w) == 0.0


@pytest.mark.parametrize("pairs, metric, expected", [
    ([(1, 0.5), (0, 0.5), (1, 1.0)], "hard", 2 / 3),
    ([(1, 0.5), (0, 0.5), (1, 1.0)], "soft", 2 / 3),
    ([(1, 0.0), (0, 1.0)], "mixed", 0.5),
    ([], "hard", 0.0),
])
def test_mean_score(pairs, metric, expected):
    assert mean_score(pairs, metric, 0.5) == pytest.approx(expected)


@pytest.mark.parametrize("current, candidate, accept, word", [
    (0.5, 0.6, True, ">"),
    (0.6, 0.6, False, "tie"),
    (0.6, 0.6 + 1e-15, False, "tie"),  # float noise is a tie, and ties reject
    (0.6, 0.5, False, "<"),
    (0.0, 1 / 40, True, ">"),
])
def test_strict(current, candidate, accept, word):
    d = strict(current, candidate, 40)
    assert isinstance(d, GateDecision)
    assert d.accept is accept and word in d.reason
    assert (d.n_items, d.n_evaluated, d.p_value, d.early_stop) == (40, 40, None, False)
    assert d.margin == pytest.approx(candidate - current)


@pytest.mark.parametrize("wins, losses, expected", [
    (0, 0, 1.0),
    (1, 0, 0.5),
    (5, 0, 1 / 32),
    (3, 3, 42 / 64),
    (0, 4, 1.0),
    (8, 2, 56 / 1024),
])
def test_sign_test_p(wins, losses, expected):
    assert sign_test_p(wins, losses) == pytest.approx(expected)


def test_sign_test_p_is_exact_for_large_n():
    assert sign_test_p(600, 400) == pytest.approx(1.3e-10, rel=0.1)
    assert 0.5 < sign_test_p(500, 500) < 0.52


def test_order_items_is_a_deterministic_seeded_permutation():
    ids = [f"item-{i}" for i in range(50)]
    a = order_items(ids, 42)
    assert sorted(a) == sorted(ids)
    assert a == order_items(list(reversed(ids)), 42)
    assert a != order_items(ids, 43)
    subset = set(ids[:20])
    assert order_items(subset, 42) == tuple(i for i in a if i in subset)


INC = {"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0, "e": 0.0}


@pytest.mark.parametrize("cand, min_delta, alpha, accept, wins, losses", [
    ({"a": 1, "b": 1, "c": 1, "d": 1, "e": 0}, 0.0, 0.5, True, 2, 0),
    ({"a": 0, "b": 0, "c": 1, "d": 1, "e": 0}, 0.0, 0.5, False, 0, 0),  # identical: a tie rejects
    ({"a": 1, "b": 0, "c": 0, "d": 1, "e": 0}, 0.0, 0.5, False, 1, 1),  # net zero
    ({"a": 1, "b": 1, "c": 0, "d": 1, "e": 0}, 0.0, 0.5, True, 2, 1),  # net +1, p = 0.5
    ({"a": 1, "b": 1, "c": 0, "d": 1, "e": 0}, 0.0, 0.25, False, 2, 1),  # same, stricter alpha
    ({"a": 1, "b": 1, "c": 1, "d": 1, "e": 0}, 0.5, 0.5, False, 2, 0),  # gain 0.4 < min_delta 0.5
    ({"a": 1, "b": 1, "c": 1, "d": 1, "e": 0}, 0.4, 0.5, True, 2, 0),  # gain 0.4 >= 0.4
])
def test_paired_full_rule(cand, min_delta, alpha, accept, wins, losses):
    d = paired(INC, cand, list(INC), min_delta, alpha)
    assert (d.accept, d.wins, d.losses, d.n_evaluated, d.early_stop) == (accept, wins, losses, 5, False)
    assert d.p_value == pytest.approx(sign_test_p(wins, losses))
    assert d.margin == pytest.approx(sum(cand.values()) / 5 - 0.4)


def test_paired_gate_early_reject_saves_items():
    inc = {str(i): 1.0 for i in range(10)}  # incumbent already perfect: the candidate can only tie or lose
    gate = PairedGate(inc, list(inc))
    assert gate.done  # nothing can be won: decided before any call
    d = gate.decision()
    assert (d.accept, d.early_stop, d.n_evaluated) == (False, True, 0)
    assert "early reject" in d.reason


def test_paired_gate_early_reject_after_losses():
    inc = {str(i): 0.5 for i in range(6)}
    gate = PairedGate(inc, list(inc), min_delta=0.2)
    gate = gate.observe("0", 0.0)
    assert not gate.done  # best case: (-0.5 + 5 * 0.5) / 6 = 0.33 >= 0.2 and p(5, 1) = 0.11
    gate = gate.observe("1", 0.0)
    # best case now: (-1.0 + 4 * 0.5) / 6 = 0.17 < 0.2, whatever the other 4 items do
    assert gate.done and gate.n_evaluated == 2 and gate.remaining == ("2", "3", "4", "5")
    d = gate.decision()
    assert not d.accept and d.early_stop and d.losses == 2
    assert (d.current_score, d.candidate_score, d.margin) == (0.5, 0.0, -0.5)


def test_paired_gate_early_accept():
    inc = {str(i): 0.0 for i in range(10)}
    gate = PairedGate(inc, list(inc), alpha=0.05)
    for n, i in enumerate(inc, 1):
        gate = gate.observe(i, 1.0)
        if gate.done:
            break
    assert n == 5  # 5 wins: p = 1/32 <= 0.05, and the others can only tie
    d = gate.decision()
    assert d.accept and d.early_stop and d.wins == 5 and d.n_items == 10
    assert "early accept" in d.reason


def test_paired_gate_is_immutable_and_checks_items():
    gate = PairedGate({"a": 0.0, "b": 1.0}, ["a", "b"])
    after = gate.observe("a", 1.0)
    assert gate.n_evaluated == 0 and after.n_evaluated == 1
    assert after.remaining == ("b",)
    with pytest.raises(ValueError):
        after.observe("a", 1.0)
    with pytest.raises(ValueError):
        gate.observe("zzz", 1.0)
    with pytest.raises(ValueError):
        PairedGate({"a": 0.0}, ["a", "b"])


def test_undecided_gate_rejects_as_incomplete():
    gate = PairedGate({str(i): 0.5 for i in range(4)}, [str(i) for i in range(4)]).observe("0", 1.0)
    assert not gate.done
    d = gate.decision()
    assert not d.accept and "incomplete" in d.reason


def test_empty_gate_rejects():
    d = PairedGate({}, []).decision()
    assert not d.accept and d.n_items == 0


def _random_instance(rng: random.Random):
    n = rng.randint(1, 25)
    kind = rng.choice(["hard", "soft", "mixed"])

    def value():
        if kind == "hard":
            return float(rng.random() < 0.5)
        if kind == "soft":
            return rng.choice([0.0, 1.0, rng.random(), round(rng.random(), 1)])
        return 0.5 * float(rng.random() < 0.5) + 0.5 * round(rng.random(), 2)

    ids = [f"i{k}" for k in range(n)]
    inc = {i: value() for i in ids}
    skill = rng.random()  # how much better or worse the candidate tends to be
    cand = {i: (value() if rng.random() > skill else max(inc[i], value())) for i in ids}
    min_delta = rng.choice([0.0, 0.0, 0.05, 0.1, 0.3])
    alpha = rng.choice([0.5, 0.25, 0.1, 0.05, 1.0])
    return ids, inc, cand, min_delta, alpha


def test_sequential_gate_matches_full_evaluation_whenever_it_stops_early():
    rng = random.Random(20240601)
    early = {True: 0, False: 0}
    for _ in range(3000):
        ids, inc, cand, min_delta, alpha = _random_instance(rng)
        full = paired(inc, cand, ids, min_delta, alpha)
        gate = PairedGate(inc, order_items(ids, rng.randint(0, 10**6)), min_delta, alpha)
        for item in gate.items:
            if gate.done:
                break
            gate = gate.observe(item, cand[item])
        assert gate.done
        d = gate.decision()
        assert d.accept == full.accept, (ids, inc, cand, min_delta, alpha, d.reason)
        if d.early_stop:
            early[d.accept] += 1
            assert d.n_evaluated < len(ids)
        else:
            assert d.n_evaluated == len(ids)
            assert (d.wins, d.losses) == (full.wins, full.losses)
            assert math.isclose(d.candidate_score, full.candidate_score)
    # the property must have been exercised in both directions, not vacuously
    assert early[True] > 50 and early[False] > 50


def test_a_gate_with_a_prior_decides_the_pooled_test_too_and_still_matches_full_evaluation():
    rng = random.Random(7)
    early, vetoed = 0, 0
    for _ in range(2000):
        ids, inc, cand, min_delta, alpha = _random_instance(rng)
        prior = Prior(rng.randint(0, 8), rng.randint(0, 8), rng.choice([0.05, 0.2, 0.5]))
        full = paired(inc, cand, ids, min_delta, alpha, prior=prior)
        alone = paired(inc, cand, ids, min_delta, alpha)
        assert full.accept == (alone.accept and prior.passes(alone.wins, alone.losses))
        vetoed += alone.accept and not full.accept
        gate = PairedGate(inc, order_items(ids, rng.randint(0, 10**6)), min_delta, alpha, prior=prior)
        for item in gate.items:
            if gate.done:
                break
            gate = gate.observe(item, cand[item])
        d = gate.decision()
        assert d.accept == full.accept, (ids, inc, cand, min_delta, alpha, prior, d.reason)
        early += d.early_stop
    assert vetoed > 50 and early > 100


def test_against_an_incumbent_that_fails_everything_a_prior_keeps_the_gate_counting_wins():
    ids = [f"i{k}" for k in range(10)]
    inc = dict.fromkeys(ids, 0.0)
    alone = PairedGate(inc, ids).observe("i0", 1.0)
    assert alone.done and alone.decision().accept and alone.decision().wins == 1  # its own rule: one win
    gate = PairedGate(inc, ids, prior=Prior(0, 0, alpha=0.05))
    for k, item in enumerate(ids):
        if gate.done:
            break
        gate = gate.observe(item, 1.0)
    d = gate.decision()
    # 5 wins and no loss: p = 1/32 <= 0.05; 4 wins (p = 1/16) would not have done
    assert d.accept and d.early_stop and (d.wins, d.losses) == (5, 0)
    hopeless = PairedGate(inc, ids[:3], prior=Prior(0, 6, alpha=0.2))
    assert hopeless.done and not hopeless.decision().accept  # 3 more wins cannot outweigh 6 losses
    assert "pooled test of 0 earlier wins / 6 losses" in hopeless.decision().reason


def test_the_gates_exact_integer_sums_round_as_math_fsum_does():
    from skillopt.gate import _exact, _rounded
    rng = random.Random(3)
    for _ in range(3000):
        xs = [rng.choice([rng.random(), -rng.random(), 1e-300 * rng.random(), 5e-324, 0.1, -0.7, 1.0, 0.0])
              for _ in range(rng.randint(1, 60))]
        assert _rounded(sum(map(_exact, xs))) == math.fsum(xs), xs
    assert _rounded(_exact(1e16) + _exact(1.0) + _exact(-1e16)) == 1.0 != 1e16 + 1.0 - 1e16  # not naive summation

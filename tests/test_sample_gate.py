"""The gate under sampling noise: a difference within the noise of the samples is a tie, never
a win (strict, paired and sequential gates, and the Validator that calls them), while with one
sample per item the published rules are unchanged."""
from __future__ import annotations

from skillopt import gate, spread
from skillopt.validation import Validator, Values
from tests.helpers import sim_config


# ---- one sample per item: nothing changes ------------------------------------------------

def test_one_sample_gate_rules_are_the_published_ones():
    assert gate.strict(0.5, 0.5 + 1e-3, 10) == gate.strict(0.5, 0.5 + 1e-3, 10, noise=0.0)
    assert gate.strict(0.5, 0.5 + 1e-3, 10).accept
    inc, cand = {"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 1.0}
    assert gate.paired(inc, cand, ["a", "b"]) == gate.paired(inc, cand, ["a", "b"], incumbent_var={},
                                                             candidate_var={"a": 0.0})


# ---- the gate: within-noise differences are ties ----------------------------------------

def test_strict_gate_ties_a_margin_within_the_noise_of_the_difference():
    d = gate.strict(0.50, 0.55, 20, noise=0.08)
    assert not d.accept and "within sampling noise" in d.reason and "tie" in d.reason
    assert gate.strict(0.50, 0.55, 20, noise=0.04).accept
    assert not gate.strict(0.55, 0.50, 20, noise=0.08).accept


def test_paired_gate_counts_an_item_only_beyond_its_noise():
    inc, cand = {"a": 1 / 3, "b": 0.0}, {"a": 2 / 3, "b": 1.0}
    var = spread.mean_variance([1.0, 0.0, 0.0])  # 1 of 3 samples right: the mean's variance
    noisy = gate.paired(inc, cand, ["a", "b"], alpha=1.0, incumbent_var={"a": var, "b": 0.0},
                        candidate_var={"a": spread.mean_variance([1.0, 1.0, 0.0]), "b": 0.0})
    assert (noisy.wins, noisy.losses) == (1, 0)  # "a" moved by 1/3, within its noise: a tie
    assert (gate.paired(inc, cand, ["a", "b"], alpha=1.0).wins) == 2  # without samples it is a win
    lone = gate.paired({"a": 1 / 3}, {"a": 2 / 3}, ["a"], incumbent_var={"a": var}, candidate_var={"a": var})
    assert not lone.accept and lone.wins == 0  # a gain made of noise alone is rejected
    assert gate.paired({"a": 1 / 3}, {"a": 2 / 3}, ["a"]).accept  # taken once, the same gain is a win


def test_sequential_gate_stays_exact_with_noise():
    import random

    rng = random.Random(7)
    for _ in range(500):
        ids = [f"i{k}" for k in range(rng.randint(1, 12))]
        thirds = [0.0, 1 / 3, 2 / 3, 1.0]
        inc, cand = {i: rng.choice(thirds) for i in ids}, {i: rng.choice(thirds) for i in ids}
        var = {i: spread.mean_variance([1.0] * round(v * 3) + [0.0] * (3 - round(v * 3))) for i, v in inc.items()}
        cvar = {i: spread.mean_variance([1.0] * round(v * 3) + [0.0] * (3 - round(v * 3))) for i, v in cand.items()}
        min_delta, alpha = rng.choice([0.0, 0.1]), rng.choice([1.0, 0.5, 0.25])
        full = gate.paired(inc, cand, ids, min_delta, alpha, incumbent_var=var, candidate_var=cvar)
        g = gate.PairedGate(inc, gate.order_items(ids, rng.randint(0, 99)), min_delta, alpha, variances=var)
        for i in g.items:
            if g.done:
                break
            g = g.observe(i, cand[i], cvar[i])
        assert g.decision().accept == full.accept


def test_the_validator_ties_a_within_noise_comparison():
    config = sim_config("samples_per_item=3", "gate_mode=strict")
    validator = Validator(config, None, None, None, lambda e: None, "r")
    var = spread.mean_variance([1.0, 0.0, 0.0])
    ids = [f"i{k}" for k in range(6)]
    incumbent = Values({i: 1 / 3 for i in ids}, {i: var for i in ids})
    candidate = Values({i: 2 / 3 if i == "i0" else 1 / 3 for i in ids}, {i: var for i in ids})
    d = validator.compare(incumbent, candidate)
    assert not d.accept and "within sampling noise" in d.reason
    lo, hi = d.candidate_ci
    assert lo <= d.candidate_score <= hi and hi - lo > 0
    assert validator.compare(dict(incumbent), dict(candidate)).accept  # the same means without noise

import pytest

from skillopt.schedules import SCHEDULES, budget, clamp_autonomous, constant, cosine, linear


@pytest.mark.parametrize("name, total, expected", [
    # the published SkillOpt tables (learning_rate=4, min_learning_rate=2)
    ("cosine", 4, [4, 3, 2, 2]),
    ("cosine", 8, [4, 4, 3, 3, 3, 2, 2, 2]),
    ("linear", 4, [4, 3, 2, 2]),
    ("constant", 4, [4, 4, 4, 4]),
    ("constant", 8, [4] * 8),
    ("autonomous", 4, [4, 3, 2, 2]),  # the scheduled fallback of autonomous is cosine
    ("cosine", 1, [4]),  # one step: the full learning rate, nothing to decay over
    ("linear", 1, [4]),
    ("autonomous", 1, [4]),
])
def test_published_tables(name, total, expected):
    assert [budget(name, step, total, 4, 2) for step in range(total)] == expected


def test_registry_holds_the_three_schedules():
    assert SCHEDULES == {"cosine": cosine, "linear": linear, "constant": constant}


@pytest.mark.parametrize("name", ["cosine", "linear", "constant"])
@pytest.mark.parametrize("lr, min_lr", [(4, 2), (8, 1), (3, 3), (1, 1), (10, 0)])
def test_values_stay_in_range_and_never_increase(name, lr, min_lr):
    values = [budget(name, s, 12, lr, min_lr) for s in range(12)]
    assert all(min_lr <= v <= lr for v in values)
    assert values == sorted(values, reverse=True)
    assert values[-1] == (lr if name == "constant" else min_lr)  # the last step reaches the floor


def test_steps_past_the_end_stay_at_the_floor():
    assert budget("cosine", 9, 4, 4, 2) == 2
    assert budget("linear", 100, 4, 4, 2) == 2


@pytest.mark.parametrize("args", [
    ("cosine", -1, 4, 4, 2),
    ("cosine", 0, 0, 4, 2),
    ("cosine", 0, 4, 2, 4),
    ("warmup", 0, 4, 4, 2),
])
def test_bad_arguments(args):
    with pytest.raises(ValueError):
        budget(*args)


@pytest.mark.parametrize("answer, scheduled, lr, min_lr, pool, expected", [
    (None, 3, 4, 2, 10, 3),  # unparseable -> the scheduled value, not zero
    (3, 4, 4, 2, 10, 3),
    (9, 4, 4, 2, 10, 4),  # above lr
    (0, 4, 4, 2, 10, 2),  # below min_lr
    (-5, 4, 4, 2, 10, 2),
    (4, 4, 4, 2, 1, 1),  # pool smaller than the floor
    (4, 4, 4, 2, 0, 0),  # nothing to select
    (2, 2, 4, 2, 3, 2),
])
def test_clamp_autonomous(answer, scheduled, lr, min_lr, pool, expected):
    assert clamp_autonomous(answer, scheduled, lr, min_lr, pool) == expected

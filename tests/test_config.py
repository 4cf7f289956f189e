import pytest

from skillopt.config import FIELD_NAMES, RunConfig, field_help, load_config, parse_override
from skillopt.errors import ConfigError


def test_reference_defaults():
    c = RunConfig()
    assert (c.num_epochs, c.batch_size, c.minibatch_size, c.analyst_workers) == (4, 40, 8, 16)
    assert (c.learning_rate, c.min_learning_rate, c.lr_scheduler) == (4, 2, "cosine")
    # paired: the published strict rule's decisions at these defaults, in fewer calls
    assert (c.use_gate, c.gate_mode, c.gate_metric, c.gate_mixed_weight) == (True, "paired", "auto", 0.5)
    assert (c.use_slow_update, c.slow_update_samples, c.slow_update_gate, c.use_meta_skill) == (True, 20, True, True)
    assert (c.failure_only, c.rejected_buffer_scope, c.approval_mode, c.seed) == (False, "epoch", False, 42)
    assert (c.selection_size, c.test_size) == (0, 0)


def test_every_field_has_a_why_comment():
    helps = field_help()
    assert set(helps) == set(FIELD_NAMES)
    assert all(len(h) > 10 for h in helps.values())


@pytest.mark.parametrize("text,key,value", [
    ("num_epochs=2", "num_epochs", 2),
    ("use_gate=false", "use_gate", False),
    ("gate_alpha=0.1", "gate_alpha", 0.1),
    ("target_model=sim/target", "target_model", "sim/target"),
    ("max_cost_usd=3", "max_cost_usd", 3.0),
])
def test_overrides_are_typed_by_the_field(text, key, value):
    assert parse_override(text) == (key, value)
    assert getattr(load_config(None, [text]), key) == value


@pytest.mark.parametrize("overrides,message", [
    (["nope=1"], "unknown config key 'nope'"),
    (["num_epochs=two"], "must be int"),
    (["use_gate=maybe"], "must be bool"),
    (["lr_scheduler=sawtooth"], "must be one of"),
    (["batch_size=0"], "at least 1"),
    (["gate_mixed_weight=1.5"], "between 0 and 1"),
    (["learning_rate=2", "min_learning_rate=3"], "contradict"),
    (["target_api_key_env=sk-abc123-def"], "environment variable"),
    (["num_epochs"], "key=value"),
])
def test_bad_overrides_are_one_line_errors(overrides, message):
    with pytest.raises(ConfigError) as info:
        load_config(None, overrides)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_toml_and_yaml_files(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('num_epochs = 2\ngate_mode = "paired"\n')
    assert load_config(toml).gate_mode == "paired"
    yaml = tmp_path / "c.yaml"
    yaml.write_text("num_epochs: 3\nuse_gate: false\n")
    c = load_config(yaml, ["num_epochs=5"])
    assert (c.num_epochs, c.use_gate) == (5, False)


@pytest.mark.parametrize("body,message", [
    ("num_epochs = 'x'\n", "must be int"),
    ("colour = 'red'\n", "unknown config key 'colour'"),
    ("num_epochs = \n", "cannot parse"),
])
def test_bad_files_name_the_file(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="not found"):
        load_config("/nonexistent/config.toml")


def test_frozen_and_round_trip():
    c = RunConfig()
    with pytest.raises(Exception):
        c.num_epochs = 9  # type: ignore[misc]
    assert load_config(None, base=c.to_dict()) == c
    assert c.replace(num_epochs=1).num_epochs == 1


def test_simulated_flag():
    assert load_config(None, ["target_model=sim/target"]).simulated
    assert not RunConfig().simulated


class _Task:
    def __init__(self, partial: bool | None):
        if partial is not None:
            self.partial_credit = partial


@pytest.mark.parametrize("partial,metric", [(False, "hard"), (True, "mixed"), (None, "mixed")])
def test_the_auto_metric_resolves_by_whether_the_task_gives_partial_credit(partial, metric):
    # None: a plug-in task that does not say; mixed equals hard on all-or-nothing items anyway
    assert RunConfig().for_task(_Task(partial)).gate_metric == metric
    assert RunConfig(gate_metric="soft").for_task(_Task(partial)).gate_metric == "soft"  # a choice is kept
    assert RunConfig(gate_metric="hard").for_task(_Task(partial)) == RunConfig(gate_metric="hard")

"""The run preflight (skillopt/preflight.py): unknown providers and simulated models on a real
task are refused, with one line, before runner.start writes anything."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skillopt import runner
from skillopt.config import RunConfig
from skillopt.errors import TaskError, UserError
from skillopt.models.providers import HandlerResult, register_provider
from skillopt.preflight import run_models, run_problem
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.tasks.loader import BUILTIN_DIR, load_task, validate_task
from tests.helpers import sim_config

REAL = load_task("ticket-routing")
SIM_TASK = load_task("sim-rulebook")


def config(**models: str) -> RunConfig:
    return RunConfig(**{"target_model": "openai/gpt-4o-mini", "optimizer_model": "openai/gpt-4o-mini", **models})


def test_only_the_simulated_builtin_task_declares_itself_simulated():
    assert SIM_TASK.simulated is True
    assert [t for t in ("ticket-routing", "invoice-extraction", "word-problems") if load_task(t).simulated] == []


@pytest.mark.parametrize("models, role", [
    ({"target_model": "sim/target"}, "target"),
    ({"optimizer_model": "sim/optimizer"}, "optimizer"),
    ({"judge_model": "sim/optimizer"}, "judge"),
    ({"target_model": "sim/target?timeout=0.1"}, "target"),  # fault options do not hide the prefix
])
def test_a_simulated_model_on_a_real_task_is_refused_naming_its_role(models, role):
    problem = run_problem(REAL, config(**models))
    model = models[f"{role}_model"]
    assert problem == (f"{role} model {model} is simulated, but task ticket-routing is not a simulated task (the "
                       f"simulated models know only their own world: every score would be 0); use a real model, or "
                       f"set allow_simulated_models=true to run it anyway")


def test_simulated_models_run_on_a_simulated_task_or_with_the_override():
    both = {"target_model": "sim/target", "optimizer_model": "sim/optimizer"}
    assert run_problem(SIM_TASK, config(**both)) is None
    assert run_problem(REAL, config(**both, allow_simulated_models=True)) is None
    assert run_problem(REAL, config()) is None  # real models on a real task


@pytest.mark.parametrize("models, line", [
    ({"target_model": "nosuchprovider/xyz"},
     "target model nosuchprovider/xyz: unknown provider 'nosuchprovider'; use a litellm model string such as "
     "openai/gpt-4o-mini"),
    ({"optimizer_model": "nosuchprovider/xyz"}, "optimizer model nosuchprovider/xyz: unknown provider"),
    ({"judge_model": "nosuchprovider/judge"}, "judge model nosuchprovider/judge: unknown provider"),
    ({"target_model": "no-provider-at-all"}, "target model no-provider-at-all: unknown provider"),
])
def test_an_unknown_provider_is_refused_in_one_line(models, line):
    problem = run_problem(REAL, config(**models))
    assert problem.startswith(line) and "\n" not in problem


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai/a-model-released-tomorrow", "anthropic/claude-next",
                                   "openrouter/meta-llama/llama-3-8b", "local/no-such-file", "sim/target"])
def test_model_names_are_never_checked_only_providers(model):
    assert run_problem(SIM_TASK, config(target_model=model)) is None


def test_a_registered_provider_is_known():
    register_provider("preflight_fake", lambda *a: HandlerResult("ok", 1, 1))
    assert run_problem(REAL, config(target_model="preflight_fake/m")) is None


def test_the_judge_is_checked_only_as_a_model_of_its_own():
    assert [r for r, _, _ in run_models(config())] == ["target", "optimizer"]
    assert [r for r, _, _ in run_models(config(judge_model="openai/gpt-4o-mini"))] == ["target", "optimizer"]
    assert run_models(config(judge_model="anthropic/x", optimizer_api_base="http://h/v1"))[-1] == (
        "judge", "anthropic/x", "http://h/v1")


@pytest.mark.parametrize("overrides, message", [
    (("target_model=nosuchprovider/xyz",), "unknown provider 'nosuchprovider'"),
    (("allow_simulated_models=false",), "is not a simulated task"),
])
def test_runner_start_refuses_before_anything_is_stored(tmp_path, overrides, message):
    store = Store(tmp_path / "runs.db")
    with pytest.raises(UserError, match=message):
        runner.start(store, "ticket-routing", sim_config(*overrides), run_id="refused")
    store.close()
    reader = Reader(tmp_path / "runs.db")
    assert reader.runs() == [] and reader.run("refused") is None
    assert reader.q("SELECT COUNT(*) AS n FROM llm_calls")[0]["n"] == 0
    assert not (tmp_path / "logs").exists()


def _copy_of_sim_rulebook(folder: Path, simulated_line: str) -> Path:
    shutil.copytree(BUILTIN_DIR / "sim-rulebook", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("simulated = true", simulated_line), encoding="utf-8")
    return folder


def test_a_task_folder_is_simulated_only_when_its_toml_says_so(tmp_path):
    undeclared = load_task(_copy_of_sim_rulebook(tmp_path / "copy", ""))
    assert undeclared.simulated is False
    assert "not a simulated task" in run_problem(undeclared, config(target_model="sim/target"))


def test_simulated_must_be_true_or_false(tmp_path):
    folder = _copy_of_sim_rulebook(tmp_path / "quoted", 'simulated = "yes"')
    with pytest.raises(TaskError, match="'simulated' must be true or false"):
        load_task(folder)
    problems = validate_task(folder)
    assert len(problems) == 1 and problems[0].startswith(f"{folder / 'task.toml'}:")

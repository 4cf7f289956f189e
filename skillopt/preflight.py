"""The run preflight: what would make a run pointless, refused before anything of it is written.

Two mistakes cost a whole run and used to show only at its end: a model string whose
provider prefix nobody routes (the run was created, then failed on its first call with
litellm's multi-line message), and a simulated model (sim/...) on a task that is not
simulated (the simulated models only understand their own world, so every score was 0
and the run still ended "completed"). Both are refused here with one line. Only the
provider is checked, never the model name: a model released tomorrow must work.
A task declares itself simulated in its task.toml (`simulated = true`); the RunConfig
key allow_simulated_models overrides the second check.

Used by the CLI (train, eval), runner.start (through runner.prepare) and the New run
form, so all three refuse the same runs with the same words.

Public API:
    run_models(config) -> [(role, model, api_base)]
    run_problem(task, config) -> str | None
    check_run(task, config)  raises UserError(run_problem)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import UserError
from .models import llm
from .vocabulary import SIM_PREFIX

if TYPE_CHECKING:
    from .config import RunConfig


def run_models(config: "RunConfig") -> list[tuple[str, str, str]]:
    """(role, model, api_base) of each model the run calls; the judge only when it is a
    model of its own (it defaults to the optimizer), with the optimizer's endpoint as in
    llm.build_models."""
    models = [("target", config.target_model.strip(), config.target_api_base),
              ("optimizer", config.optimizer_model.strip(), config.optimizer_api_base)]
    judge = config.judge_model.strip()
    if judge and judge not in (models[0][1], models[1][1]):
        models.append(("judge", judge, config.optimizer_api_base))
    return models


def run_problem(task, config: "RunConfig") -> str | None:
    """The first reason not to start `config` on `task`, as one line; None when it may run."""
    models = run_models(config)
    for role, model, api_base in models:
        problem = llm.provider_problem(model, api_base)
        if problem is not None:
            return f"{role} model {problem}"
    if config.allow_simulated_models or getattr(task, "simulated", False):
        return None
    for role, model, _ in models:
        if model.startswith(SIM_PREFIX):
            return (f"{role} model {model} is simulated, but task {task.name} is not a simulated task (the simulated "
                    f"models know only their own world: every score would be 0); use a real model, or set "
                    f"allow_simulated_models=true to run it anyway")
    return None


def check_run(task, config: "RunConfig") -> None:
    """Raise UserError with run_problem's line, before any run row or log exists."""
    problem = run_problem(task, config)
    if problem is not None:
        raise UserError(problem)

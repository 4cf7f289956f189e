"""The logic behind the New run page: knob groups, model presets, preflight, estimate, and
where a problem is shown (beside the field it concerns); tasks and uploads in uploads.py.

Kept apart from the page (and free of streamlit) so it can be tested directly and so
the page stays a thin layout. Nothing here trains, launches or writes the store; an
imported upload becomes a task folder (through csvimport).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from skillopt import config as cfg
from skillopt.errors import UserError
from skillopt.plan import Plan

PROMPT_SAMPLE = 20  # train items whose rendered prompts give the estimate's prompt length

# Every RunConfig knob in exactly one group, in the order the form shows them.
KNOB_GROUPS: dict[str, tuple[str, ...]] = {
    "Loop": ("num_epochs", "batch_size", "minibatch_size", "analyst_workers", "max_steps_per_epoch"),
    "Learning rate": ("learning_rate", "min_learning_rate", "lr_scheduler"),
    "Aggregation": ("merge_mode", "dedupe_threshold", "fuzzy_anchor_threshold", "failure_only",
                    "check_evidence", "repair_contradicted", "minibatch_check", "worked_examples",
                    "worked_examples_alpha", "contrast_examples", "trial_train_items", "clue_rules", "seed_ablations"),
    "Gate": ("use_gate", "gate_mode", "gate_metric", "gate_mixed_weight", "gate_min_delta", "gate_alpha",
             "max_error_rate", "gate_seed_against_no_skill", "rejected_buffer_scope", "samples_per_item",
             "sample_temperature"),
    "Slow update & meta": ("use_slow_update", "slow_update_samples", "slow_update_gate", "slow_train_items",
                           "use_meta_skill"),
    "Approval": ("approval_mode", "approval_poll_s"),
    "Data": ("selection_size", "test_size", "seed"),
    "Models": ("target_model", "optimizer_model", "judge_model", "target_api_base", "optimizer_api_base",
               "target_api_key_env", "optimizer_api_key_env", "allow_simulated_models", "temperature", "max_tokens",
               "request_timeout", "max_retries"),
    "Budgets": ("max_calls", "max_cost_usd"),
    "Performance": ("max_concurrency", "use_cache", "trajectory_chars", "speculative_rollouts"),
    "Integrations": ("mlflow_tracking_uri", "mlflow_experiment", "notify"),
}

CHOICES: dict[str, tuple[str, ...]] = {
    "lr_scheduler": cfg.LR_SCHEDULERS, "merge_mode": cfg.MERGE_MODES, "gate_mode": cfg.GATE_MODES,
    "gate_metric": cfg.GATE_METRICS, "rejected_buffer_scope": cfg.BUFFER_SCOPES,
}

# The model preset owns these fields; the Models group shows only the rest.
PRESET_FIELDS = ("target_model", "optimizer_model", "target_api_base", "optimizer_api_base",
                 "target_api_key_env", "optimizer_api_key_env")


def default(name: str) -> Any:
    return cfg.DEFAULTS[name].default


def kind(name: str) -> str:
    """'bool' | 'int' | 'float' | 'str' | 'choice' — which widget a knob gets."""
    return "choice" if name in CHOICES else cfg.DEFAULTS[name].type


# ---- model presets ------------------------------------------------------------------

@dataclass(frozen=True)
class PresetInput:
    """What the person typed for a preset; each preset reads the fields it needs."""
    target: str = ""
    optimizer: str = ""
    key_env: str = ""  # NAME of the environment variable holding the key, never the key
    api_base: str = ""


@dataclass(frozen=True)
class ModelPreset:
    label: str
    help: str
    needs: tuple[str, ...]  # which PresetInput fields the form asks for
    build: Callable[[PresetInput], dict[str, str]]


def _local(p: PresetInput) -> dict[str, str]:
    model = p.target or default("target_model")
    return {"target_model": model, "optimizer_model": p.optimizer or model}


def _sim(_: PresetInput) -> dict[str, str]:
    return {"target_model": "sim/target", "optimizer_model": "sim/optimizer"}


def _api(p: PresetInput) -> dict[str, str]:
    out = {"target_model": p.target.strip(), "optimizer_model": (p.optimizer or p.target).strip()}
    if p.key_env.strip():
        out |= {"target_api_key_env": p.key_env.strip(), "optimizer_api_key_env": p.key_env.strip()}
    return out


def _server(p: PresetInput) -> dict[str, str]:
    out = _api(p)
    base = p.api_base.strip()
    return out | {"target_api_base": base, "optimizer_api_base": base}


MODEL_PRESETS: dict[str, ModelPreset] = {
    "local": ModelPreset("Embedded local model (offline)",
                         "llama.cpp model shipped through PyPI; no key, no network.", ("target",), _local),
    "sim": ModelPreset("Simulated (instant demo)",
                       "sim/target and sim/optimizer: a documented simulated world, NOT a real model.", (), _sim),
    "api": ModelPreset("API model (litellm string)",
                       "Any litellm model string, e.g. openai/gpt-4o-mini; give the NAME of the key variable.",
                       ("target", "optimizer", "key_env"), _api),
    "server": ModelPreset("OpenAI-compatible server",
                          "A self-hosted server (vLLM, llama.cpp server, Ollama…) by URL, e.g. "
                          "hosted_vllm/my-model at http://127.0.0.1:8000/v1.",
                          ("target", "optimizer", "key_env", "api_base"), _server),
}


def local_models() -> list[str]:
    from skillopt.models import local  # registers the provider; cheap (llama_cpp loads only on first use)

    return [f"local/{name}" for name in local.MODELS]


# ---- values -> config ---------------------------------------------------------------

def overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """Only what differs from RunConfig's defaults: the launch command stays short and readable."""
    return {k: v for k, v in values.items() if k in cfg.FIELD_NAMES and v != default(k)}


def build_config(values: Mapping[str, Any]) -> cfg.RunConfig:
    return cfg.load_mapping(overrides(values), origin="New run form")


# ---- preflight ----------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _model_check(role: str, model: str, key_env: str, api_base: str) -> Check:
    from skillopt.models import llm

    problem = llm.preflight(model, key_env, api_base)
    return Check(f"{role} model", problem is None, problem or f"{model} is usable")


def models_problem(task, config: cfg.RunConfig) -> str | None:
    """The run preflight's verdict on these models for this task (what the CLI and
    runner.start refuse too): shown beside the model fields and blocking the launch."""
    from skillopt.preflight import run_problem

    return run_problem(task, config)


def _key_check(field: str, name: str) -> Check:
    present = bool(os.environ.get(name))
    # Only whether it is set: the value itself is never read into the page.
    return Check(f"key variable {name}", present,
                 f"{name} is set ({field})" if present else f"{name} is not set in the dashboard's environment")


def preflight(task_ref: str, values: Mapping[str, Any], seed_skill: str | None) -> list[Check]:
    """Everything that would stop the launch, as a checklist; never raises for bad input."""
    from skillopt.skill import validate
    from skillopt.tasks.loader import load_task

    checks: list[Check] = []
    task = config = None
    try:
        task = load_task(task_ref)
        checks.append(Check("task", True, f"{task.name}: " + ", ".join(
            f"{len(task.split(s))} {s}" for s in ("train", "selection", "test"))))
    except UserError as exc:
        checks.append(Check("task", False, str(exc)))
    if seed_skill is not None:
        try:
            validate(seed_skill, origin="seed skill")
            checks.append(Check("seed skill", True, f"{len(seed_skill)} characters"))
        except UserError as exc:
            checks.append(Check("seed skill", False, str(exc)))
    try:
        config = build_config(values)
        checks.append(Check("config", True, f"{len(overrides(values))} setting(s) differ from the defaults"))
    except UserError as exc:
        checks.append(Check("config", False, str(exc)))
    if task is not None and config is not None:
        try:
            plan = Plan.make(task, config)
            checks.append(Check("plan", True, f"{plan.total_steps} steps ({plan.steps_per_epoch} per epoch × "
                                              f"{plan.num_epochs} epochs)"))
        except UserError as exc:
            checks.append(Check("plan", False, str(exc)))
        problem = models_problem(task, config)
        checks.append(Check("models for this task", problem is None,
                            problem or "every provider is known; no simulated model on a real task"))
    if config is not None:
        checks.append(_model_check("target", config.target_model, config.target_api_key_env,
                                   config.target_api_base))
        if config.optimizer_model != config.target_model or config.optimizer_api_base != config.target_api_base:
            checks.append(_model_check("optimizer", config.optimizer_model, config.optimizer_api_key_env,
                                       config.optimizer_api_base))
        if config.judge_model and config.judge_model not in (config.target_model, config.optimizer_model):
            checks.append(_model_check("judge", config.judge_model, config.optimizer_api_key_env,
                                       config.optimizer_api_base))
        for field in ("target_api_key_env", "optimizer_api_key_env"):
            name = getattr(config, field)
            if name and not (field == "optimizer_api_key_env" and name == config.target_api_key_env):
                checks.append(_key_check(field, name))
    return checks


# ---- cost and call estimate ---------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    steps: int
    target_calls: int
    optimizer_calls: int
    cost_usd: float | None  # None when a model's price is unknown
    note: str


def model_prices(model: str) -> tuple[float, float] | None:
    """USD per (prompt, completion) token from litellm's offline cost map; local/sim cost 0."""
    from skillopt.models import bridge

    return bridge.token_prices(model)


def estimate(config: cfg.RunConfig, plan: Plan, *, skill_chars: int, prompt_chars: int,
             prices: Callable[[str], tuple[float, float] | None] = model_prices) -> Estimate:
    """Upper-bound calls (Plan.call_forecast) and cost of a whole run."""
    forecast = plan.call_forecast(config)
    target, optimizer = forecast.target_calls, forecast.optimizer_calls
    note = ("upper bound, every optimizer reply counted with its repair re-ask: cached answers, skipped and "
            "early-stopping gates make fewer calls")
    if config.max_calls and target + optimizer > config.max_calls:
        note = f"the run stops at max_calls = {config.max_calls}; " + note
    # Tokens are guessed from text length (≈4 characters a token); replies at most max_tokens.
    target_in = (skill_chars + prompt_chars) / 4
    optimizer_in = (skill_chars + config.minibatch_size * config.trajectory_chars + 2000) / 4
    cost = 0.0
    for model, calls, tokens_in in ((config.target_model, target, target_in),
                                    (config.optimizer_model, optimizer, optimizer_in)):
        price = prices(model)
        if price is None:
            return Estimate(plan.total_steps, target, optimizer, None, f"no price known for {model}; " + note)
        cost += calls * (tokens_in * price[0] + config.max_tokens * price[1])
    return Estimate(plan.total_steps, target, optimizer, cost, note)


def estimate_for(task, config: cfg.RunConfig, seed_skill: str) -> Estimate:
    """The estimate of training `task` from `seed_skill`; raises TaskError for an empty split."""
    sample = task.split("train")[:PROMPT_SAMPLE]
    prompt_chars = sum(len(task.render(it)) for it in sample) // max(1, len(sample))
    return estimate(config, Plan.make(task, config), skill_chars=len(seed_skill), prompt_chars=prompt_chars)


# ---- where the form shows a problem ---------------------------------------------

def problem_of(check: Callable[[str], Any], text: str) -> str | None:
    """The one-line problem a form check raises for `text`, or None when it passes."""
    try:
        check(text)
    except UserError as exc:
        return str(exc)
    return None


def field_of(message: str) -> str | None:
    """The first config field a config error names: where the form shows it."""
    return next((w for w in re.findall(r"\w+", message) if w in cfg.FIELD_NAMES), None)


def group_of(field: str | None) -> str | None:
    return next((g for g, names in KNOB_GROUPS.items() if field in names), None)

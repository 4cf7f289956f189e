"""SkillOpt: train a skill document (Markdown prepended to an agent's prompt) like weights.

The public API, for notebooks and scripts:

    from skillopt import RunConfig, Store, Reader, train, export_run
    store = Store("runs.db")
    config = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer")
    run_id, status = train(store, "sim-rulebook", config)
    export_run(Reader("runs.db"), run_id, "out")  # best_skill.md, steps.csv, run.json

Names are imported on first use, so `import skillopt` (and the pure modules under it)
never loads SQLite, litellm or llama.cpp until a name that needs them is touched.
"""
from __future__ import annotations

import importlib
from typing import Any

# public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "RunConfig": ("skillopt.config", "RunConfig"),
    "load_config": ("skillopt.config", "load_config"),
    "load_task": ("skillopt.tasks.loader", "load_task"),
    "list_tasks": ("skillopt.tasks.loader", "list_tasks"),
    "train": ("skillopt.runner", "start"),
    "resume": ("skillopt.runner", "resume"),
    "fit": ("skillopt.trainer", "fit"),
    "Store": ("skillopt.store.writer", "Store"),
    "Reader": ("skillopt.store.reader", "Reader"),
    "export_run": ("skillopt.store.export", "export_run"),
    "run_document": ("skillopt.store.export", "run_document"),
    "Item": ("skillopt.tasks.task", "Item"),
    "Evaluation": ("skillopt.tasks.task", "Evaluation"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'skillopt' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

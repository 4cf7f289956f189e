"""User code: loading a task's own Python (evaluator functions and plug-in factories).

A task may name Python to run: `type = "python:module:fn"` (or `function =` in the
[evaluator] table) and `plugin = "module:factory"` in task.toml. Loading it is the one
place the engine executes code it did not ship, so it is kept here, apart from the
evaluators and the task reader: a module name (never a path) is resolved only in the
task folder or among already-importable modules, each file is loaded once per
(path, mtime, size), and its source digest versions the eval cache. Applying a
plug-in factory to a loaded task, the python evaluator and the coercion of whatever
a user function returns live here too, since they are the only callers of that code.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .answers import clip
from ..errors import SkillError, TaskError
from ..skill import validate as validate_skill
from .task import Evaluation, Item, TaskProtocol

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LOADED: dict[tuple[str, int, int], Any] = {}


def load_callable(spec: str, base_dir: Path | None, what: str = "function") -> tuple[Callable, str]:
    """Resolve "module:attr" from base_dir/<module>.py or an importable module.

    Only the folder the user pointed at (the task folder) or modules already on the
    import path are searched: a task file cannot make us execute an arbitrary path.
    Returns (callable, a digest of the module source for cache versioning).
    """
    module_name, _, attr = spec.partition(":")
    if not _MODULE_NAME.match(module_name) or not attr.isidentifier():
        raise TaskError(f"{what} '{spec}' must look like module:name (a module name, not a path)")
    module = None
    if base_dir is not None:
        parts = module_name.split(".")
        for candidate in (base_dir.joinpath(*parts).with_suffix(".py"), base_dir.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                module = _load_file(candidate, module_name)
                break
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            where = f"{base_dir} or " if base_dir is not None else ""
            raise TaskError(f"{what} module '{module_name}' not found in {where}the importable modules") from None
        except Exception as exc:
            raise TaskError(f"{what} module '{module_name}' failed to import: {type(exc).__name__}: {exc}") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise TaskError(f"{what} '{spec}': module '{module_name}' has no callable '{attr}'")
    source = getattr(module, "__file__", None)
    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:12] if source and Path(source).is_file() else ""
    return target, digest


def apply_plugin(task: TaskProtocol, plugin: Any, folder: Path, where: str) -> TaskProtocol:
    """What task.toml's `plugin = "module:factory"` builds around the loaded task, checked like a task.

    Raises TaskError("where: problem") when the factory cannot be loaded, raises, or
    returns no task, and the skill check's message when its own seed skill is bad.
    """
    try:
        factory, _ = load_callable(plugin if isinstance(plugin, str) else "", folder, "plugin")
        wrapped = factory(task)
    except TaskError as exc:
        raise TaskError(f"{where}: {exc}") from None
    except Exception as exc:  # user code
        raise TaskError(f"{where}: plugin factory '{plugin}' raised {type(exc).__name__}: {exc}") from None
    if not isinstance(wrapped, TaskProtocol):
        raise TaskError(f"{where}: plugin factory '{plugin}' returned {type(wrapped).__name__}, which lacks the "
                        "TaskProtocol attributes (name, description, path, seed_skill, evaluator_version, "
                        "with_seed_skill, split, items, messages, render, evaluate, rollout)")
    if wrapped.seed_skill != task.seed_skill:  # a plug-in's own seed skill gets the same checks
        try:
            validate_skill(wrapped.seed_skill, f"{where} (plugin seed skill)")
        except SkillError as exc:
            raise TaskError(str(exc)) from None
    return wrapped


def _load_file(path: Path, module_name: str) -> Any:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key in _LOADED:
        return _LOADED[key]
    unique = "skillopt_user_" + hashlib.sha256(key[0].encode()).hexdigest()[:10] + "_" + module_name.replace(".", "_")
    spec = importlib.util.spec_from_file_location(unique, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(unique, None)
        raise TaskError(f"module {path.name} failed to load: {type(exc).__name__}: {clip(exc, 120)}") from None
    _LOADED[key] = module
    return module


@dataclass(frozen=True)
class PythonFunction:
    version: str
    name: str
    function: Callable
    needs_expected = False  # the user's function decides what it needs
    answer_kind = "text"
    partial_credit = True  # the function may return any soft score

    def describe(self) -> str:
        return f"the task's own function {self.name} scores the reply; its feedback says what it wants"

    def check(self, expected: Any) -> str:
        return ""

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        try:
            result = self.function(item, output)
        except Exception as exc:  # user code: one bad output must not crash a training run
            return Evaluation(0.0, 0.0, f"evaluator {self.name} raised {type(exc).__name__}: {clip(exc, 120)}",
                              raised=True)
        return coerce_result(result, self.name)


def coerce_result(result: Any, name: str) -> Evaluation:
    """Accept Evaluation, (hard, soft, feedback) or a float score from a user function."""
    if isinstance(result, Evaluation):
        hard, soft, feedback = result.hard, result.soft, result.feedback
    elif isinstance(result, tuple) and len(result) == 3:
        hard, soft, feedback = result
    elif isinstance(result, (int, float)):
        soft = float(result)
        hard, feedback = (1.0 if soft >= 1.0 else 0.0), f"score {soft:g}"
    else:
        raise TaskError(f"evaluator {name} returned {type(result).__name__}; "
                        "return an Evaluation, (hard, soft, feedback) or a float")
    try:
        hard, soft = float(hard), min(1.0, max(0.0, float(soft)))
    except (TypeError, ValueError):
        raise TaskError(f"evaluator {name} returned non-numeric scores {hard!r}, {soft!r}") from None
    return Evaluation(1.0 if hard >= 1.0 else 0.0, soft, str(feedback))

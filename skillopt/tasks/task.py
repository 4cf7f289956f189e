"""Tasks: items, splits, prompts and evaluation (the "forward pass" and its data).

This module is the task contract the rest of the engine codes against: the frozen
types that cross module boundaries (Item, Evaluation, Trajectory, TaskInfo), the
TaskProtocol a plug-in may implement, the built-in Task, and the public entry points
that find tasks by name and load, validate or list them. How a task folder on disk
(task.toml, JSONL splits, seed skill, plug-in) is read and checked, and its format,
is in taskfolder.py; how one output is scored is in evaluators.py.

Model messages are exactly [system: skill, user: rendered prompt]: the skill comes
first and alone, so llama.cpp reuses its prefix (KV) cache across items and the
simulated target can read the skill.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

from .answers import clean_output
from ..errors import TaskError

SPLITS = ("train", "selection", "test")

# Limits of the task-folder reader (taskfolder.py reads them from here at call time).
MAX_FILE_BYTES = 50 * 1024 * 1024  # item files: larger ones are a mistake, not a dataset to load into memory
MAX_LINE_BYTES = 1024 * 1024  # one item over 1 MB cannot fit a small model's context anyway
BUILTIN_DIR = Path(__file__).resolve().parents[2] / "data" / "tasks"


@dataclass(frozen=True)
class Item:
    id: str
    input: Mapping[str, Any]  # fields the prompt template uses
    expected: Any  # str, number or dict (json_fields)
    split: str  # train | selection | test


@dataclass(frozen=True)
class Evaluation:
    hard: float  # 0.0 or 1.0
    soft: float  # 0.0 .. 1.0
    feedback: str  # shown to the optimizer; says what was wrong


@dataclass(frozen=True)
class Trajectory:
    item_id: str
    prompt: str  # the task part of the prompt (the user message), without the skill
    output: str  # the target's final answer text
    expected: str  # expected answer rendered as text for reflection
    evaluation: Evaluation
    error: str = ""  # model call failed after retries: scored 0, shown as error


# complete(messages) -> Reply   (see llm.Reply); bound to one model, stage and step by the caller
Complete = Callable[[list[dict]], Any]


@runtime_checkable
class TaskProtocol(Protocol):
    """What the engine needs from a task; Task implements it, plug-ins may wrap it."""
    name: str
    description: str
    path: Path
    seed_skill: str
    evaluator_version: str

    def with_seed_skill(self, text: str) -> "TaskProtocol": ...

    def split(self, name: str) -> tuple[Item, ...]: ...

    def items(self) -> dict[str, Item]: ...

    def messages(self, skill: str, item: Item) -> list[dict]: ...

    def render(self, item: Item) -> str: ...

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation: ...

    def rollout(self, item: Item, skill: str, complete: Complete, judge: Callable | None = None) -> Trajectory: ...


@dataclass(frozen=True)
class TaskInfo:
    name: str
    description: str
    path: Path
    sizes: Mapping[str, int]  # split -> item count; empty when the task is broken
    problem: str = ""  # first problem when the task does not load


def expected_text(expected: Any) -> str:
    """The expected answer as the optimizer reads it."""
    if isinstance(expected, str):
        return expected
    if isinstance(expected, float) and expected.is_integer():
        return str(int(expected))
    return json.dumps(expected, ensure_ascii=False)


def _field_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, eq=False)  # identity equality: a task holds its items, comparing them is never wanted
class Task:
    name: str
    description: str
    path: Path
    seed_skill: str
    evaluator_version: str  # evaluator type, options and code + the prompt template: part of the eval-cache key
    prompt: str
    evaluator: Any  # evaluators.Evaluator
    splits: Mapping[str, tuple[Item, ...]] = field(repr=False)

    def with_seed_skill(self, text: str) -> "Task":
        """The same task starting from another skill (the New run page's editor)."""
        return dataclasses.replace(self, seed_skill=text)

    def split(self, name: str) -> tuple[Item, ...]:
        if name not in SPLITS:
            raise TaskError(f"unknown split '{name}' (one of: {', '.join(SPLITS)})")
        return self.splits[name]

    def items(self) -> dict[str, Item]:
        return {item.id: item for name in SPLITS for item in self.splits[name]}

    def render(self, item: Item) -> str:
        return self.prompt.format_map({k: _field_text(v) for k, v in item.input.items()})

    def messages(self, skill: str, item: Item) -> list[dict]:
        return [{"role": "system", "content": skill}, {"role": "user", "content": self.render(item)}]

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        return self.evaluator.evaluate(item, clean_output(output), judge)

    def rollout(self, item: Item, skill: str, complete: Complete, judge: Callable | None = None) -> Trajectory:
        messages = self.messages(skill, item)
        reply = complete(messages)
        text = reply if isinstance(reply, str) else getattr(reply, "text", "")
        error = "" if isinstance(reply, str) else getattr(reply, "error", "")
        prompt, want = messages[1]["content"], expected_text(item.expected)
        if error:
            return Trajectory(item.id, prompt, "", want, Evaluation(0.0, 0.0, f"model error: {error}"), error=error)
        return Trajectory(item.id, prompt, (text or "").strip(), want, self.evaluate(item, text or "", judge))


# ---------------------------------------------------------------- public API
# taskfolder imports this module's types, so it is imported inside these functions.

def _search_dirs(tasks_dir: str | Path | None) -> list[Path]:
    dirs = [Path(tasks_dir)] if tasks_dir else []
    dirs += [Path(p) for p in os.environ.get("SKILLOPT_TASKS_DIR", "").split(os.pathsep) if p]
    return dirs + [BUILTIN_DIR]


def resolve_task_path(name_or_path: str | Path, *, tasks_dir: str | Path | None = None) -> Path:
    """A folder (or its task.toml), else a task name looked up in tasks_dir, SKILLOPT_TASKS_DIR, built-ins."""
    candidate = Path(name_or_path)
    if candidate.name == "task.toml" and candidate.is_file():
        return candidate.parent
    if candidate.is_dir():
        return candidate
    text = str(name_or_path)
    if text and "/" not in text and "\\" not in text and text not in (".", ".."):
        for base in _search_dirs(tasks_dir):
            if (base / text).is_dir():
                return base / text
    known = ", ".join(info.name for info in list_tasks(tasks_dir=tasks_dir)) or "none"
    raise TaskError(f"{name_or_path}: no such task folder or built-in task (known tasks: {known})")


def load_task(name_or_path: str | Path, *, tasks_dir: str | Path | None = None) -> TaskProtocol:
    """Load and validate a task; raises TaskError("path:line: problem") on the first problem."""
    from .folder import Problems, build_task

    task = build_task(resolve_task_path(name_or_path, tasks_dir=tasks_dir), Problems(fail_fast=True))
    assert task is not None  # fail-fast mode raises instead of returning None
    return task


def validate_task(path: str | Path) -> list[str]:
    """Every problem of a task folder, each "file:line: problem"; [] when it is valid."""
    from .folder import Problems, build_task

    folder = Path(path)
    if folder.name == "task.toml":
        folder = folder.parent
    if not folder.is_dir():
        return [f"{folder}: not a folder"]
    problems = Problems(fail_fast=False)
    build_task(folder, problems)
    return problems.found


def list_tasks(*, tasks_dir: str | Path | None = None) -> list[TaskInfo]:
    """Every task folder in tasks_dir, SKILLOPT_TASKS_DIR and the built-ins; a name shadows later ones."""
    from .folder import Problems, build_task

    seen: dict[str, TaskInfo] = {}
    for base in _search_dirs(tasks_dir):
        if not base.is_dir():
            continue
        for folder in sorted(p for p in base.iterdir() if (p / "task.toml").is_file()):
            if folder.name in seen:
                continue
            try:
                task = build_task(folder, Problems(fail_fast=True))
                seen[folder.name] = TaskInfo(task.name, task.description, folder,
                                             {s: len(task.split(s)) for s in SPLITS})
            except TaskError as exc:
                seen[folder.name] = TaskInfo(folder.name, "", folder, {}, str(exc))
    return sorted(seen.values(), key=lambda info: info.name)


def sizes(task: TaskProtocol) -> dict[str, int]:
    return {name: len(task.split(name)) for name in SPLITS}


__all__ = ["SPLITS", "Item", "Evaluation", "Trajectory", "Complete", "TaskProtocol", "Task", "TaskInfo",
           "load_task", "validate_task", "list_tasks", "resolve_task_path", "expected_text", "sizes",
           "MAX_FILE_BYTES", "MAX_LINE_BYTES"]

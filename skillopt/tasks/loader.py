"""Loading tasks: the entry points that find a task by name and load, validate or list it.

A task is named by its folder (or the folder's task.toml) or by a bare name looked up
in tasks_dir, then SKILLOPT_TASKS_DIR, then the built-in tasks under data/tasks; an
earlier folder's task shadows a later one of the same name. All three entry points
read a folder through folder.build_task, so load_task (which stops at the first
problem), validate_task (which lists every problem) and list_tasks report the same
"file:line: problem" messages. They live above folder.py rather than in task.py so
that the task contract imports nothing from the reader that depends on it.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import TaskError
from .folder import Problems, build_task
from .task import SPLITS, TaskInfo, TaskProtocol

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "data" / "tasks"


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
    task = build_task(resolve_task_path(name_or_path, tasks_dir=tasks_dir), Problems(fail_fast=True))
    assert task is not None  # fail-fast mode raises instead of returning None
    return task


def validate_task(path: str | Path) -> list[str]:
    """Every problem of a task folder, each "file:line: problem"; [] when it is valid."""
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

"""Tasks: items, splits, prompts and evaluation (the "forward pass" and its data).

This module is the task contract the rest of the engine codes against: the frozen
types that cross module boundaries (Item, Evaluation, Trajectory, TaskInfo), the
TaskProtocol a plug-in may implement, the built-in Task, and the limits on task
files. It imports nothing from the modules that build tasks, so every one of them
can import it. How a task folder on disk (task.toml, JSONL splits, seed skill,
plug-in) is read and checked, and its format, is in folder.py; the entry points that
find tasks by name and load, validate or list them are in loader.py; how one output
is scored is in evaluators.py.

Model messages are exactly [system: skill, user: rendered prompt]: the skill comes
first and alone, so llama.cpp reuses its prefix (KV) cache across items and the
simulated target can read the skill.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from .answers import clean_output
from ..errors import ScoringError, TaskError

SPLITS = ("train", "selection", "test")

# Limits of the task-folder reader (folder.py reads them from here at call time).
MAX_FILE_BYTES = 50 * 1024 * 1024  # item files: larger ones are a mistake, not a dataset to load into memory
MAX_LINE_BYTES = 1024 * 1024  # one item over 1 MB cannot fit a small model's context anyway


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
    # (hard, soft) of each sample when the item was scored more than once (samples_per_item > 1):
    # hard and soft above are then their means. (): scored once.
    samples: tuple[tuple[float, float], ...] = ()
    # The task's own scoring code raised on this output (scored 0, the exception in the feedback):
    # an output it cannot parse is a wrong answer, but code that raises on every output is broken.
    raised: bool = False


@dataclass(frozen=True)
class Trajectory:
    item_id: str
    prompt: str  # the task part of the prompt (the user message), without the skill
    output: str  # the target's final answer text
    expected: str  # expected answer rendered as text for reflection
    evaluation: Evaluation
    error: str = ""  # the target or the judge failed after retries: left out of every score, never cached


# complete(messages) -> Reply   (see llm.Reply); bound to one model, stage and step by the caller
Complete = Callable[[list[dict]], Any]


MAX_LABELS = 12  # more distinct answers than this and a task's answers are not labels to group by


@dataclass(frozen=True)
class Scoring:
    """How a task scores replies, as the optimizer needs to know it: the kind of answer
    (label | number | fields | text) picks the reflection template, the description says
    what a reply must look like, so output-format lessons can be learned."""
    kind: str
    description: str
    template: str = ""  # the literal layout of an accepted reply (replies.py); "" when it has none


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


def first_results(trajectories: Sequence[Trajectory]) -> tuple[Trajectory, ...]:
    """Each item's first trajectory, in order, unless it errored (an error is no result): the
    incumbent's known results when its rollouts of one item were gathered from several places."""
    first: dict[str, Trajectory] = {}
    for t in trajectories:
        first.setdefault(t.item_id, t)
    return tuple(t for t in first.values() if not t.error)


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
    evaluator: Any  # an evaluators.Scorer; untyped here because evaluators.py imports this module
    splits: Mapping[str, tuple[Item, ...]] = field(repr=False)
    # Built for the simulated models (task.toml `simulated = true`): only on such a task do
    # their scores mean anything, so the run preflight refuses sim/ models on any other.
    simulated: bool = False
    # The layout of a reply the evaluator accepts (replies.py), written when the task is loaded.
    reply_layout: str = ""

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

    @property
    def partial_credit(self) -> bool:
        """Whether a reply can score between 0 and 1 (the "auto" gate metric: config.for_task)."""
        return bool(getattr(self.evaluator, "partial_credit", True))

    @property
    def uses_judge(self) -> bool:
        """Whether scores depend on the judge model (which then belongs in the cache key)."""
        return bool(getattr(self.evaluator, "uses_judge", False))

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        return self.evaluator.evaluate(item, clean_output(output), judge)

    def field_scores(self, item: Item, output: str) -> Mapping[str, float] | None:
        """Each answer field's score in `output` where the evaluator grades field by field, else None."""
        scores = getattr(self.evaluator, "field_scores", None)
        return scores(item, clean_output(output)) if scores else None

    def scoring(self) -> Scoring:
        """How replies are scored, for the reflection prompt. A label-kind evaluator whose
        train answers are not a small set (free text compared exactly) reads as text."""
        kind = getattr(self.evaluator, "answer_kind", "text")
        if kind == "label" and len({expected_text(i.expected) for i in self.splits["train"]}) > MAX_LABELS:
            kind = "text"
        describe = getattr(self.evaluator, "describe", None)
        return Scoring(kind=kind, description=describe() if describe else "", template=self.reply_layout)

    def rollout(self, item: Item, skill: str, complete: Complete, judge: Callable | None = None) -> Trajectory:
        messages = self.messages(skill, item)
        reply = complete(messages)
        text = reply if isinstance(reply, str) else getattr(reply, "text", "")
        error = "" if isinstance(reply, str) else getattr(reply, "error", "")
        prompt, want = messages[1]["content"], expected_text(item.expected)
        if error:
            return Trajectory(item.id, prompt, "", want, Evaluation(0.0, 0.0, f"model error: {error}"), error=error)
        try:
            evaluation = self.evaluate(item, text or "", judge)
        except ScoringError as exc:  # the output exists but nobody could grade it
            return Trajectory(item.id, prompt, (text or "").strip(), want, Evaluation(0.0, 0.0, str(exc)),
                              error=f"judge: {exc}")
        return Trajectory(item.id, prompt, (text or "").strip(), want, evaluation)


def sizes(task: TaskProtocol) -> dict[str, int]:
    return {name: len(task.split(name)) for name in SPLITS}


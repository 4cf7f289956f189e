"""`python -m skillopt check`: guard a skill against regressions in CI.

    check --task T --skill best_skill.md [--baseline other.md] [--pinned FILE] [--tolerance 0.02]
          [--junit out.xml] [--markdown out.md] [--config FILE] [--set key=value ...]

Scores the skill and a baseline (default: the task's seed skill) on the task's test split, and
the skill on the pinned must-not-regress items: ids in `--pinned FILE`, else in the task
folder's `pinned.txt` (one id a line, `#` comments; the Rollouts page keeps pins and offers
that file for download). Exit codes:

    0  passed
    1  regressed: a pinned item fails (hard < 1), or the test score is more than the tolerance
       below the baseline's
    2  bad input (one line on stderr, as every command)
    3  not verified: model errors left a pinned item or a test score without a result

Scores come from the same evaluator and evaluation cache as training (the store at --db), so a
CI job that runs the check twice on the same skill pays once. The JUnit file has one test case
for the score and one per pinned item; the Markdown report (scores, flips, the skill's changed
lines) is ready to paste as a pull-request comment (checkreport.py).
"""
from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .config import RunConfig
from .errors import UserError
from .plan import Plan
from .tasks.task import expected_text
from .validation import value

DEFAULT_TOLERANCE = 0.02  # two points of score: below that, reruns of a real model differ by noise alone
PINNED_FILE = "pinned.txt"
EPSILON = 1e-9  # a drop of exactly the tolerance passes, whatever the float rounding


@dataclass(frozen=True)
class ItemResult:
    """One item under the skill and the baseline (None: that rollout errored)."""
    item_id: str
    expected: str
    baseline: float | None
    skill: float | None
    passed: bool  # hard == 1 under the skill
    output: str = ""
    error: str = ""


@dataclass(frozen=True)
class CheckResult:
    task: str
    metric: str
    skill_name: str
    baseline_name: str
    score: float
    baseline_score: float
    tolerance: float
    n_items: int
    n_errors: int  # test items the skill's rollout errored on (left out of its score)
    baseline_errors: int
    complete: bool  # both scores within max_error_rate
    pinned: tuple[ItemResult, ...]
    pinned_source: str  # the file the pins came from ("" when none)
    flips: tuple[ItemResult, ...]  # test items whose value differs between baseline and skill
    changed: tuple[str, ...]  # the skill's changed lines, "-old" / "+new"

    @property
    def regressed(self) -> bool:
        return self.baseline_score - self.score > self.tolerance + EPSILON

    @property
    def pinned_failed(self) -> tuple[ItemResult, ...]:
        return tuple(p for p in self.pinned if not p.error and not p.passed)

    @property
    def pinned_errored(self) -> tuple[ItemResult, ...]:
        return tuple(p for p in self.pinned if p.error)

    @property
    def exit_code(self) -> int:
        if self.regressed or self.pinned_failed:
            return 1
        return 3 if self.pinned_errored or not self.complete else 0

    @property
    def verdict(self) -> str:
        return {0: "passed", 1: "regressed", 3: "not verified"}[self.exit_code]

    def reasons(self) -> list[str]:
        out = []
        if self.regressed:
            out.append(f"test score {self.score:.3f} is {self.baseline_score - self.score:.3f} below the baseline's "
                       f"{self.baseline_score:.3f} (tolerance {self.tolerance:.3f})")
        out += [f"pinned item {p.item_id} fails (expected {p.expected!r})" for p in self.pinned_failed]
        out += [f"pinned item {p.item_id} has no result: {p.error}" for p in self.pinned_errored]
        if not self.complete:
            out.append(f"test scores miss too many items to stand (errors: skill {self.n_errors}, baseline "
                       f"{self.baseline_errors} of {self.n_items})")
        return out


def read_pinned(path: str | Path, known: Sequence[str]) -> tuple[str, ...]:
    """Item ids of a pinned file, in order; an id the task lacks is an error naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: pinned file not found")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise UserError(f"{path}: pinned file is not UTF-8 text") from None
    known_ids, ids = set(known), []
    for n, line in enumerate(lines, 1):
        item_id = line.split("#", 1)[0].strip()
        if not item_id:
            continue
        if item_id not in known_ids:
            raise UserError(f"{path}:{n}: item '{item_id}' is not in the task")
        if item_id not in ids:
            ids.append(item_id)
    return tuple(ids)


def pinned_source(task: Any, given: str | None) -> str:
    """The pinned file to use: the one given, else the task folder's pinned.txt if it has one."""
    if given:
        return given
    default = Path(task.path) / PINNED_FILE if getattr(task, "path", None) else None
    return str(default) if default is not None and default.is_file() else ""


def changed_lines(baseline: str, skill: str) -> tuple[str, ...]:
    diff = difflib.unified_diff(baseline.splitlines(), skill.splitlines(), lineterm="", n=0)
    return tuple(line for line in diff if line[:1] in "+-" and not line.startswith(("---", "+++")))


def run_check(task: Any, config: RunConfig, evaluate: Callable[[str, Sequence[Any]], Any], *, skill: str,
              baseline: str, pinned_file: str = "", tolerance: float = DEFAULT_TOLERANCE,
              names: tuple[str, str] = ("skill", "baseline")) -> CheckResult:
    """Score `skill` against `baseline`; `evaluate(skill_text, items)` returns a rollout Batch."""
    if tolerance < 0:
        raise UserError(f"--tolerance must not be negative, got {tolerance}")
    config = config.for_task(task)  # the metric the task's runs are gated on
    items = task.items()
    pins = read_pinned(pinned_file, list(items)) if pinned_file else ()
    test = Plan.make(task, config).test
    ours, theirs = evaluate(skill, test), evaluate(baseline, test)
    pinned_ours = evaluate(skill, [items[i] for i in pins]) if pins else None
    pinned_theirs = evaluate(baseline, [items[i] for i in pins]) if pins else None
    flips = tuple(r for r in _pairs(config, test, theirs, ours) if None not in (r.baseline, r.skill)
                  and abs(r.baseline - r.skill) > EPSILON)
    return CheckResult(
        task=task.name, metric=config.gate_metric, skill_name=names[0], baseline_name=names[1],
        score=value(config, ours), baseline_score=value(config, theirs), tolerance=tolerance,
        n_items=len(test), n_errors=ours.n_errors, baseline_errors=theirs.n_errors,
        complete=ours.complete(config.max_error_rate) and theirs.complete(config.max_error_rate),
        pinned=_pairs(config, [items[i] for i in pins], pinned_theirs, pinned_ours) if pins else (),
        pinned_source=pinned_file, flips=flips, changed=changed_lines(baseline, skill))


def _pairs(config: RunConfig, items: Sequence[Any], baseline: Any, skill: Any) -> tuple[ItemResult, ...]:
    theirs, ours = baseline.by_item, skill.by_item
    out = []
    for item in items:
        a, b = theirs[item.id], ours[item.id]
        out.append(ItemResult(
            item_id=item.id, expected=expected_text(item.expected), baseline=None if a.error else value(config, a),
            skill=None if b.error else value(config, b), passed=not b.error and b.evaluation.hard >= 1.0,
            output=b.output or "", error=b.error or ""))
    return tuple(out)


class Scorer:
    """`evaluate(skill_text, items)` for run_check: the training evaluator and its cache, outside any run."""

    def __init__(self, store: Any, task: Any, config: RunConfig):
        from .models.limits import Meter
        from .models.llm import build_models
        from .rollout import Evaluator

        models = build_models(config, store, "", Meter(config.max_calls, config.max_cost_usd))
        self.evaluator = Evaluator.of(task, models, config, cache=store)

    def __call__(self, skill: str, items: Sequence[Any]) -> Any:
        return self.evaluator.run(skill, items, step=0, split="test", purpose="eval", stage="test")

    def close(self) -> None:
        self.evaluator.close()


def command(args: Any, read_text: Callable[[str, str], str], open_store: Callable[[], Any]) -> int:
    """`check` from its parsed arguments; returns the exit code. Everything that can be refused (the
    config, task, skill files, models, pinned file) is, before a model is called."""
    from .config import load_config
    from .preflight import check_run
    from .skill import validate
    from .tasks.loader import load_task
    from . import checkreport

    config = load_config(args.config, args.set or [])
    task = load_task(args.task)
    skill = read_text(args.skill, "skill")
    validate(skill, origin=args.skill)
    baseline = read_text(args.baseline, "baseline skill") if args.baseline else task.seed_skill
    validate(baseline, origin=args.baseline or "seed skill")
    check_run(task, config)
    scorer = Scorer(open_store(), task, config)
    try:
        result = run_check(task, config, scorer, skill=skill, baseline=baseline,
                           pinned_file=pinned_source(task, args.pinned),
                           tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
                           names=(args.skill, args.baseline or f"{task.name} seed skill"))
    finally:
        scorer.close()
    for path in checkreport.write(result, args.junit, args.markdown):
        print(f"wrote {path}", file=sys.stderr)
    print(summary(result))
    return result.exit_code


def summary(r: CheckResult) -> str:
    """What the command prints: the verdict, the scores, the pins, and why it failed."""
    lines = [f"check {r.verdict}: {r.task} test {r.score:.3f} vs baseline {r.baseline_score:.3f} "
             f"({r.score - r.baseline_score:+.3f}, tolerance {r.tolerance:.3f}, {r.n_items} items); "
             f"pinned {len(r.pinned) - len(r.pinned_failed) - len(r.pinned_errored)}/{len(r.pinned)} pass"]
    lines += [f"  - {reason}" for reason in r.reasons()]
    return "\n".join(lines)

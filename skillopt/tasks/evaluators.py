"""Evaluators: score one model output against one item (the "loss").

Every evaluator returns an Evaluation (hard 0/1, soft 0..1, feedback). The feedback
is read by the optimizer model, so it always says what was expected, what came,
and why that is wrong: a small optimizer can only fix what the feedback names.

Registry: EVALUATORS maps a type name to a factory(options, base_dir) -> Scorer. Each
Scorer also says its answer_kind and describe()s its rule, for the reflection prompt.

Types and options (task.toml [evaluator] table; unknown options are an error):
    exact        -                       output == expected (a list = any of them)
    normalized   -                       same, ignoring case, spacing and punctuation
    numeric      tolerance=0, relative=false, marker=""
                                         last number in the output, or the first number
                                         after the LAST `marker` (e.g. "Answer:"); with a
                                         marker, a missing marker scores hard 0
    regex        pattern, ignore_case=false
                                         fullmatch; "{expected}" in the pattern is the
                                         item's expected value, regex-escaped
    choice       labels, lenient=true    output must be one label; lenient also accepts a
                                         longer answer that names exactly one label
    contains     ignore_case=true        expected text (a list = all of them) in output
    json_fields  fields=[], ignore_case=false
                                         first JSON object in the output; soft = fraction
                                         of fields right, hard = all right
    python       function="module:fn"    fn(item, output) -> Evaluation | (hard, soft,
                                         feedback) | float; the module comes ONLY from
                                         the task folder or an importable module named
                                         here ("python:module:fn" as the type also works)
    llm_judge    rubric, threshold=0.5   asks the judge for {"score": 0..1, "feedback"}

Here: the registry and the string and number comparisons; choice, json_fields, llm_judge
and user code (imported only through usercode.load_callable) have modules of their own.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from .answers import clip, find_numbers, format_number, normalize_text, parse_number, show, tail
from .choice import Choice
from ..errors import TaskError
from .jsonfields import JsonFields
from .judge import JUDGE_SYSTEM, LlmJudge
from .task import Evaluation, Item
from .usercode import PythonFunction, load_callable

# Bump when an evaluator's scoring code changes: it is part of every evaluator's
# version, so cached per-item scores from older code are never reused.
CODE_VERSION = "1"


class Scorer(Protocol):
    """What a task.toml [evaluator] table builds: it scores one output of one item."""
    version: str  # changes whenever the scoring could change: type, options, code
    needs_expected: bool  # False: items may omit the answer field
    answer_kind: str  # label | number | fields | text: how the optimizer reads the cases
    partial_credit: bool  # soft can lie between 0 and 1: the "auto" gate metric is then mixed

    def describe(self) -> str: ...  # what a reply must look like, in one sentence

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation: ...

    def check(self, expected: Any) -> str: ...  # "" or the problem with one item's expected value


def _version(kind: str, options: Mapping[str, Any], extra: str = "") -> str:
    blob = json.dumps({"type": kind, "options": options, "code": CODE_VERSION, "extra": extra},
                      sort_keys=True, default=str)
    return f"{kind}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def _options(kind: str, options: Mapping[str, Any], spec: Mapping[str, tuple[type, Any]]) -> dict[str, Any]:
    """Typed options with defaults; an unknown or mistyped option is an error, not ignored."""
    unknown = sorted(set(options) - set(spec))
    if unknown:
        allowed = ", ".join(sorted(spec)) or "none"
        raise TaskError(f"evaluator '{kind}' has no option '{unknown[0]}' (options: {allowed})")
    out: dict[str, Any] = {}
    for name, (kind_type, default) in spec.items():
        value = options.get(name, default)
        if kind_type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if value is None or not isinstance(value, kind_type) or (kind_type is not bool and isinstance(value, bool)):
            if value is None and default is None:
                raise TaskError(f"evaluator '{kind}' needs option '{name}'")
            raise TaskError(f"evaluator '{kind}' option '{name}' must be {kind_type.__name__}, got {value!r}")
        out[name] = value
    return out


def _text_list(kind: str, name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TaskError(f"evaluator '{kind}' option '{name}' must be a list of non-empty strings")
    return list(value)


def _answers(expected: Any) -> list[str]:
    return [str(e) for e in expected] if isinstance(expected, list) else [str(expected)]


def _check_text(expected: Any) -> str:
    if isinstance(expected, (dict, bool)) or expected is None:
        return f"expected answer must be text or a list of texts, got {show(expected)}"
    if isinstance(expected, list) and (not expected or any(isinstance(e, (dict, list)) for e in expected)):
        return "expected answer list must hold at least one text"
    return ""


# ---------------------------------------------------------------- evaluators

@dataclass(frozen=True)
class Exact:
    version: str
    needs_expected = True
    answer_kind = "label"  # the reflection's template; a task with many distinct answers reads as text
    partial_credit = True  # soft 0.5: the right answer in another case, spacing or punctuation

    def describe(self) -> str:
        return "the whole reply must equal the expected answer exactly (nothing before or after it)"

    def check(self, expected: Any) -> str:
        return _check_text(expected)

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        answers = _answers(item.expected)
        if output in (a.strip() for a in answers):
            return Evaluation(1.0, 1.0, f"correct: {show(output)}")
        if normalize_text(output) in (normalize_text(a) for a in answers):
            return Evaluation(0.0, 0.5, f"expected exactly {show(answers[0])}, got {show(output)}: "
                                        "right answer but the form differs in case, spacing or punctuation")
        return Evaluation(0.0, 0.0, f"expected {show(answers[0])}, got {show(output)}")


@dataclass(frozen=True)
class Normalized:
    version: str
    needs_expected = True
    answer_kind = "label"
    partial_credit = False  # all or nothing

    def describe(self) -> str:
        return "the whole reply must equal the expected answer, case and punctuation ignored"

    def check(self, expected: Any) -> str:
        return _check_text(expected)

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        answers = _answers(item.expected)
        if normalize_text(output) in (normalize_text(a) for a in answers):
            return Evaluation(1.0, 1.0, f"correct: {show(output)}")
        return Evaluation(0.0, 0.0, f"expected {show(answers[0])} (case and punctuation ignored), "
                                    f"got {show(output)}")


@dataclass(frozen=True)
class Numeric:
    version: str
    tolerance: float
    relative: bool
    marker: str
    needs_expected = True
    answer_kind = "number"

    @property
    def partial_credit(self) -> bool:
        """With a marker, soft 0.5 is the right last number without the marker line."""
        return bool(self.marker)

    def describe(self) -> str:
        where = (f"the reply must end with a line '{self.marker} <number>'; the number after '{self.marker}'"
                 if self.marker else "the last number in the reply")
        allowed = f"{self.tolerance:g}" + (" relative" if self.relative else "")
        return f"{where} is compared with the expected number (tolerance {allowed})"

    def check(self, expected: Any) -> str:
        if isinstance(expected, bool) or not isinstance(expected, (int, float, str)) or \
                (isinstance(expected, str) and parse_number(expected) is None):
            return f"expected answer must be a number, got {show(expected)}"
        return ""

    def _close(self, got: float, want: float) -> bool:
        allowed = self.tolerance * abs(want) if self.relative else self.tolerance
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9) or abs(got - want) <= allowed

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        want = item.expected if isinstance(item.expected, (int, float)) else parse_number(str(item.expected))
        if want is None:  # items are checked at load; a plug-in may build its own
            return Evaluation(0.0, 0.0, f"the task's expected answer {show(item.expected)} is not a number")
        want_text = format_number(want)
        if self.marker:
            at = output.lower().rfind(self.marker.lower())
            if at == -1:
                numbers = find_numbers(output)
                right = bool(numbers) and self._close(numbers[-1], want)
                return Evaluation(0.0, 0.5 if right else 0.0,
                                  f"no '{self.marker}' line: the reply must end with '{self.marker} <number>' "
                                  f"(expected '{self.marker} {want_text}'); "
                                  + ("its last number is right but the marker is missing" if right
                                     else f"the reply ends {tail(output)}"))
            numbers = find_numbers(output[at + len(self.marker):])
            where = f"after '{self.marker}'"
            if not numbers:
                return Evaluation(0.0, 0.0, f"no number {where} (expected '{self.marker} {want_text}'), "
                                            f"got {show(output[at:])}")
            got = numbers[0]
        else:
            numbers = find_numbers(output)
            where = "as the last number"
            if not numbers:
                return Evaluation(0.0, 0.0,
                                  f"no number in the output (expected {want_text}); the reply ends {tail(output)}")
            got = numbers[-1]
        if self._close(got, want):
            return Evaluation(1.0, 1.0, f"correct: {format_number(got)}")
        return Evaluation(0.0, 0.0, f"expected {want_text}, got {format_number(got)} {where}")


@dataclass(frozen=True)
class Regex:
    version: str
    pattern: str
    ignore_case: bool
    needs_expected: bool
    answer_kind = "text"
    partial_credit = False  # all or nothing

    def describe(self) -> str:
        return f"the whole reply must match the pattern /{clip(self.pattern, 120)}/"

    def check(self, expected: Any) -> str:
        if not self.needs_expected:
            return ""
        return _check_text(expected) or ("expected answer must be one text" if isinstance(expected, list) else "")

    def _compiled(self, expected: Any) -> re.Pattern:
        pattern = self.pattern.replace("{expected}", re.escape(str(expected))) if self.needs_expected else self.pattern
        return re.compile(pattern, re.DOTALL | (re.IGNORECASE if self.ignore_case else 0))

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        compiled = self._compiled(item.expected)
        if compiled.fullmatch(output):
            return Evaluation(1.0, 1.0, "correct: matches the required pattern")
        return Evaluation(0.0, 0.0, f"the whole reply must match /{clip(compiled.pattern, 80)}/, "
                                    f"got {show(output)}")


@dataclass(frozen=True)
class Contains:
    version: str
    ignore_case: bool
    needs_expected = True
    answer_kind = "text"
    partial_credit = True  # the share of the expected texts found

    def describe(self) -> str:
        return "the reply must contain the expected text" + (" (case ignored)" if self.ignore_case else "")

    def check(self, expected: Any) -> str:
        return _check_text(expected)

    def evaluate(self, item: Item, output: str, judge: Callable | None = None) -> Evaluation:
        wanted = _answers(item.expected)
        fold = (lambda s: s.casefold()) if self.ignore_case else (lambda s: s)
        missing = [w for w in wanted if fold(w) not in fold(output)]
        soft = 1.0 - len(missing) / len(wanted)
        if not missing:
            return Evaluation(1.0, 1.0, "correct: contains " + ", ".join(map(show, wanted)))
        return Evaluation(0.0, soft, "the reply must contain " + ", ".join(map(show, missing))
                          + f"; got {show(output)}")


# ---------------------------------------------------------------- registry

def _exact(options: Mapping, base_dir: Path | None) -> Scorer:
    return Exact(_version("exact", _options("exact", options, {})))


def _normalized(options: Mapping, base_dir: Path | None) -> Scorer:
    return Normalized(_version("normalized", _options("normalized", options, {})))


def _numeric(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("numeric", options, {"tolerance": (float, 0.0), "relative": (bool, False), "marker": (str, "")})
    if o["tolerance"] < 0 or not math.isfinite(o["tolerance"]):
        raise TaskError(f"evaluator 'numeric' option 'tolerance' must be a non-negative number, got {o['tolerance']}")
    return Numeric(_version("numeric", o), o["tolerance"], o["relative"], o["marker"].strip())


def _regex(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("regex", options, {"pattern": (str, None), "ignore_case": (bool, False)})
    uses_expected = "{expected}" in o["pattern"]
    try:
        re.compile(o["pattern"].replace("{expected}", "x"))
    except re.error as exc:
        raise TaskError(f"evaluator 'regex' option 'pattern' is not a valid regular expression: {exc}") from None
    return Regex(_version("regex", o), o["pattern"], o["ignore_case"], uses_expected)


def _choice(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("choice", options, {"labels": (list, None), "lenient": (bool, True)})
    labels = _text_list("choice", "labels", o["labels"])
    if len(labels) < 2:
        raise TaskError("evaluator 'choice' option 'labels' needs at least two labels")
    if len({normalize_text(l) for l in labels}) != len(labels):
        raise TaskError("evaluator 'choice' option 'labels' has labels that differ only in case or punctuation")
    return Choice(_version("choice", o), tuple(labels), o["lenient"])


def _contains(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("contains", options, {"ignore_case": (bool, True)})
    return Contains(_version("contains", o), o["ignore_case"])


def _json_fields(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("json_fields", options, {"fields": (list, []), "ignore_case": (bool, False)})
    fields = _text_list("json_fields", "fields", o["fields"]) if o["fields"] else []
    return JsonFields(_version("json_fields", o), tuple(fields), o["ignore_case"])


def _python(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("python", options, {"function": (str, None)})
    function, digest = load_callable(o["function"], base_dir, "evaluator function")
    return PythonFunction(_version("python", o, digest), o["function"], function)


def _llm_judge(options: Mapping, base_dir: Path | None) -> Scorer:
    o = _options("llm_judge", options, {"rubric": (str, None), "threshold": (float, 0.5)})
    if not o["rubric"].strip():
        raise TaskError("evaluator 'llm_judge' option 'rubric' must not be empty")
    if not 0.0 <= o["threshold"] <= 1.0:
        raise TaskError(f"evaluator 'llm_judge' option 'threshold' must be between 0 and 1, got {o['threshold']}")
    # The judge's own prompt is part of the version: rewording it changes every grade.
    return LlmJudge(_version("llm_judge", o, extra=JUDGE_SYSTEM), o["rubric"].strip(), o["threshold"])


EVALUATORS: dict[str, Callable[[Mapping, Path | None], Scorer]] = {
    "exact": _exact,
    "normalized": _normalized,
    "numeric": _numeric,
    "regex": _regex,
    "choice": _choice,
    "contains": _contains,
    "json_fields": _json_fields,
    "python": _python,
    "llm_judge": _llm_judge,
}


def build_evaluator(table: Any, base_dir: Path | None = None) -> Scorer:
    """Build from a task.toml [evaluator] table; raises TaskError (without a file prefix)."""
    if isinstance(table, str):
        table = {"type": table}
    if not isinstance(table, Mapping):
        raise TaskError("[evaluator] must be a table with a 'type'")
    options = {k: v for k, v in table.items() if k != "type"}
    kind = table.get("type")
    if not isinstance(kind, str) or not kind:
        raise TaskError(f"[evaluator] needs a 'type' (one of: {', '.join(EVALUATORS)})")
    if kind.startswith("python:"):  # shorthand: type = "python:module:function"
        kind, options = "python", {**options, "function": kind.split(":", 1)[1]}
    if kind not in EVALUATORS:
        raise TaskError(f"unknown evaluator type '{kind}' (one of: {', '.join(EVALUATORS)})")
    return EVALUATORS[kind](options, base_dir)

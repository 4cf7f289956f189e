"""The reports of `check` (check.py): JUnit XML for CI test views, Markdown for a pull-request comment.

Task data and model output are untrusted in a comment: table cells are escaped (no raw HTML, no
pipes or newlines that break the table, no backticks that open code), and the changed lines
sit in a code fence longer than any run of backticks they hold.
"""
from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: check.py imports this module to write its reports
    from .check import CheckResult, ItemResult

MAX_FLIP_ROWS = 50  # a long table buries the verdict; the JUnit file and a rerun have every item
MAX_CHANGED_LINES = 200
ICON = {"passed": "✅", "regressed": "❌", "not verified": "⚠️"}


def junit_xml(r: CheckResult) -> str:
    """One test case for the test score, one per pinned item; regressions are failures, items
    without a result (model errors) are errors."""
    suite = ET.Element("testsuite", name=f"skillopt check: {r.task}")
    props = ET.SubElement(suite, "properties")
    for key, val in (("score", f"{r.score:.4f}"), ("baseline_score", f"{r.baseline_score:.4f}"),
                     ("tolerance", f"{r.tolerance:.4f}"), ("metric", r.metric), ("skill", r.skill_name),
                     ("baseline", r.baseline_name), ("pinned_file", r.pinned_source)):
        ET.SubElement(props, "property", name=key, value=val)
    case = ET.SubElement(suite, "testcase", classname=f"skillopt.check.{r.task}",
                         name=f"test score within {r.tolerance:.3f} of the baseline")
    if r.regressed:
        ET.SubElement(case, "failure", message=r.reasons()[0]).text = _score_line(r)
    elif not r.complete:
        ET.SubElement(case, "error", message="test scores incomplete: model errors").text = _score_line(r)
    for p in r.pinned:
        case = ET.SubElement(suite, "testcase", classname=f"skillopt.check.{r.task}.pinned", name=p.item_id)
        if p.error:
            ET.SubElement(case, "error", message=f"no result: {p.error}"[:500])
        elif not p.passed:
            ET.SubElement(case, "failure", message=f"expected {p.expected!r}, got {p.output!r}"[:500])
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _score_line(r: CheckResult) -> str:
    return (f"skill {r.score:.4f} ({r.n_errors} errored), baseline {r.baseline_score:.4f} ({r.baseline_errors} "
            f"errored), {r.n_items} test items, metric {r.metric}")


def _line(text: object, n: int) -> str:
    line = " ".join(str(text if text is not None else "").split())
    return line if len(line) <= n else line[:n - 1] + "…"


def cell(text: object, n: int = 80) -> str:
    """Untrusted text made safe for one Markdown table cell or list item: no HTML, no emphasis,
    links or images, no pipe or newline that would end the cell."""
    line = html.escape(_line(text, n), quote=False).replace("`", "'")
    line = re.sub(r"([\\*_\[\]!|])", r"\\\1", line)
    return line or " "


def code(text: object, n: int = 80) -> str:
    """Untrusted text as an inline code span (escapes do not work inside one: only backticks go)."""
    return "`" + (_line(text, n).replace("`", "'") or " ") + "`"


def _value(v: float | None) -> str:
    return "error" if v is None else f"{v:.2f}"


def markdown(r: CheckResult) -> str:
    lines = [f"## {ICON[r.verdict]} SkillOpt check {r.verdict}: {code(r.task)}", ""]
    lines += [f"- {cell(reason, 300)}" for reason in r.reasons()] + ([""] if r.reasons() else [])
    lines += ["| | baseline | this skill | change |", "|---|---:|---:|---:|",
              f"| test score ({cell(r.metric)}, {r.n_items} items) | {r.baseline_score:.3f} | {r.score:.3f} | "
              f"{r.score - r.baseline_score:+.3f} |",
              f"| errored items | {r.baseline_errors} | {r.n_errors} | |", "",
              f"Baseline: {code(r.baseline_name)} · skill: {code(r.skill_name)} · a drop of more than "
              f"{r.tolerance:.3f} fails.", ""]
    lines += _pinned(r) + _flips(r.flips) + _changed(r.changed)
    return "\n".join(lines).rstrip() + "\n"


def _pinned(r: CheckResult) -> list[str]:
    if not r.pinned:
        return ["No pinned items.", ""]
    ok = len(r.pinned) - len(r.pinned_failed) - len(r.pinned_errored)
    out = [f"### Pinned items: {ok} of {len(r.pinned)} pass", "", f"From {code(r.pinned_source)}.", "",
           "| item | expected | this skill's answer | baseline | this skill |", "|---|---|---|---:|---:|"]
    for p in r.pinned:
        mark = "error" if p.error else ("pass" if p.passed else "**FAIL**")
        out.append(f"| {cell(p.item_id)} | {cell(p.expected)} | {cell(p.error or p.output)} | {_value(p.baseline)} | "
                   f"{_value(p.skill)} {mark} |")
    return out + [""]


def _flips(flips: tuple[ItemResult, ...]) -> list[str]:
    fixed = [f for f in flips if f.skill > f.baseline]
    broken = [f for f in flips if f.skill < f.baseline]
    out = [f"### Flips on the test split: {len(fixed)} fixed, {len(broken)} broken", ""]
    if not flips:
        return out + ["No test item changed.", ""]
    out += ["| item | expected | this skill's answer | baseline | this skill |", "|---|---|---|---:|---:|"]
    shown = (broken + fixed)[:MAX_FLIP_ROWS]  # what broke first: that is what a reviewer must see
    out += [f"| {cell(f.item_id)} | {cell(f.expected)} | {cell(f.output)} | {_value(f.baseline)} | {_value(f.skill)} |"
            for f in shown]
    if len(flips) > len(shown):
        out.append(f"| … and {len(flips) - len(shown)} more | | | | |")
    return out + [""]


def _changed(changed: tuple[str, ...]) -> list[str]:
    if not changed:
        return ["### Changed lines of the skill", "", "The skill is the same as the baseline.", ""]
    shown = list(changed[:MAX_CHANGED_LINES])
    longest = max((len(m) for line in shown for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    more = [f"… and {len(changed) - len(shown)} more changed lines"] if len(changed) > len(shown) else []
    return ["### Changed lines of the skill", "", f"{fence}diff", *shown, fence, *more, ""]


def write(r: CheckResult, junit: str | None = None, md: str | None = None) -> list[Path]:
    written = []
    for path, text in ((junit, junit_xml(r) if junit else ""), (md, markdown(r) if md else "")):
        if path:
            out = Path(path)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            written.append(out)
    return written

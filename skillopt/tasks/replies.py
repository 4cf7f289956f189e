"""Reply templates: the literal layout of a reply a scorer accepts, for the skill to show the target.

A scorer knows what it reads (the number after a marker, one label, one JSON object), and a
small target follows a layout it is shown far more reliably than a rule it is told: measured
with the embedded 1.5B model on a numeric task whose scorer reads "Answer: <number>", a rule
that said so ("the reply must end with a line 'Answer: <number>'"), above worked examples,
left every one of 6 replies unscorable, while the same demand written as a reply layout made 9
of 10 replies end that way. The engine offers the template as a model-free edit (template.py), gated like any other.

TEMPLATES maps a scorer class to a function of the scorer that writes its template; a
scorer whose accepted replies have no fixed layout (a pattern, a contained text, a judge's
rubric, the task's own code) is absent, and its template is "".
"""
from __future__ import annotations

import json
from typing import Any, Callable

from .evaluators import Choice, Exact, Normalized, Numeric
from .jsonfields import JsonFields

WORKING = "<working: a few short lines>"
MAX_LABEL_CHARS = 300  # past this the labels are not listed: the template would drown the skill


def _numeric(s: Numeric) -> str:
    last = f"{s.marker} <number>" if s.marker else "<the final number, last>"
    return f"{WORKING}\n{last}"


def _choice(s: Choice) -> str:
    labels = " | ".join(s.labels)
    return f"<exactly one of: {labels}>" if len(labels) <= MAX_LABEL_CHARS else "<exactly one label>"


def _fields(s: JsonFields) -> str:
    if not s.fields:
        return ""
    return "{" + ", ".join(f"{json.dumps(f)}: <{f}>" for f in s.fields) + "}"


TEMPLATES: dict[type, Callable[[Any], str]] = {
    Exact: lambda s: "<the answer alone, nothing before or after it>",
    Normalized: lambda s: "<the answer alone>",
    Numeric: _numeric,
    Choice: _choice,
    JsonFields: _fields,
}


def reply_template(scorer: Any) -> str:
    """The layout of a reply `scorer` accepts, or "" when its replies have no fixed layout."""
    write = TEMPLATES.get(type(scorer))
    return write(scorer) if write else ""

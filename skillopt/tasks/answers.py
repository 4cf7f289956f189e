"""Answers: reading a model's reply and quoting it back in feedback.

Every evaluator (built-in, the LLM judge, a user's Python function) needs the same
small toolkit: strip formatting that is not content, find numbers inside prose,
compare text ignoring case and punctuation, and quote what the model said so the
optimizer can read it. They live here, apart from the evaluators, so the registry,
the judge and user-code loading share one copy without importing each other. Finding
a JSON object inside prose is models/jsonreply.py's first_json_object, the scanner the
model layer uses too. Pure functions: no I/O, no state.
"""
from __future__ import annotations

import json
import re
import functools
import unicodedata
from typing import Any

FEEDBACK_CLIP = 160  # characters of model output quoted in feedback

_FENCE = re.compile(r"^```[^\n`]*\n(.*?)\n?```$", re.DOTALL)
_NUMBER = re.compile(r"(?<![\d.])[-\u2212+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)")


def clean_output(text: str) -> str:
    """Strip whitespace and one surrounding code fence: formatting, not content."""
    text = (text or "").strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def clip(text: str, limit: int = FEEDBACK_CLIP) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tail(text: str, limit: int = 100) -> str:
    """The end of a long reply, where a final answer should be, as JSON."""
    text = " ".join(str(text).split())
    return json.dumps(text if len(text) <= limit else "…" + text[-(limit - 1):], ensure_ascii=False)


@functools.lru_cache(maxsize=4096)  # labels are normalised once per item otherwise: a hot path
def normalize_text(text: str) -> str:
    """Case-, spacing- and punctuation-insensitive form (Unicode-aware)."""
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return " ".join(text.split())


def format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def parse_number(text: str) -> float | None:
    match = _NUMBER.fullmatch(str(text).strip().replace("\u2212", "-"))
    return float(match.group(0).replace(",", "")) if match else None


def find_numbers(text: str) -> list[float]:
    return [float(m.group(0).replace("\u2212", "-").replace(",", "")) for m in _NUMBER.finditer(text)]


def show(value: Any) -> str:
    """A value as the optimizer should read it: JSON, so strings and numbers differ."""
    return clip(json.dumps(value, ensure_ascii=False), 80)


def json_type(value: Any) -> str:
    """JSON's name for a value's type: the optimizer reads "a number, expected a string"."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", dict: "object", list: "array"}.get(type(value), "null")

"""Finding the JSON object in a model's reply: small models wrap it in prose or code fences.

One brace scanner, _scan, serves both kinds of reader: the model layer (extract_json,
which also looks inside code fences and says why nothing was found) and the evaluators
(first_json_object, which only needs the object or None).
"""
from __future__ import annotations

import json
import re

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def _scan(text: str) -> tuple[dict | None, str]:
    """(the first {...} in text that parses as a JSON object, "") or (None, the first parse error or "")."""
    decoder = json.JSONDecoder()
    first_error = ""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
            if isinstance(value, dict):
                return value, ""
        except json.JSONDecodeError as exc:
            first_error = first_error or f"malformed JSON ({exc.msg} at char {exc.pos})"
        start = text.find("{", start + 1)
    return None, first_error


def first_json_object(text: str) -> dict | None:
    """The first {...} in text that parses as a JSON object (models wrap JSON in prose)."""
    return _scan(text)[0]


def extract_json(text: str) -> object:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    if not text or not text.strip():
        raise ValueError("empty reply, expected a JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    first_error = ""
    for candidate in candidates:
        value, error = _scan(candidate)
        if value is not None:
            return value
        first_error = first_error or error
    raise ValueError(first_error or "no JSON object found in the reply")


def as_int(value: object) -> int | None:
    """An integer field of a reply: an int or a string of digits; None otherwise (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None

"""Finding the JSON object in a model's reply: small models wrap it in prose or code fences."""
from __future__ import annotations

import json
import re

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def extract_json(text: str) -> object:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    if not text or not text.strip():
        raise ValueError("empty reply, expected a JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    first_error = ""
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
                if isinstance(value, dict):
                    return value
            except json.JSONDecodeError as exc:
                first_error = first_error or f"malformed JSON ({exc.msg} at char {exc.pos})"
            start = candidate.find("{", start + 1)
    raise ValueError(first_error or "no JSON object found in the reply")

"""Redaction of secrets from any text that leaves the model layer (errors, notes, logs).

API keys live only in the environment; a provider's error message may echo one back, so
every error string is passed through `redact` before it reaches the store or a log.

Public API: redact(text, extra_env=()) -> str;  one_line(text, limit=400) -> str
"""
from __future__ import annotations

import os
import re

_SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_SECRET_PATTERNS = (re.compile(r"sk-[A-Za-z0-9_\-]{16,}"), re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{12,}"))
MIN_SECRET_LEN = 6  # shorter values ("1", "true") would blank out ordinary text


def redact(text: str, extra_env: tuple[str, ...] = ()) -> str:
    """Replace the values of secret-looking env vars (and `extra_env` names) with ***."""
    if not text:
        return text
    for name, value in os.environ.items():
        if (name.upper().endswith(_SECRET_SUFFIXES) or name in extra_env) and len(value) >= MIN_SECRET_LEN:
            text = text.replace(value, "***")
    text = _SECRET_PATTERNS[0].sub("***", text)
    return _SECRET_PATTERNS[1].sub(r"\1***", text)


def one_line(text: str, limit: int = 400) -> str:
    """`text` with every run of whitespace (newlines included) made one space, clipped to
    `limit` chars: an error or a note is stored and shown as one line."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."



"""What an integration leaves on the run: one-line events (`warning`, `notify`) in the store."""
from __future__ import annotations

import sys
import time
from typing import Any

from ..models.redaction import one_line, redact


def record_event(store: Any, run_id: str, kind: str, message: str) -> str:
    """Add one line to the run's events (secrets in the environment masked first: a client's
    error may echo a URL back); returns the line."""
    line = one_line(redact(message))
    try:
        with store.tx() as c:
            c.execute("INSERT INTO events (run_id, step, type, message, created_at) "
                      "SELECT ?, COALESCE((SELECT step FROM runs WHERE id = ?), 0), ?, ?, ?",
                      (run_id, run_id, kind, line, time.time()))
    except Exception as exc:  # the store itself failing is the trainer's business, not ours
        print(f"warning: could not record a {kind} event ({type(exc).__name__})", file=sys.stderr)
    return line


def record_warning(store: Any, run_id: str, message: str) -> str:
    """A `warning` event on the run, also printed on stderr."""
    line = record_event(store, run_id, "warning", message)
    print(f"warning: {line}", file=sys.stderr)
    return line

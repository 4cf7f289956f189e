"""Sending an optimizer prompt in the largest shape that fits the model's context window.

window.py says which shapes a prompt comes in; this sends them. The first shape estimated to
fit goes first; when the model still refuses it (a prompt fault: the estimate was off), the
next smaller shape goes. Every call, refused or answered, is on record like any other, and
each carries a note of what its prompt left out, so a reader of the calls table can tell a
fitted prompt from a whole one. A model with no known window gets the whole prompt, as before.
"""
from __future__ import annotations

from typing import Callable, Sequence

from . import window
from .models.providers import prompt_fault


def complete_fitted(model, shapes: Sequence[window.Shape], build: Callable[[window.Shape], list[dict]], *,
                    describe: Callable[[window.Shape], str], **call) -> tuple[window.Shape, object, object]:
    """(the shape last sent, the validated value or None, the reply) of `model.complete_json`
    on `build(shape)` for the shapes `window.drafts` picks; `call` is complete_json's own
    keywords (stage, step, schema, validate)."""
    sent = value = reply = None
    for sent, messages in window.drafts(shapes, build, model.prompt_tokens, model.prompt_room()):
        value, reply = model.complete_json(messages, note=describe(sent), **call)
        if value is not None or not prompt_fault(reply.error):
            break
    return sent, value, reply

"""How long a prompt is for a model, and how long it may be (its context window).

The provider of a model says both where it can (the embedded model knows its window and has
its tokenizer); a model reached through litellm gets its window from litellm's offline model
map. A prompt is then counted by an estimate that errs long, so a prompt fitted by it fits.
"""
from __future__ import annotations

from . import bridge, providers

CHARS_PER_TOKEN = 2  # where the provider has no tokenizer; errs long: prose takes ~4 a token, invoice text 2.4
MESSAGE_TOKENS = 8  # a chat template's tokens around each message (role header and end mark)


def window(model: str) -> int | None:
    """The context window of "prefix/name" in tokens; None when not known."""
    prefix, _, name = model.partition("/")
    found = providers.available(prefix)
    if found is not None:
        return found.window(name) if found.window else None
    try:
        return bridge.context_window(model)
    except Exception:  # litellm missing or its map unreadable: the call itself will say so
        return None


def prompt_tokens(model: str, messages: list[dict]) -> int:
    """The tokens `messages` take in `model`: its provider's tokenizer where it has one, else
    the estimate; each message adds its chat-template marks, and so does the reply's header."""
    prefix, _, name = model.partition("/")
    found = providers.available(prefix)
    count = ((lambda text: found.tokens(name, text)) if found is not None and found.tokens
             else (lambda text: -(-len(text) // CHARS_PER_TOKEN)))
    return sum(count(str(m.get("content") or "")) + MESSAGE_TOKENS for m in messages) + MESSAGE_TOKENS

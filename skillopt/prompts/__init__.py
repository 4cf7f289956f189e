"""The optimizer's prompt templates (the .md files here) and how they are filled.

Each template is one file: the system half (stable instructions, first, so a provider's
prompt cache hits) and, after a `<!-- user -->` line, the user half with the data. The
first line is a `<!-- skillopt:NAME -->` marker by which the simulated optimizer knows
which prompt it reads. Values go in by $-substitution, so skill text full of braces
stays intact.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from string import Template
from typing import Any

_USER_SPLIT = "<!-- user -->"
_SLOT = re.compile(r"\$\{[a-z_]+\}")


@lru_cache(maxsize=None)
def template(name: str) -> tuple[str, str]:
    """(system, user) halves of skillopt/prompts/<name>.md."""
    text = resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    system, _, user = text.partition(_USER_SPLIT)
    return system.strip(), user.strip()


def prompt_messages(name: str, **values: Any) -> list[dict]:
    """The template filled in as [system, user] messages; a missing value is a KeyError."""
    system, user = template(name)
    values = {k: str(v) for k, v in values.items()}
    return [{"role": "system", "content": Template(system).substitute(values)},
            {"role": "user", "content": Template(user).substitute(values)}]


def fixed_text(name: str, **values: Any) -> str:
    """The template's own wording, both halves: `values` filled in (instructions that vary by
    kind) and every other slot a blank line, since the data filled in there is not the prompt's
    and the words either side of it never run on into each other."""
    values = {k: str(v) for k, v in values.items()}
    return "\n\n".join(_SLOT.sub("\n\n", Template(half).safe_substitute(values)) for half in template(name))


def clip(text: str, limit: int) -> str:
    """Keep head and tail of an over-long text and say how much was cut."""
    if len(text) <= limit:
        return text
    note = f" [... {len(text) - limit} chars clipped ...] "
    keep = max(limit - len(note), 20)
    head = keep * 2 // 3
    return text[:head] + note + text[len(text) - (keep - head):]

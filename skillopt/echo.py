"""Optimizer text that copies its own prompt's instructions back.  (pure: no I/O)

A small optimizer, asked for "When a task <has the telling detail these cases share>, the
answer is <the expected answer>", may reply with that very sentence, brackets removed: it
reads like a rule and says nothing. Such text is told apart by its word sequences: most of
its 4-word runs occur in the prompt's fixed wording (the template without the data filled
in), where a lesson drawn from the cases is made of the cases' words. The caller passes
what counts as the prompt's: its fixed wording, and for reflection the lines every task of
the minibatch already says (the target reads those anyway); an edit that quotes the task's
scoring rule or one case's text is never an echo.
"""
from __future__ import annotations

import re

RUN = 4  # words per compared run: long enough that shared stock phrases ("the answer is") do not count alone
# An echo when at least this share of its runs is the prompt's: copies measured whole (the
# slow update's placeholder bullets, a task's instruction line) score 1.0, while an
# instruction line restated with a short lesson added ("..., dates as YYYY-MM-DD") scores ~0.6.
SHARE = 0.8

_WORD = re.compile(r"[a-z0-9]+")
_PARAGRAPH = re.compile(r"\n\s*\n")  # runs never cross a blank line: where prompts.fixed_text left out the data


def _runs(text: str) -> set[tuple[str, ...]]:
    out = set()
    for part in _PARAGRAPH.split(text):
        words = _WORD.findall(part.lower())
        out.update(tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1))
    return out


def echoes(text: str, instructions: str) -> bool:
    """Whether `text` is mostly the prompt's fixed `instructions` copied back; text shorter
    than one run of words never is (it has too little to tell)."""
    mine = _runs(text)
    if not mine:
        return False
    return len(mine & _runs(instructions)) >= SHARE * len(mine)

"""Checking a proposed rule against the data before the gate pays for it.  (pure: no I/O)

A small optimizer copies what it is shown, so it proposes rules such as "If a task
mentions legal, answer billing" that the train data plainly contradicts. For a task whose
answers are labels, a rule that names trigger words and one answer can be checked for free:
among the train tasks seen so far that contain its trigger words, how many have that
answer? When too few do, the rule is dropped as `contradicted`, with the counts as its
evidence. Only words that tell tasks apart count as triggers (a word in most tasks is
template text), negated answers ("not billing") are not the rule's answer, and a rule
whose trigger words could be read with "and" or with "or" is dropped only when every
reading with enough support contradicts it: a precedence rule is not mistaken for a wrong one.

A contradicted rule often names a real clue with the wrong answer (a small optimizer swaps
the two answers of "answer A, not B", or takes one group's answer for another's clue words).
When the tasks with its trigger words clearly share one other answer, `repair` rewrites the
rule to give that answer: the gate then judges what the data says instead of nothing.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from .tasks.task import Item, expected_text

MIN_SUPPORT = 3  # fewer matching train tasks than this is no evidence either way
MAX_SHARE = 0.5  # a trigger word in more than this share of the tasks is template text, not a clue
REPAIR_SHARE = 0.8  # a rule is rewritten only to an answer this share of its trigger's tasks have: a clear pattern
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*[a-z0-9]|[a-z0-9]")
_NEGATED = re.compile(r"(?:not|never|instead of|rather than|except|but not)\W+$")
# Function words of English: never a clue, in any domain.
STOP_WORDS = frozenset("""a about after again all also am an and any anything are as at back be because been before
being but by can can't cannot could did do does don't for from get got had has have having he her here him his how i
i'd i'm if in into is it it's its just me more my no not now of off on one only or other our out over please same
she so some still than that the their them then there these they this those to too two up us very was we were what
when where which while who why will with would yes yet you your hi hello dear thanks thank regards best kind
cheers""".split())


@dataclass(frozen=True)
class Example:
    """A train task as the evidence sees it: its text and its expected answer."""
    text: str
    answer: str


@dataclass(frozen=True)
class Evidence:
    labels: tuple[str, ...]  # the task's answers (empty: answers are not labels, nothing to check)
    examples: tuple[Example, ...]
    repair: bool = False  # rewrite a contradicted rule to its trigger's clear answer (repair_contradicted)


def collect(train: Sequence[Item], seen: Sequence[Item], render: Callable[[Item], str],
            repair: bool = False) -> Evidence:
    """The evidence of a label task: its answers (from the whole train split) and the train
    tasks seen so far (their rendered text, without the skill, and their expected answer)."""
    unique = {it.id: it for it in seen}
    return Evidence(labels=tuple(sorted({expected_text(it.expected) for it in train})),
                    examples=tuple(Example(text=render(it), answer=expected_text(it.expected))
                                   for it in unique.values()), repair=repair)


@lru_cache(maxsize=8192)
def words(text: str) -> frozenset[str]:
    """The text's words that can be clues: casefolded, stop words left out."""
    # Cached: every rule of every step looks up the words of every train task seen so far.
    return frozenset(_WORD.findall(text.casefold())) - STOP_WORDS


def _mentions(content: str, labels: Sequence[str]) -> list[tuple[int, int, str, bool]]:
    """(start, end, label, negated) of every label named in a rule, in order."""
    text = content.casefold()
    found = []
    for label in labels:
        for m in re.finditer(rf"(?<![\w-]){re.escape(label.casefold())}(?![\w-])", text):
            negated = bool(_NEGATED.search(text[max(0, m.start() - 14):m.start()]))
            found.append((m.start(), m.end(), label, negated))
    return sorted(found)


def asserted_label(content: str, labels: Sequence[str]) -> str | None:
    """The label a rule gives as its answer: the last one it names without negating it (a
    rule states its condition first). None when it names none, or ends on a choice ("A or B")."""
    named = [m for m in _mentions(content, labels) if not m[3]]
    if not named:
        return None
    if len(named) >= 2 and named[-1][2] != named[-2][2] and \
            re.fullmatch(r"\W*(?:or|and/or|/)?\W*", content.casefold()[named[-2][1]:named[-1][0]]):
        return None
    return named[-1][2]


def triggers(content: str, labels: Sequence[str], examples: Sequence[Example]) -> tuple[str, ...]:
    """Words of the rule's condition that occur in some but not most train tasks: the rule
    without its answer and its negated labels ("not legal"), template words and stop words.
    A label named in the condition ("mentions legal") is a trigger like any other word."""
    answer = asserted_label(content, labels)
    text = content.casefold()
    for start, end, label, negated in reversed(_mentions(content, labels)):
        if negated or label == answer:
            text = text[:start] + " " + text[end:]
    texts = [words(e.text) for e in examples]
    out = []
    for word in sorted(words(text)):
        share = sum(word in t for t in texts) / max(len(texts), 1)
        if 0 < share <= MAX_SHARE and len(word) >= 3:
            out.append(word)
    return tuple(out)


def _verdict(matching: list[Example], label: str) -> tuple[bool, Counter]:
    counts = Counter(e.answer for e in matching)
    top = counts.most_common(1)[0][0]
    return counts[label] / len(matching) < 0.5 and top != label, counts


def _supported(content: str, evidence: Evidence) -> tuple[str, tuple[str, ...], dict[str, list[Example]]] | None:
    """(the rule's answer, its trigger words, the train tasks of each reading of them with
    enough support), or None when the rule names no answer, no trigger or too few tasks."""
    if not evidence.labels:
        return None
    label = asserted_label(content, evidence.labels)
    named = triggers(content, evidence.labels, evidence.examples) if label else ()
    if not named:
        return None
    texts = [(words(e.text), e) for e in evidence.examples]
    readings = {"any": [e for t, e in texts if t & set(named)], "all": [e for t, e in texts if set(named) <= t]}
    supported = {k: v for k, v in readings.items() if len(v) >= MIN_SUPPORT}
    return (label, named, supported) if supported else None


def contradiction(content: str, evidence: Evidence) -> str | None:
    """The evidence against a rule, or None when the data does not contradict it."""
    found = _supported(content, evidence)
    if found is None:
        return None
    label, named, supported = found
    verdicts = {k: _verdict(v, label) for k, v in supported.items()}
    if not all(bad for bad, _ in verdicts.values()):
        return None
    counts = verdicts["any"][1] if "any" in verdicts else next(iter(verdicts.values()))[1]
    seen = ", ".join(f"{answer} {n}" for answer, n in counts.most_common(4))
    return (f"{' / '.join(named)} appear in {sum(counts.values())} train tasks seen so far, answered {seen}; "
            f"the rule says {label}")


def repair(content: str, evidence: Evidence) -> str | None:
    """A contradicted rule rewritten to give the answer its trigger's train tasks have (the
    answer it named swapped with that one wherever the rule negates it: "answer A, not B"
    read the wrong way round), or None when no one answer holds for REPAIR_SHARE of the tasks
    of every supported reading, or the evidence is not to repair: then the rule is only dropped."""
    found = _supported(content, evidence) if evidence.repair else None
    if found is None:
        return None
    label, _, supported = found
    tops = [(*Counter(e.answer for e in v).most_common(1)[0], len(v)) for v in supported.values()]
    answers = {top for top, _, _ in tops}
    # one other answer held by REPAIR_SHARE (> 0.5) of every reading: the rule is contradicted too
    if len(answers) != 1 or label in answers or any(n / total < REPAIR_SHARE for _, n, total in tops):
        return None
    (answer,) = answers
    asserted = max(m for m in _mentions(content, evidence.labels) if not m[3] and m[2] == label)
    out = content
    for start, end, name, negated in reversed(_mentions(content, evidence.labels)):
        if (start, end) == asserted[:2]:
            out = out[:start] + answer + out[end:]
        elif negated and name == answer:
            out = out[:start] + label + out[end:]
    return out if contradiction(out, evidence) is None else None

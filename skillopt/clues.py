"""Clue rules: label rules read off the train split's answers.  (pure: no I/O)

A small optimizer rarely puts a house rule into words, and when it names a clue it often
names the wrong answer with it (evidence.py drops those). The train split already says which
words come with which answer, and a step's rollouts say which tasks the target gets wrong
now. A clue rule `If the task mentions "W", answer L.` is offered when, for a word W that
tells tasks apart (in at most half of them, not a stop word, three letters or more):

- at least MIN_SUPPORT train tasks contain W, and at least PRECISION of them have answer L:
  the data supports the rule, with no model call;
- at least MIN_FIXES of the incumbent's train failures contain W and expect L: the target
  gets the rule's cases wrong now, so the rule can change something. The failures are those of
  every train batch rolled out since the incumbent took over (the step's own, and the earlier
  ones the evaluation cache holds under it, at no call; with the cache off, the step's only).

A trial's rules are taken in turns across answers (each answer's best clue first, ranked by
the failures it covers, then its precision and support), so one step's rules are not all
synonyms of one clue. For any task whose answers are labels; the rules' words come from the
tasks' own text, so nothing here knows a domain. Like worked examples, the rules are gated
alone on the incumbent and judged on their own items (with `trial_train_items=false`, pooled
over the run's rule trials), on the selection split only: they were read off every train
task's answer, so no train item is a fair test of them (the trainer). A word whose rules were
rejected is not offered again.

A small target may apply a rule beyond its clue: given one `answer L` rule it can answer L to
tasks that never mention the word. So a trial's rules must name at least MIN_ANSWERS answers
(a rule set that names several answers gives none of them the weight of a lone instruction),
and `reach` splits a trial's flipped items into those that mention its words and the others,
so the store says which of the two the gate's record came from.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

from .evidence import MAX_SHARE, Example, words
from .gate import GateDecision
from .patch import Edit, apply_edits
from .skill import sections
from .tasks.task import Item, Trajectory, expected_text, first_results

SECTION = "Clue rules"
MIN_SUPPORT = 4  # fewer train tasks with the word than this is a coincidence, not a clue
PRECISION = 0.8  # the share of the word's train tasks that must have the rule's answer: a clear pattern
MIN_FIXES = 2  # the incumbent's train failures the rule must cover: one could be an outlier of its answer
PER_TRIAL = 6  # rules one trial adds: two clues for each of three answers, small enough to judge
MAX_RULES = 12  # the section's size limit: past it no rule is offered (the skill stays short)
# Answers a trial's rules must name. With one rule, "compostable" -> residual, a 1.5B target
# answered residual to 21-24 of waste-sorting's tasks without the word (an exploration script);
# the four rules the train split gave for three answers won 14 and lost 1 of the 128 selection
# and test tasks naming their words, and won 8 and lost 7 of the others.
MIN_ANSWERS = 2
_LINE = re.compile(r'^- If the task mentions "(?P<word>[^"]+)", answer (?P<answer>.+)\.$')


@dataclass(frozen=True)
class Clue:
    word: str
    answer: str
    support: int  # train tasks containing the word
    hits: int  # of them, those whose answer is `answer`
    fixes: tuple[str, ...]  # the step's failures (item ids) the rule covers

    @property
    def line(self) -> str:
        return f'- If the task mentions "{self.word}", answer {self.answer}.'

    @property
    def evidence(self) -> str:
        return f"{self.word}: {self.hits} of {self.support} train tasks answer {self.answer}"


def _named(text: str) -> tuple[str, ...]:
    """The words the clue-rule lines of a text name, in order."""
    return tuple(m["word"] for line in text.splitlines() if (m := _LINE.match(line.strip())))


def stated(skill: str) -> frozenset[str]:
    """The words the skill's clue rules already name."""
    return frozenset(_named(skill))


def mine(train: Sequence[Example], failures: Sequence[tuple[str, Example]],
         skip: Collection[str] = ()) -> list[Clue]:
    """Every clue rule the train split supports and the failures (item id, task) need, best
    first; words in `skip` (stated already, or rejected before) are left out."""
    texts = [words(e.text) for e in train]
    if not texts:
        return []
    counts = Counter(w for t in texts for w in t)
    answers: dict[str, Counter] = defaultdict(Counter)
    for t, e in zip(texts, train):
        for w in t:
            answers[w][e.answer] += 1
    failing = [(item, words(e.text), e.answer) for item, e in failures]
    found = []
    for word, support in counts.items():
        if word in skip or len(word) < 3 or support < MIN_SUPPORT or support / len(texts) > MAX_SHARE:
            continue
        answer, hits = answers[word].most_common(1)[0]
        if hits / support < PRECISION:
            continue
        fixes = tuple(item for item, t, a in failing if word in t and a == answer)
        if len(fixes) >= MIN_FIXES:
            found.append(Clue(word, answer, support, hits, fixes))
    return sorted(found, key=lambda c: (-len(c.fixes), -c.hits / c.support, -c.support, c.word))


def pick(clues: Sequence[Clue], n: int) -> list[Clue]:
    """Up to `n` clues, taken in turns across answers (each answer's best first)."""
    by_answer: dict[str, list[Clue]] = defaultdict(list)
    for c in clues:
        by_answer[c.answer].append(c)
    chosen: list[Clue] = []
    for rank in range(max((len(v) for v in by_answer.values()), default=0)):
        chosen += [v[rank] for v in by_answer.values() if rank < len(v)]
    return chosen[:n]


def edit(skill: str, clues: Sequence[Clue]) -> Edit | None:
    """The edit adding the clues to the skill's clue-rules section (made at its end when missing)."""
    room = MAX_RULES - len(stated(skill))
    chosen = list(clues)[:max(room, 0)]
    if not chosen:
        return None
    content = "\n".join(c.line for c in chosen)
    rationale = "; ".join(c.evidence for c in chosen)
    home = next((s.path_str for s in sections(skill) if s.title == SECTION), None)
    if home is None:
        return Edit(op="add", content=f"## {SECTION}\n\n{content}", rationale=rationale, source="rule")
    return Edit(op="add", section=home, content=content, rationale=rationale, source="rule")


def for_step(skill: str, train: Sequence[Example], failures: Sequence[tuple[str, Example]],
             rejected: Collection[str], fuzzy: float) -> tuple[Edit, tuple[str, ...], str] | None:
    """The step's clue-rule edit, the failures it covers and the skill with it applied, as
    examples.for_step returns them; None when the data offers no rule the step needs."""
    chosen = pick(mine(train, failures, stated(skill) | frozenset(rejected)), PER_TRIAL)
    found = edit(skill, chosen)
    shown = found.content.count("\n") + 1 if found else 0  # the section's room may take fewer than chosen
    if len({c.answer for c in chosen[:shown]}) < MIN_ANSWERS:
        return None
    patch = apply_edits(skill, [found], fuzzy_threshold=fuzzy)
    if not patch.applied:
        return None
    items = tuple(dict.fromkeys(i for c in chosen[:shown] for i in c.fixes))
    return found, items, patch.text


def for_batch(skill: str, render: Callable[[Item], str], train: Sequence[Item], rolled: Sequence[Trajectory],
              rejected: Collection[str], fuzzy: float) -> tuple[Edit, tuple[str, ...], str] | None:
    """for_step on the incumbent's train rollouts: every train item as the evidence (its task as
    the target reads it, without the skill), and the failures among `rolled` (errored items are
    none; an item rolled out twice counts once, its first result)."""
    known = {it.id: Example(render(it), expected_text(it.expected)) for it in train}
    failures = [(t.item_id, known[t.item_id]) for t in first_results(rolled)
                if t.evaluation.hard < 1 and t.item_id in known]
    return for_step(skill, list(known.values()), failures, rejected, fuzzy)


def words_of(e: Edit) -> tuple[str, ...]:
    """The words a clue-rule edit names (remembered when its trial is rejected)."""
    return _named(e.content)


def explained(decision: GateDecision, e: Edit, flipped: Sequence[tuple[str, float, float]],
              render: Callable[[Item], str], items: Sequence[Item]) -> GateDecision:
    """A clue-rule trial's decision with `reach` on the gated items added to its reason, so the
    store says whether its record came from the tasks its words name; another trial's as it is."""
    if e.source != "rule":
        return decision
    flips = {item for item, _, _ in flipped}
    texts = {it.id: words(render(it)) for it in items if it.id in flips}
    return dataclasses.replace(decision, reason=f"{decision.reason}; {reach(flipped, texts, words_of(e))}")


def reach(flipped: Sequence[tuple[str, float, float]], texts: Mapping[str, frozenset[str]],
          named: Collection[str]) -> str:
    """Where a rule trial's flipped items (item id, value before, value after) lie: on the
    tasks that mention one of its words (`texts`: an item's words) and on the others."""
    counts, named = {True: [0, 0], False: [0, 0]}, frozenset(named)
    for item, before, after in flipped:
        counts[bool(texts.get(item, frozenset()) & named)][after < before] += 1
    (mw, ml), (ow, ol) = counts[True], counts[False]
    text = f"on tasks that mention its words {mw} won, {ml} lost; on the others {ow} won, {ol} lost"
    return text + (" (the target applied the rules beyond their words)" if ow + ol > mw + ml else "")

"""The edit pipeline: a chain of pure transforms over candidate edits.  (pure: no I/O)

Like an optax chain for gradients, an optimizer step here is a composition of small
pure functions `list[Candidate] -> list[Candidate]`: normalize, dedupe (aggregate),
support, optional merge, rank, clip. No candidate is ever dropped from the list:
each one ends with a fate, so the dashboard can show why an edit was not applied.
LLM-backed merge and rank are injected as plain functions, keeping this module pure.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .patch import OPS, Edit
from .vocabulary import Fate

MAX_CONTENT_CHARS = 2_000


@dataclass(frozen=True)
class Proposal:
    """A raw edit as proposed by the reflection call on minibatch `minibatch`."""
    edit: Edit
    minibatch: int


@dataclass(frozen=True)
class Candidate:
    edit: Edit
    minibatches: tuple[int, ...]
    fate: Fate = "pending"  # ends as selected | clipped | merged | invalid
    note: str = ""  # why it got its fate, e.g. "empty content" or "near-duplicate of ..."

    @property
    def live(self) -> bool:
        return self.fate == "pending"


@dataclass(frozen=True)
class Selection:
    selected: tuple[Edit, ...]  # in rank order: the order they are applied in
    candidates: tuple[Candidate, ...]  # every proposal's fate, selected ones first

    @property
    def competed(self) -> int:
        """Valid, distinct candidates that competed for the budget."""
        return sum(1 for c in self.candidates if c.fate in ("selected", "clipped"))


Transform = Callable[[list[Candidate]], list[Candidate]]


def _split(cands: Iterable[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    cands = list(cands)
    return [c for c in cands if c.live], [c for c in cands if not c.live]


def chain(*transforms: Transform) -> Transform:
    """Compose transforms left to right."""
    def run(cands: list[Candidate]) -> list[Candidate]:
        for transform in transforms:
            cands = transform(list(cands))
        return cands
    return run


# ---------------------------------------------------------------- normalize

def _tidy(text: str) -> str:
    rows = [r.rstrip() for r in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n")]
    # Runs of blank lines become one: the optimizer's padding is not part of the rule.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(rows))


def _problem(edit: Edit) -> str:
    if edit.op not in OPS:
        return f"unknown op {edit.op!r}"
    if edit.op in ("add", "replace") and not edit.content:
        return f"{edit.op} with empty content"
    if edit.op in ("replace", "delete") and not edit.target:
        return f"{edit.op} with empty target"
    if len(edit.content) > MAX_CONTENT_CHARS:
        return f"content of {len(edit.content)} characters exceeds {MAX_CONTENT_CHARS}"
    if edit.op == "replace" and " ".join(edit.content.split()) == " ".join(edit.target.split()):
        return "replace changes nothing"
    return ""


def normalize(cands: list[Candidate]) -> list[Candidate]:
    """Tidy whitespace and mark malformed edits "invalid" (kept, with the reason)."""
    out = []
    for c in cands:
        if not c.live:
            out.append(c)
            continue
        e = c.edit
        edit = dataclasses.replace(e, op=str(e.op).strip().lower(), target=str(e.target).strip(),
                                   content=_tidy(str(e.content)), section=str(e.section).strip())
        problem = _problem(edit)
        out.append(dataclasses.replace(c, edit=edit, fate="invalid" if problem else c.fate, note=problem or c.note))
    return out


# ---------------------------------------------------------------- dedupe, support

_BULLET = re.compile(r"(?m)^\s*(?:[-*+]|\d+[.)])\s+")
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def _key(edit: Edit) -> str:
    def flat(text: str) -> str:
        return " ".join(_BULLET.sub("", text).split()).casefold().rstrip(".!;:")
    return f"{flat(edit.target)}\x00{flat(edit.content)}"


def similarity(a: Edit, b: Edit) -> float:
    """0..1 similarity of two edits (symmetric); different ops never match.

    Edits that mention different numbers never match either: "at most 3 items" and
    "at most 5 items" are different rules however similar their characters are.
    """
    if a.op != b.op:
        return 0.0
    ka, kb = sorted((_key(a), _key(b)))  # SequenceMatcher is order-sensitive; sorting makes this symmetric
    if ka == kb:
        return 1.0
    if _NUMBERS.findall(ka) != _NUMBERS.findall(kb):
        return 0.0
    return difflib.SequenceMatcher(None, ka, kb, autojunk=False).ratio()


def dedupe(threshold: float = 0.85) -> Transform:
    """Fold near-identical edits into the first one seen; its minibatches become the union."""
    def run(cands: list[Candidate]) -> list[Candidate]:
        live, rest = _split(cands)
        kept: list[Candidate] = []
        folded: list[Candidate] = []
        for c in live:
            home = next((i for i, k in enumerate(kept) if similarity(k.edit, c.edit) >= threshold), None)
            if home is None:
                kept.append(c)
                continue
            k = kept[home]
            union = tuple(sorted(set(k.minibatches) | set(c.minibatches)))
            kept[home] = dataclasses.replace(k, minibatches=union)
            folded.append(dataclasses.replace(c, fate="merged", note=f"near-duplicate of: {_preview(k.edit)}"))
        return kept + folded + rest
    return run


def _preview(edit: Edit, width: int = 60) -> str:
    text = " ".join((edit.content or edit.target).split())
    return f"{edit.op} '{text[:width]}{'...' if len(text) > width else ''}'"


def support(cands: list[Candidate]) -> list[Candidate]:
    """edit.support = number of distinct minibatches that proposed it (never the model's claim)."""
    return [dataclasses.replace(c, edit=dataclasses.replace(c.edit, support=len(set(c.minibatches))))
            for c in cands]


# ---------------------------------------------------------------- merge, rank, clip

def merge(fn: Callable[[list[Candidate]], Sequence[Candidate]]) -> Transform:
    """Inject a merge function (e.g. an LLM merge) over the live candidates.

    `fn` returns the new live pool. Inputs absent from its result are marked "merged";
    results that are new are added as live candidates (their minibatches say who
    proposed them). `fn` must not raise: a caller wrapping a model returns its input
    unchanged on failure, so a failed merge call degrades to similarity dedupe.
    """
    def run(cands: list[Candidate]) -> list[Candidate]:
        live, rest = _split(cands)
        result = [c if c.fate == "pending" else dataclasses.replace(c, fate="pending") for c in fn(list(live))]
        gone = list(live)
        for c in result:
            if c in gone:
                gone.remove(c)
        note = "merged by the merge step"
        return result + [dataclasses.replace(c, fate="merged", note=note) for c in gone] + rest
    return run


def _priority(indexed: tuple[int, Candidate]) -> tuple[int, int, int]:
    i, c = indexed
    return (0 if c.edit.source == "failure" else 1, -c.edit.support, i)


def rank(extra: Callable[[list[Candidate]], Sequence[Candidate]] | None = None) -> Transform:
    """Failure-sourced first, then higher support, then original order; then `extra`.

    `extra` (e.g. an LLM ranker) may reorder the live candidates; any it drops keep
    their place after the ones it returned, and anything it invents is ignored, so a
    sloppy ranker can reorder but never add or lose an edit.
    """
    def run(cands: list[Candidate]) -> list[Candidate]:
        live, rest = _split(cands)
        ordered = [c for _, c in sorted(enumerate(live), key=_priority)]
        if extra is not None:
            remaining = list(ordered)
            picked = []
            for c in extra(list(ordered)):
                if c in remaining:
                    remaining.remove(c)
                    picked.append(c)
            ordered = picked + remaining
        return ordered + rest
    return run


def clip(budget: int) -> Transform:
    """The first `budget` live candidates are "selected", the other live ones "clipped"."""
    def run(cands: list[Candidate]) -> list[Candidate]:
        live, rest = _split(cands)
        n = max(0, budget)
        selected = [dataclasses.replace(c, fate="selected") for c in live[:n]]
        clipped = [dataclasses.replace(c, fate="clipped", note=f"over the step's budget of {n}") for c in live[n:]]
        return selected + clipped + rest
    return run


# ---------------------------------------------------------------- the whole pipeline

def candidates_of(proposals: Iterable[Proposal]) -> list[Candidate]:
    return [Candidate(edit=p.edit, minibatches=(p.minibatch,)) for p in proposals]


def prepare(proposals: Iterable[Proposal], *, dedupe_threshold: float = 0.85,
            merge: Callable[[list[Candidate]], Sequence[Candidate]] | None = None,
            rank: Callable[[list[Candidate]], Sequence[Candidate]] | None = None) -> list[Candidate]:
    """Everything up to clipping: the ranked live pool (for `autonomous`, its size is the pool)."""
    steps: list[Transform] = [normalize, dedupe(dedupe_threshold)]
    if merge is not None:
        # A merged edit is model output too: normalize it again before it counts.
        steps += [_merge(merge), normalize]
    steps += [support, _rank(rank)]
    return chain(*steps)(candidates_of(proposals))


def finish(cands: list[Candidate], budget: int) -> Selection:
    done = clip(budget)(cands)
    return Selection(tuple(c.edit for c in done if c.fate == "selected"), tuple(done))


def pipeline(proposals: Iterable[Proposal], budget: int, *, dedupe_threshold: float = 0.85,
             merge: Callable[[list[Candidate]], Sequence[Candidate]] | None = None,
             rank: Callable[[list[Candidate]], Sequence[Candidate]] | None = None) -> Selection:
    """normalize -> dedupe -> [merge] -> support -> rank -> clip(budget)."""
    return finish(prepare(proposals, dedupe_threshold=dedupe_threshold, merge=merge, rank=rank), budget)


def live_count(cands: Iterable[Candidate]) -> int:
    """Live candidates in a prepared pool: the ceiling for an autonomous budget."""
    return sum(1 for c in cands if c.live)


_merge, _rank = merge, rank  # the keyword arguments of prepare/pipeline shadow these names

"""Blame of a skill: which step (and which edit of it) introduced each line.  (pure: no I/O)

The incumbent chain is seed -> each step's "current" version -> each epoch's
"epoch_end" version (after the slow update). Walking it in order and diffing each
version against the one before, every inserted or rewritten line is attributed to the
version that introduced it, and unchanged lines keep their earlier attribution; so
the blame of the best skill says, line by line, where it came from. Within a step the
line is matched to the applied edit whose content contains it (or resembles it most),
because several edits land in one step.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

CHAIN_KINDS = ("seed", "current", "epoch_end")
_KIND_ORDER = {kind: n for n, kind in enumerate(CHAIN_KINDS)}
MIN_MATCH = 0.6  # a line resembling no edit's content better than this is not pinned on an edit


@dataclass(frozen=True)
class VersionRef:
    step: int
    kind: str  # seed | current | epoch_end (other kinds are not incumbents)
    sha: str


@dataclass(frozen=True)
class Version:
    step: int
    kind: str
    text: str


@dataclass(frozen=True)
class EditRef:
    """An applied edit of a step, as the blame needs it."""
    step: int
    idx: int
    op: str
    content: str
    target: str = ""


@dataclass(frozen=True)
class BlameLine:
    number: int  # 1-based line number in the blamed text
    text: str
    step: int  # step whose version introduced the line (0 = the seed)
    kind: str  # seed | current (a training step) | epoch_end (a slow update) | unknown
    edit_idx: int | None  # the edit of that step that wrote the line, when one can be pinned
    edit_op: str  # op of that edit, "" when none
    score_delta: float | None  # that step's candidate_score - current_score (None for the seed)


def incumbent_chain(refs: Iterable[VersionRef], upto_step: int | None = None,
                    final_sha: str | None = None) -> list[VersionRef]:
    """The versions where the incumbent changed, in order, up to `upto_step` (inclusive).

    A rejected or skipped step stores a "current" identical to the previous one; it is
    dropped here, so only the contents of real changes need to be loaded. With
    `final_sha` (the best skill's), the chain ends at the last version with that sha: a
    later change at the same step (an accepted slow update that was not a new best)
    is not part of the best skill's history.
    """
    ordered = sorted((r for r in refs if r.kind in _KIND_ORDER and (upto_step is None or r.step <= upto_step)),
                     key=lambda r: (r.step, _KIND_ORDER[r.kind]))
    chain: list[VersionRef] = []
    for ref in ordered:
        if not chain or ref.sha != chain[-1].sha:
            chain.append(ref)
    if final_sha is not None:
        ends = [n for n, ref in enumerate(chain) if ref.sha == final_sha]
        if ends:
            chain = chain[:ends[-1] + 1]
    return chain


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").splitlines()


def _pin(line: str, edits: Sequence[EditRef]) -> EditRef | None:
    """The edit of a step that most plausibly wrote `line`."""
    needle = line.strip()
    if not needle or not edits:
        return None
    for e in edits:
        if needle in e.content:
            return e
    best, best_ratio = None, MIN_MATCH
    for e in edits:
        for candidate in e.content.splitlines():
            ratio = difflib.SequenceMatcher(None, needle, candidate.strip(), autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio = e, ratio
    return best


def blame(chain: Sequence[Version], final_text: str, edits: Iterable[EditRef] = (),
          deltas: Mapping[tuple[int, str], float | None] | None = None) -> list[BlameLine]:
    """Per-line blame of `final_text` (normally the best skill) over `chain`.

    `chain` starts with the seed. If `final_text` is not the chain's last text, the
    remaining difference is attributed to kind "unknown" at the last step (it cannot
    happen for a consistent run, but a page must not fail on an inconsistent one).
    `deltas` maps (step, kind) to the score change of the step that produced it.
    """
    deltas = deltas or {}
    by_step: dict[int, list[EditRef]] = {}
    for e in edits:
        by_step.setdefault(e.step, []).append(e)
    versions = list(chain)
    last_step = versions[-1].step if versions else 0
    if not versions or _lines(versions[-1].text) != _lines(final_text):
        versions.append(Version(last_step, "unknown", final_text))

    prev_lines: list[str] = []
    prev_attr: list[tuple[int, str, EditRef | None]] = []
    for n, version in enumerate(versions):
        lines = _lines(version.text)
        attr: list[tuple[int, str, EditRef | None]] = [None] * len(lines)  # type: ignore[list-item]
        if n == 0 and version.kind == "seed":
            attr = [(version.step, "seed", None)] * len(lines)
        else:
            step_edits = by_step.get(version.step, []) if version.kind == "current" else []
            matcher = difflib.SequenceMatcher(None, prev_lines, lines, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                for j in range(j1, j2):
                    if tag == "equal":
                        attr[j] = prev_attr[i1 + (j - j1)]
                    else:
                        attr[j] = (version.step, version.kind, _pin(lines[j], step_edits))
        prev_lines, prev_attr = lines, attr

    out = []
    for number, (line, (step, kind, edit)) in enumerate(zip(prev_lines, prev_attr), start=1):
        out.append(BlameLine(number=number, text=line, step=step, kind=kind,
                             edit_idx=edit.idx if edit else None, edit_op=edit.op if edit else "",
                             score_delta=None if kind == "seed" else deltas.get((step, kind))))
    return out


def summary(lines: Sequence[BlameLine]) -> list[tuple[int, str, int]]:
    """(step, kind, number of lines) per origin, in step order: how much of the skill each step wrote."""
    counts: dict[tuple[int, str], int] = {}
    for line in lines:
        if line.text.strip():
            counts[(line.step, line.kind)] = counts.get((line.step, line.kind), 0) + 1
    return [(step, kind, n) for (step, kind), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1]))]

"""Seed ablation: the seed's own blocks put to the gate, one at a time.  (pure: no I/O)

Every part a run adds to a skill has beaten the incumbent at a gate; the seed's parts never
have, and a seed can hurt. A small target may read a list of labels with their descriptions
as a pull toward one of them (measured: on a held-out family the seed scored below no skill
on test, its replies over-using one label the seed's list describes). The start-of-run check
(gate_seed_against_no_skill) compares the whole seed with no skill; a block that hurts beside
others that help passes it. So a step whose candidate was not kept may try, without a model,
the incumbent minus one block of the seed: a run of lines between blank lines or headings
(a paragraph, a list), never a heading and never a protected block.

It is gated alone like a worked-examples trial, at the same level. The change was made from no
item, so every train item whose incumbent rollout is known is a fair test of it, beside the
selection split. Blocks are tried longest first (the most text, the most room to mislead), each
once; a block the incumbent no longer holds exactly once is not tried.
"""
from __future__ import annotations

import hashlib
from typing import Collection

from .patch import Edit, apply_edits
from .skill import code_lines, is_heading, protected_spans


def blocks(text: str) -> tuple[str, ...]:
    """The skill's blocks: maximal runs of non-blank, non-heading lines outside protected blocks,
    each as its exact text without the last newline. A fenced code block's lines, blank ones
    included, belong to the block around them: half a code example is not a block."""
    spans = protected_spans(text)
    out, run = [], []
    for start, end, line, in_code in code_lines(text):
        inside = any(s <= start < e for s, e in spans)
        if inside or not in_code and (not line.strip() or is_heading(line)):
            if run:
                out.append(text[run[0]:run[1]].rstrip("\r\n"))
            run = []
            continue
        run = [run[0] if run else start, end]
    if run:
        out.append(text[run[0]:run[1]].rstrip("\r\n"))
    return tuple(out)


def key(block: str) -> str:
    """A tried block's record in the run state (its text's hash: the state stays small)."""
    return hashlib.sha256(block.encode("utf-8")).hexdigest()[:16]


def edit(block: str) -> Edit:
    return Edit(op="delete", target=block, source="ablation",
                rationale="a block of the seed no gate has judged: the skill without it is gated against the skill "
                          "with it")


def for_step(skill: str, seed: str, tried: Collection[str], limit: int,
             fuzzy: float) -> tuple[Edit, tuple[str, ...], str] | None:
    """The next seed block to remove from `skill` (longest untried one the skill holds exactly
    once), the train items it shows (none) and the skill without it, as examples.for_step
    returns them; None when `limit` blocks were tried or none is left."""
    if len(tried) >= limit:
        return None
    held = [b for b in blocks(seed) if key(b) not in tried and skill.count(b) == 1]
    for block in sorted(held, key=lambda b: (-len(b), b)):
        found = edit(block)
        patch = apply_edits(skill, [found], fuzzy_threshold=fuzzy)
        if patch.applied and patch.text.strip():
            return found, (), patch.text
    return None

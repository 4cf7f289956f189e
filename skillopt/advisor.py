"""LLM advice for the edit pipeline: merge near-duplicate edits, rank them, and choose
the edit budget (the `autonomous` schedule). Each helper is injected into the pure
transforms as a plain function and never raises: an unusable reply leaves the pool as it was
(or the budget to the scheduled value), so a weak optimizer can only fail to help.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from .patch import Edit
from .prompts import clip, prompt_messages
from .models.jsonreply import as_int
from .proposals import RATIONALE_CHARS
from .skill import lines as skill_lines


def edit_listing(edits: Sequence[Edit], supports: Sequence[int]) -> str:
    """Numbered edits for the merge / rank / lr prompts: the text on its own line, easy to read."""
    out = []
    for i, (e, support) in enumerate(zip(edits, supports), 1):
        where = f' to "{e.section}"' if e.section else ""
        out.append(f"[{i}] {e.op}{where} (support {support}, from {e.source})")
        if e.target:
            out.append(f"    old: {clip(' / '.join(e.target.strip().splitlines()), 160)}")
        if e.content.strip():
            out.append(f"    new: {clip(' / '.join(e.content.strip().splitlines()), 240)}")
    return "\n".join(out)


def _edit_list(candidates: Sequence[Any]) -> str:
    return edit_listing([c.edit for c in candidates], [len(c.minibatches) for c in candidates])


def _numbers(value: object, key: str, n: int) -> list[int]:
    if not isinstance(value, dict) or not isinstance(value.get(key), list):
        raise ValueError(f"expected {{\"{key}\": [...]}}")
    flat = value[key]
    if key == "groups":
        flat = [x for g in flat for x in (g if isinstance(g, list) else [g])]
    nums = [x for x in flat if isinstance(x, int) and not isinstance(x, bool)]
    if len(nums) != len(flat) or any(not 1 <= x <= n for x in nums):
        raise ValueError(f"'{key}' must hold edit numbers from 1 to {n}")
    return nums


def llm_merge(optimizer, step: int) -> Callable[[list], list]:
    """A transforms.merge function: the optimizer groups live edits that say the same
    thing; each group becomes its first edit with the group's minibatches united (the
    others are then absent, which transforms.merge records as "merged"). An unusable
    reply returns the input unchanged."""
    def merge(candidates: list) -> list:
        if len(candidates) < 2:
            return list(candidates)
        schema = {"title": "merge", "type": "object", "required": ["groups"], "additionalProperties": False,
                  "properties": {"groups": {"type": "array", "maxItems": len(candidates), "items": {
                      "type": "array", "items": {"type": "integer", "minimum": 1, "maximum": len(candidates)}}}}}

        def validate(obj: object) -> list[list[int]]:
            _numbers(obj, "groups", len(candidates))
            return [g if isinstance(g, list) else [g] for g in obj["groups"]]

        groups, _ = optimizer.complete_json(prompt_messages("merge", edits=_edit_list(candidates)), stage="merge",
                                            step=step, schema=schema, validate=validate)
        if groups is None:
            return list(candidates)
        leader = list(range(len(candidates)))  # index -> index of the edit it folds into
        for group in groups:
            members = [n - 1 for n in dict.fromkeys(group) if leader[n - 1] == n - 1]
            for m in members[1:]:
                leader[m] = members[0]
        out = []
        for i, c in enumerate(candidates):
            if leader[i] != i:
                continue
            union = sorted(set().union(*(candidates[j].minibatches for j in range(len(candidates)) if leader[j] == i)))
            out.append(c if tuple(union) == tuple(c.minibatches) else dataclasses.replace(c, minibatches=tuple(union)))
        return out
    return merge


def llm_rank(optimizer, step: int, skill: str = "") -> Callable[[list], list]:
    """A transforms.rank `extra`: the live edits in the optimizer's order (those it does
    not name keep their order after the named ones); an unusable reply changes nothing."""
    def rank(candidates: list) -> list:
        if len(candidates) < 2:
            return list(candidates)
        schema = {"title": "rank", "type": "object", "required": ["order"], "additionalProperties": False,
                  "properties": {"order": {"type": "array", "maxItems": len(candidates),
                                           "items": {"type": "integer", "minimum": 1, "maximum": len(candidates)}}}}
        order, _ = optimizer.complete_json(
            prompt_messages("rank", skill=clip(skill.strip(), 2000) or "(not shown)", edits=_edit_list(candidates)),
            stage="rank", step=step, schema=schema, validate=lambda obj: _numbers(obj, "order", len(candidates)))
        if order is None:
            return list(candidates)
        named = list(dict.fromkeys(order))
        return [candidates[n - 1] for n in named] + [c for i, c in enumerate(candidates, 1) if i not in named]
    return rank


def choose_budget(optimizer, skill: str, pool_edits: Sequence[Edit], *, lr: int, min_lr: int,
                  step: int) -> int | None:
    """The autonomous schedule's question: how many edits now? None when unusable
    (schedules.clamp_autonomous then falls back to the cosine value and clamps)."""
    if not pool_edits:
        return None
    listing = edit_listing(pool_edits, [e.support for e in pool_edits])
    schema = {"title": "step_size", "type": "object", "required": ["count", "reason"], "additionalProperties": False,
              "properties": {"count": {"type": "integer", "minimum": 0, "maximum": lr},
                             "reason": {"type": "string", "maxLength": RATIONALE_CHARS}}}

    def validate(obj: object) -> int:
        count = as_int(obj.get("count")) if isinstance(obj, dict) else None
        if count is None:
            raise ValueError("expected {\"count\": <integer>, \"reason\": \"...\"}")
        return count

    count, _ = optimizer.complete_json(
        prompt_messages("lr", lines=len(skill_lines(skill)), min_lr=min_lr, lr=lr, edits=listing),
        stage="lr", step=step, schema=schema, validate=validate)
    return count

"""The reply-template trial: the scorer's reply layout as a section of the skill.  (pure: no I/O)

A seed that scores 0 because its replies miss the form the scorer reads (no "Answer:" line,
a sentence around the label) is a failure of format, not of knowledge, and a small optimizer
often cannot put the fix into words the target follows: it copies the scorer's wording as a
bare line. The scorer itself knows the layout it accepts (tasks/replies.py), so the engine
offers it without a model: once per run, at the first step whose candidate was not kept, the
incumbent plus a "Reply template" section is gated alone on the selection split, like a
worked-examples trial. It is kept only if its own paired gate accepts it; its items won and
lost are not pooled with the worked examples' (it is a different change). A task whose
scorer has no fixed layout, or a skill that already has the section, gets no trial.
"""
from __future__ import annotations

from .patch import Edit, apply_edits
from .skill import sections

SECTION = "Reply template"
LEAD = "Every reply follows this layout exactly:"


def edit(skill: str, layout: str) -> Edit | None:
    """The edit adding the template section, or None: no layout, or the skill has the section."""
    if not layout.strip() or any(s.title == SECTION for s in sections(skill)):
        return None
    return Edit(op="add", content=f"## {SECTION}\n\n{LEAD}\n\n{layout.strip()}",
                rationale="the layout of a reply the scorer accepts, written by the scorer, for the target to follow",
                source="template")


def for_skill(skill: str, layout: str, fuzzy: float) -> tuple[Edit, tuple[str, ...], str] | None:
    """The template edit, the train items it shows (none) and the skill with it applied, as
    examples.for_step returns them; None when there is none to try."""
    found = edit(skill, layout)
    patch = apply_edits(skill, [found], fuzzy_threshold=fuzzy) if found else None
    return (found, (), patch.text) if found and patch and patch.applied else None

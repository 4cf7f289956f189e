"""Backprop: the optimizer reads minibatches of trajectories and proposes edits.

Built for small optimizers (a 1.5B local model with a 4k context), which the published
SkillOpt could not use: short prompts (each trajectory clipped, the skill never repeated
inside trajectories), failures grouped by expected answer so a pattern is visible, a
bounded JSON schema, and anchors by position: the skill is shown with numbered lines and
the optimizer names a line number or a heading from an enum instead of copying text it
would misquote; an edit by line number carries that line's number and text, and patch
applies it at that line (duplicate lines are no ambiguity), or reports anchor_not_found if
an earlier edit changed it. A 1.5B model copies what it is shown, so each failure group
also gets its clue words (shared by the group, rare elsewhere), a draft rule built from
them and one contrasting success. A proposed edit that names a missing line or section,
still holds a template slot, is too long, is malformed, repeats an edit rejected alone or
copies the prompt's own wording back (echo.py) is dropped, and returned with its reason
(DroppedEdit) so the run's record keeps it.
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Sequence

from . import window
from .config import RunConfig
from .errors import ModelError
from .evidence import STOP_WORDS, Evidence, contradiction, repair
from .fitting import complete_fitted
from .minibatch import make_minibatches
from .models.providers import prompt_fault
from .patch import Edit
from .prompts import clip, fixed_text, prompt_messages
from .proposals import EXTRA_EDITS, DroppedEdit, parse_edits, reflect_schema
from .skill import lines as skill_lines
from .skill import sections as skill_sections
from .state import RejectedEdit
from .tasks.task import Scoring, Trajectory

PATTERNS_SHOWN = 6  # step buffer entries shown in a prompt (newest kept): prompt economy
MAX_REJECTED = 8


# --- the step buffer (memory of this epoch) -----------------------------------------------

@dataclass(frozen=True)
class StepBuffer:
    patterns: tuple[str, ...] = ()
    rejected: tuple[RejectedEdit, ...] = ()


@dataclass(frozen=True)
class MinibatchResult:
    index: int
    kind: str  # failure | success
    item_ids: tuple[str, ...]
    ok: bool
    summary: str
    edits: tuple[Edit, ...]
    error: str = ""
    dropped: tuple[DroppedEdit, ...] = ()  # proposed edits discarded before the pipeline, with their reason


def describe_edit(edit: Edit, limit: int = 160) -> str:
    where = f" under \"{edit.section}\"" if edit.section else ""
    where += f" at \"{clip(edit.target, 60)}\"" if edit.target else ""
    return f"{edit.op}{where}: \"{clip(edit.content.strip(), limit)}\"" if edit.content.strip() else f"{edit.op}{where}"


def _notes(meta_skill: str, buffer: StepBuffer) -> str:
    parts = []
    if meta_skill.strip():
        parts.append("STRATEGY NOTES (lessons from earlier epochs):\n" + meta_skill.strip())
    patterns = list(dict.fromkeys(p.strip() for p in buffer.patterns if p.strip()))[-PATTERNS_SHOWN:]
    if patterns:
        parts.append("FAILURE PATTERNS SEEN EARLIER THIS EPOCH:\n" + "\n".join(f"- {p}" for p in patterns))
    if buffer.rejected:
        parts.append("REJECTED EDITS (they did not improve the score; never propose an edit rejected alone "
                     "again; edits rejected together may have failed because of one another):\n"
                     + "\n".join(_rejected_lines(buffer.rejected[-MAX_REJECTED:])))
    return "".join(f"\n{p}\n" for p in parts)


def _rejected_lines(rejected: Sequence[RejectedEdit]) -> list[str]:
    """An edit rejected alone on one line; the edits of one rejected multi-edit candidate
    under one header, so the optimizer sees which rejection is evidence against an edit
    itself and which only says that the edits did not help together."""
    out: list[str] = []
    group = None
    for r in rejected:
        score = f"{r.reason} {r.score_before:.3f} -> {r.score_after:.3f}"
        if not r.companions:
            out.append(f"- {describe_edit(r.edit)} ({score}, rejected alone)")
            group = None
            continue
        if group != (r.step, r.reason):
            group = (r.step, r.reason)
            out.append(f"- rejected together with {len(r.companions)} other edit{'s' if len(r.companions) > 1 else ''}"
                       f" ({score}); one may be fine on its own:")
        out.append(f"  - {describe_edit(r.edit)}")
    return out


# --- one reflection call ------------------------------------------------------------------

def numbered(skill: str, line_chars: int = 0) -> str:
    """The skill with its line numbers; `line_chars` > 0 clips each line to that (a view only:
    edits name lines by number, and patch applies them to the whole line)."""
    return "\n".join(f"{n:>3}| {clip(line, line_chars) if line_chars else line}"
                     for n, (_, _, line) in enumerate(skill_lines(skill), 1))


def section_paths(skill: str) -> list[str]:
    return list(dict.fromkeys(s.path_str for s in skill_sections(skill) if s.path_str))


def common_lines(prompts: Sequence[str]) -> tuple[str, ...]:
    """Lines every prompt of a minibatch has (the task template's boilerplate): shown once,
    not once per case, which keeps a small optimizer's prompt short."""
    if len(prompts) < 2:
        return ()
    sets = [{line.strip() for line in p.splitlines()} for p in prompts[1:]]
    first = [line.strip() for line in prompts[0].splitlines()]
    return tuple(dict.fromkeys(line for line in first if line and all(line in s for s in sets)))


def format_case(n: int, t: Trajectory, limit: int, skill: str = "", common: Sequence[str] = ()) -> str:
    """One trajectory in at most about `limit` chars; the task gets what the rest leaves."""
    prompt = t.prompt
    if skill.strip() and skill.strip() in prompt:  # a plug-in task that embeds the skill: never repeat it
        prompt = prompt.replace(skill.strip(), "[the skill]")
    if common:
        drop = set(common)
        prompt = "\n".join(line for line in prompt.splitlines() if line.strip() not in drop)
    parts = (prompt.strip(), t.output.strip(), t.expected.strip(), t.evaluation.feedback.strip())
    side = max(40, min(200, limit // 3))  # output and feedback; the task gets what they leave
    output, expected, feedback = clip(parts[1], side), clip(parts[2], min(side, 120)), clip(parts[3], side)
    task = clip(parts[0], max(limit - len(output) - len(expected) - len(feedback) - 60, 80))
    clipped = (task, output, expected, feedback) != parts
    note = f" (clipped from {sum(map(len, parts))} chars; cuts are marked)" if clipped else ""
    return (f"--- case {n}{note} ---\nTask:\n{task}\nOutput: {output}\nExpected: {expected}\n"
            f"Feedback: {feedback}")


_WORD = re.compile(r"[a-z][a-z0-9'-]+")
CLUE_WORDS = 4  # a small model copies what it is shown: a few telling words, not a word list


@functools.lru_cache(maxsize=4096)  # each group's clue words count every task of the step again
def _words(text: str) -> frozenset[str]:
    return frozenset(w.strip("'-") for w in _WORD.findall(text.casefold()) if len(w.strip("'-")) >= 3) - STOP_WORDS


def clue_words(group: Sequence[str], others: Sequence[str], limit: int = CLUE_WORDS) -> tuple[str, ...]:
    """Words most of a group's tasks share and tasks with other expected answers rarely
    use: the observable clue a rule can name. A small optimizer rarely finds it alone
    (it names the queue or the template instead); counting words finds it for any task.
    Empty for a group of one: one case shows no pattern."""
    if len(group) < 2:
        return ()
    inside = Counter(w for text in group for w in _words(text))
    outside = Counter(w for text in others for w in _words(text))
    n_out = max(len(others), 1)
    scored = [(c / len(group) - outside[w] / n_out, c, w) for w, c in inside.items() if c >= 2]
    scored = [x for x in scored if x[0] > 0.25]
    return tuple(w for _, _, w in sorted(scored, key=lambda x: (-x[0], -x[1], x[2]))[:limit])


def task_text(t: Trajectory, common: Sequence[str]) -> str:
    drop = set(common)
    return "\n".join(line for line in t.prompt.splitlines() if line.strip() not in drop)


def _cases_text(batch: Sequence[Trajectory], limit: int, skill: str, common: Sequence[str],
                context: Sequence[Trajectory] = ()) -> str:
    """The cases, with a header over each run of one expected answer (make_minibatches
    grouped them) so a small model sees the groups it should explain. With `context`
    (the step's other trajectories) each group also gets its clue words, a draft rule the
    optimizer may copy or fix, and one case that rightly got the wrong answer, to contrast."""
    out, n = [], 0
    while n < len(batch):
        group = batch[n].expected.strip()
        size = next((k for k in range(n, len(batch)) if batch[k].expected.strip() != group), len(batch)) - n
        members = batch[n:n + size]
        answered = Counter(clip(t.output.strip(), 40) or "(nothing)" for t in members)
        said = ", ".join(f'"{a}" x{c}' for a, c in answered.most_common())
        out.append(f"=== {size} case{'s' if size > 1 else ''} expecting \"{clip(group, 80)}\" "
                   f"(the assistant said {said}) ===")
        out.extend(format_case(n + k + 1, members[k], limit, skill, common) for k in range(size))
        wrong = answered.most_common(1)[0][0]
        # Only a group answered with ANOTHER answer has a clue to find: a success group, or
        # failures that gave the right answer in the wrong form, have no clue that tells them apart.
        if context and _bare(wrong) != _bare(group):
            out.extend(_clues(members, group, wrong, context, common))
        n += size
    return "\n".join(out)


def _bare(answer: str) -> str:
    return " ".join(re.sub(r"[^\w\s-]", " ", answer.casefold()).split())


def _clues(members: Sequence[Trajectory], group: str, wrong: str, context: Sequence[Trajectory],
           common: Sequence[str]) -> list[str]:
    """A failure group's clue words with a draft rule, and one case that rightly got the wrong answer.

    The draft names only the right answer. A small target answers a label that a rule names
    even after "not": the optimizer copied a draft "If a task mentions order, answer shipping,
    not account." into a kept skill, and 10 of the 18 billing tasks that the seed had right,
    all mentioning an order, were then answered "account"; none "shipping"."""
    out = []
    others = [t for t in context if t.expected.strip() != group]
    answers = {w for t in (*members, *context) for w in _words(f"{t.expected} {t.output}")}
    clues = tuple(w for w in clue_words([task_text(t, common) for t in members],
                                        [task_text(t, common) for t in others], CLUE_WORDS + 2)
                  if w not in answers)[:CLUE_WORDS]  # an answer's name is no clue to it
    if clues:
        out.append(f"Words these {len(members)} tasks share: {', '.join(clues)}. Draft rule (fix it if these words "
                   f"are not the real clue): - If a task mentions {' or '.join(clues)}, answer {clip(group, 80)}.")
    contrast = next((t for t in others if t.expected.strip() == wrong and t.evaluation.hard >= 1
                     and t.item_id not in {m.item_id for m in members}), None)
    if contrast is not None:
        out.append(f"Contrast: this task rightly got \"{clip(wrong, 40)}\": "
                   f"{clip(' '.join(task_text(contrast, common).split()), 200)}")
    return out


# What the optimizer is told to look for, by the kind of answer the task scores (labels go
# through the grouped template with clue words and draft rules instead).
GUIDANCE = {
    "number": "Each task has one right number. For each case compare Output with Expected and read the Feedback: "
              "was the FORM wrong (no final answer line, units, rounding) or the VALUE (a step missed, a quantity "
              "misread)? Write instructions that fix the cause: the output form, or the method (which quantities "
              "to compute, in which order).",
    "fields": "Each task asks for one JSON object with fixed fields. Read the Feedback for the fields that were "
              "missing, wrong or badly formatted. Write instructions about the reply's JSON form and, per field, "
              "where its value is found and how it is written (dates, amounts, codes).",
    "text": "Read the Feedback: it says what each reply lacked. Write instructions about what every reply must "
            "contain and how it must be written.",
}


def _template(scoring: Scoring | None) -> tuple[str, dict[str, str]]:
    """The reflection template for `scoring` and its values that are instructions, not data:
    the grouped template for label answers (and tasks that do not say how they score), the
    open template with its kind's guidance for every other kind."""
    if scoring is None or scoring.kind not in GUIDANCE:
        return "reflect", {}
    return "reflect_open", {"guidance": GUIDANCE[scoring.kind]}


def _messages(scoring: Scoring | None, kind: str, batch: tuple[Trajectory, ...], skill: str, budget: int,
              notes: str, sections: list[str], shape: window.Shape, context: Sequence[Trajectory]) -> list[dict]:
    """The reflection prompt of `_template(scoring)`, the open one with the scoring rule; in
    `shape` (its cases' length, and how the skill's lines are shown)."""
    limit = shape.case_chars
    header = ("failures: the assistant got these wrong" if kind == "failure"
              else "successes: the assistant got these right; add only knowledge the skill lacks")
    common = common_lines([t.prompt for t in batch])
    shared = "EVERY TASK BELOW ALSO SAYS:\n" + "\n".join(common) + "\n\n" if common else ""
    values = dict(skill=numbered(skill, shape.line_chars), sections="; ".join(f'"{s}"' for s in sections) or "(none)",
                  notes=notes, kind=header, common=shared, budget=budget)
    name, fixed = _template(scoring)
    if name == "reflect":
        return prompt_messages(name, **values,
                               cases=_cases_text(batch, limit, skill, common, context if kind == "failure" else ()))
    cases = "\n".join(format_case(n, t, limit, skill, common) for n, t in enumerate(batch, 1))
    return prompt_messages(name, **values, **fixed, cases=cases,
                           scoring=scoring.description.rstrip(".") or "read the Feedback of each case")


def _instructions(scoring: Scoring | None, batch: Sequence[Trajectory]) -> str:
    """What an edit copied back from the prompt would be made of: the fixed wording of the
    template `_messages` picks for `scoring`, and the lines every task of the batch already
    says (the target reads those with each task, so the skill restating them adds nothing)."""
    name, fixed = _template(scoring)
    return "\n\n".join([fixed_text(name, **fixed), *common_lines([t.prompt for t in batch])])


def _reflect_one(optimizer, index: int, kind: str, batch: tuple[Trajectory, ...], skill: str, budget: int,
                 notes: str, sections: list[str], limit: int, step: int,
                 context: Sequence[Trajectory] = (), rejected: dict | None = None,
                 scoring: Scoring | None = None, evidence: Evidence | None = None) -> MinibatchResult:
    """`rejected`: the edits the gate or a person rejected alone, by _key; a small optimizer
    copies the rejected list it is shown, so a repeat is dropped here rather than tried again.
    An edit rejected with others is not evidence against it alone: it may come back."""
    n_lines = len(skill_lines(skill))
    cap = max(budget, 0) + EXTRA_EDITS
    answers = [t.expected for t in batch]
    instructions = _instructions(scoring, batch)

    def shown(shape: window.Shape) -> tuple[Trajectory, ...]:
        return tuple(batch[i] for i in window.keep(answers, shape.cases))

    shape, value, reply = complete_fitted(
        optimizer, window.ladder(limit, len(batch)),
        lambda shape: _messages(scoring, kind, shown(shape), skill, budget, notes, sections, shape, context),
        describe=lambda shape: shape.describe(len(batch), limit), stage="reflect", step=step,
        schema=reflect_schema(budget, sections, n_lines),
        validate=lambda obj: parse_edits(obj, skill, kind, cap, instructions))
    ids = tuple(t.item_id for t in shown(shape))
    if value is None:
        return MinibatchResult(index=index, kind=kind, item_ids=ids, ok=False, summary="", edits=(),
                               error=reply.error or "unusable reply")
    rejected = rejected or {}
    kept = tuple(e for e in value.edits if _key(e) not in rejected)
    again = tuple(DroppedEdit(e, "repeat_of_rejected", _repeat_detail(rejected[_key(e)]))
                  for e in value.edits if _key(e) in rejected)
    against = {e: contradiction(e.content, evidence) for e in kept if evidence and e.op != "delete"}
    # A contradicted rule whose trigger's tasks clearly share another answer goes on with that
    # answer; the proposal itself is still dropped, with its evidence, as `contradicted`.
    fixed = {e: fix for e, why in against.items() if why and (fix := repair(e.content, evidence))}
    contradicted = tuple(DroppedEdit(e, "contradicted", why + ("; rewritten to their answer" if e in fixed else ""))
                         for e, why in against.items() if why)
    edits = tuple(replace(e, content=fixed[e], rationale=f"{e.rationale} [answer rewritten to the train data's]")
                  if e in fixed else e for e in kept if e in fixed or not against.get(e))
    return MinibatchResult(index=index, kind=kind, item_ids=ids, ok=True, summary=value.summary, edits=edits,
                           dropped=value.dropped + again + contradicted)


def _repeat_detail(r: RejectedEdit) -> str:
    who = {"human": "a person", "check": "the minibatch check"}.get(r.reason, "the gate")
    return f"repeats an edit {who} rejected alone at step {r.step}"


def _key(edit: Edit) -> tuple[str, str, str]:
    return edit.op, " ".join(edit.target.split()).casefold(), " ".join(edit.content.split()).casefold()


def reflect(optimizer, skill: str, trajectories: Sequence[Trajectory], *, budget: int, buffer: StepBuffer,
            meta_skill: str, config: RunConfig, step: int, seed: int,
            scoring: Scoring | None = None, evidence: Evidence | None = None) -> tuple[MinibatchResult, ...]:
    """One optimizer call per minibatch, `analyst_workers` at a time (one at a time, in order, for a
    model that takes one call at a time), results in minibatch order.

    An unusable reply becomes a failed MinibatchResult; ModelError and BudgetExhausted
    propagate (the trainer ends or stops the run on them). With `evidence`, a proposed rule
    the train data contradicts is dropped as `contradicted`, its counts stored as the reason.
    """
    batches = make_minibatches(trajectories, config.minibatch_size, seed, config.failure_only)
    if not batches:
        return ()
    notes = _notes(meta_skill, buffer)
    sections = section_paths(skill)
    usable = tuple(t for t in trajectories if not t.error)  # clue words and contrasts come from the whole step
    rejected = {_key(r.edit): r for r in buffer.rejected if not r.companions}  # only lone rejections block
    calls = [(_reflect_one, optimizer, i, kind, batch, skill, budget, notes, sections, config.trajectory_chars,
              step, usable, rejected, scoring, evidence) for i, (kind, batch) in enumerate(batches)]
    workers = min(config.analyst_workers, optimizer.useful_concurrency() or config.analyst_workers, len(batches))
    if workers <= 1:
        # A model computed in this process one call at a time (the embedded one) gets its calls in
        # minibatch order. From a pool they would queue on its lock in whichever order the threads
        # won, and llama.cpp's reply can change with the prompt its KV cache held before (a reused
        # prefix was computed in other batches): the same run proposed other edits each time.
        return tuple(fn(*args) for fn, *args in calls)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reflect")
    try:
        futures = [pool.submit(*call) for call in calls]
        return tuple(f.result() for f in futures)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # after a fatal error, queued calls never start


def alive(minibatches: Sequence[MinibatchResult], model: str) -> tuple[MinibatchResult, ...]:
    """The step's minibatches, unless every reflection call failed (an unparseable reply is the
    optimizer's answer, and a prompt longer than its context is the prompt's fault, not a
    failure): a dead optimizer would otherwise skip every step and "complete" having learned
    nothing, so that raises ModelError."""
    dead = [m for m in minibatches
            if not m.ok and not m.error.startswith("invalid_json") and not prompt_fault(m.error)]
    if minibatches and len(dead) == len(minibatches):
        raise ModelError(f"all {len(dead)} reflection calls of {model} failed ({dead[0].error}); "
                         f"stopping instead of skipping every step")
    return tuple(minibatches)

"""The non-oracle simulated optimizer (`sim/learner`): it learns rules from the cases it is shown.

`sim/optimizer` knows the world's hidden rules (it asks simworld which rule each case falls
under): an oracle, right for testing the engine's plumbing, wrong for judging what an optimizer
can learn. `sim/learner` knows nothing of the world. It reads only what a real optimizer reads,
SkillOpt's own prompts (the numbered skill, the cases with task, output, expected answer and
feedback, contrast tasks, rejected edits), and proposes rules by one fixed procedure (clues.py):
group the cases by expected answer, find the features of the task text that the group shares
and the prompt's other cases rarely have, and propose "If the <field> line mentions "<word>",
answer <expected>." It knows what any language model knows (English stop words, US state
abbreviations) and nothing of the task's rules.

Noise: each proposed rule is, at rate `noise`, replaced by a wrong one (the same condition,
another answer) or an irrelevant one (a word that only one case of the group has). Every draw is
a hash of the prompt and `seed`, so a prompt always gets the same reply, as with every sim model.
Options: `sim/learner?noise=0.2&seed=0&malformed=0&repair=0.6`.
"""
from __future__ import annotations

import json
import re
from typing import Callable, Mapping

from .sim_clues import Case, Rule, find_rule, line_tokens, noisy_rule, read_cases, read_labels, unit

PROTECTED = ("SLOW_UPDATE_START", "SLOW_UPDATE_END")  # the prompt says the lines between are read-only
_RULE = re.compile(r"^[-*\s]*If (.+), answer ([\w-]+)\.?\s*$", re.I)


def _section(user: str, header: str) -> str:
    """The text under an ALL-CAPS header line of a prompt, up to the next blank line + header."""
    m = re.search(rf"^{re.escape(header)}[^\n]*\n(.*?)(?=\n\n[A-Z][A-Z]+\b|\Z)", user, re.S | re.M)
    return m.group(1).strip() if m else ""


def _numbered_skill(user: str) -> list[str]:
    block = user.split("SKILL (numbered lines):", 1)[-1].split("\nSECTIONS:", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\s*\d+\| ?(.*)$", block, re.M)]


def _protected(lines: list[str]) -> set[int]:
    """Line numbers inside the read-only guidance block (markers included)."""
    out, inside = set(), False
    for n, line in enumerate(lines, 1):
        start, end = PROTECTED[0] in line, PROTECTED[1] in line
        if start or end or inside:
            out.add(n)
        inside = (inside or start) and not end
    return out


def _norm(text: str) -> str:
    return " ".join(line_tokens(text))


def groups(cases: list[Case]) -> list[tuple[str, list[Case]]]:
    """Cases by expected answer, largest group first (ties: first seen)."""
    by: dict[str, list[Case]] = {}
    for case in cases:
        by.setdefault(case.expected, []).append(case)
    return sorted(by.items(), key=lambda kv: -len(kv[1]))


def _edit(rule: Rule, lines: list[str], protected: set[int], home: str, labels: frozenset[str]) -> dict | None:
    """The edit that puts `rule` into the skill: None when a line already says it; a replace of
    the line that gives the same clue another answer; else an add to the rules' section."""
    about = [n for n, line in enumerate(lines, 1) if n not in protected and rule.tokens & set(line_tokens(line))]
    named = {n: labels & set(line_tokens(lines[n - 1])) for n in about}
    if any(rule.label in named[n] for n in about):
        return None
    edit = {"op": "add", "section": home, "line": 0, "content": rule.text(),
            "rationale": f"{rule.support} cases expecting {rule.label} share: {rule.condition}"[:200]}
    wrong = [n for n in about if named[n]]
    return {**edit, "op": "replace", "section": "", "line": wrong[0]} if wrong else edit


def propose(user: str, cases: list[Case], contrasts: list[Case], opts: Mapping[str, float],
            budget: int, lines: list[str], home: str = "") -> tuple[list[dict], list[str]]:
    """(edits, findings): one rule per group of cases, noisy at rate `noise`, at most `budget`."""
    labels = read_labels(user, cases + contrasts)
    protected = _protected(lines)
    rejected = _norm(_section(user, "REJECTED EDITS"))
    edits, found = [], []
    for label, group in groups(cases):
        if len(edits) >= budget:
            break
        others = [c for c in cases if c.expected != label] + contrasts
        rule = find_rule(group, others, labels)
        if rule is not None and unit(opts["seed"], "noise", user, label) < opts["noise"]:
            rule = noisy_rule(rule, group, others, labels, (opts["seed"], user, label))
        edit = _edit(rule, lines, protected, home, labels) if rule is not None else None
        if edit is None or (edit["content"] and _norm(edit["content"]) in rejected):
            continue  # covered already, or refused by the gate before
        edits.append(edit)
        found.append(f"{len(group)} cases expecting {label}: {rule.condition}")
    return edits, found


def _reflect(user: str, opts: Mapping[str, float]) -> dict:
    lines = _numbered_skill(user)
    sections = re.findall(r'"([^"]+)"', user.split("SECTIONS:", 1)[-1].split("\n", 1)[0])
    home = next((s for s in sections if "rule" in s.lower()), "")  # where rules go, if the skill says
    m = re.search(r"at most (\d+) edits", user)
    cases, contrasts = read_cases(user.split("\nCASES (", 1)[-1])
    edits, found = propose(user, cases, contrasts, opts, int(m.group(1)) if m else 2, lines, home)
    return {"summary": "; ".join(found)[:300] or "no clue that the skill lacks", "edits": edits}


def _listing(user: str) -> list[tuple[str, int]]:
    """(new text, support) of each "[n] ..." entry of an edit listing."""
    out = []
    for block in re.split(r"^\[\d+\] ", user, flags=re.M)[1:]:
        m = re.search(r"\(support (\d+)", block)
        new = re.search(r"^\s+new: (.*)$", block, re.M)
        out.append((new.group(1) if new else "", int(m.group(1)) if m else 1))
    return out


def rule_key(text: str) -> tuple[str, frozenset[str]] | None:
    """(answer, clue words) of a rule in the learner's form, None for any other text."""
    m = _RULE.match(text.strip())
    if m is None:
        return None
    clues = {w.lower() for w in re.findall(r'"([^"]+)"', m.group(1))}
    clues |= {t for t in line_tokens(m.group(1)) if t.isdigit()}
    return m.group(2).lower(), frozenset(clues)


def _merge(user: str, opts: Mapping[str, float]) -> dict:
    keys = [rule_key(text) for text, _ in _listing(user)]
    out: list[list[int]] = []
    for i, key in enumerate(keys, 1):  # the same answer for an overlapping clue: the same rule
        home = next((g for g in out if key and keys[g[0] - 1] and keys[g[0] - 1][0] == key[0]
                     and keys[g[0] - 1][1] & key[1]), None)
        if home is None:
            out.append([i])
        else:
            home.append(i)
    return {"groups": out}


def _rank(user: str, opts: Mapping[str, float]) -> dict:
    entries = _listing(user)
    keys = [rule_key(text) for text, _ in entries]
    order = sorted(range(1, len(entries) + 1), key=lambda i: (
        -entries[i - 1][1], keys[i - 1] is None, len(keys[i - 1][1]) if keys[i - 1] else 0, i))
    return {"order": order}


def _lr(user: str, opts: Mapping[str, float]) -> dict:
    m = re.search(r"between (\d+) and (\d+)", user)
    low, high = (int(m.group(1)), int(m.group(2))) if m else (1, 4)
    answers = {key[0] for text, _ in _listing(user) if (key := rule_key(text))}
    return {"count": max(low, min(high, len(answers))), "reason": f"rules for {len(answers)} distinct answers"}


def _slow_update(user: str, opts: Mapping[str, float]) -> dict:
    failing, _ = read_cases(_section(user, "STILL FAILING CASES"))
    lines = user.split("CURRENT SKILL:", 1)[-1].strip("\n").split("\n")
    edits, _ = propose(user, failing, [], {**opts, "noise": 0.0}, 4, lines)
    bullets = [e["content"].lstrip("- ") for e in edits if e["content"]]
    m = re.search(r"improved (\d+)", user)
    if m and int(m.group(1)):
        bullets.append(f"Keep the rules added last epoch: they fixed {m.group(1)} task"
                       f"{'s' if int(m.group(1)) > 1 else ''}.")
    return {"guidance": (bullets or ["Keep the current rules: they work on these tasks."])[:6]}


def _meta(user: str, opts: Mapping[str, float]) -> dict:
    accepted = [ln for ln in _section(user, "ACCEPTED EDITS").splitlines() if ln.startswith("- ")]
    rejected = [ln for ln in _section(user, "REJECTED EDITS").splitlines() if ln.startswith("- ")]
    notes = [ln.lstrip("- ").strip() for ln in _section(user, "CURRENT NOTES").splitlines() if ln.startswith("- ")]
    new = []
    if accepted:
        new.append(f"State one rule per failure group: the words its tasks share and the expected answer; "
                   f"{len(accepted)} such edits were accepted.")
    if rejected:
        new.append(f"Name words that every task of the group has: {len(rejected)} rules on other words "
                   "were rejected.")
    m = re.search(r"regressed (\d+)", user)
    if m and int(m.group(1)):
        new.append(f"Check that a new rule leaves cases that were right unchanged ({m.group(1)} regressed).")

    def gist(note: str) -> str:  # a fresh count replaces the old note instead of joining it
        return " ".join(note.lower().split()[:5])

    merged = list({gist(n): n for n in reversed(new + notes)}.values())[::-1][:8]
    return {"notes": merged or ["Propose rules that name the words a group of failing tasks shares."]}


ANSWERS: dict[str, Callable[[str, Mapping[str, float]], dict]] = {
    "reflect": _reflect, "merge": _merge, "rank": _rank, "lr": _lr, "slow_update": _slow_update, "meta": _meta}


def answer(messages: list[dict], opts: Mapping[str, float]) -> str:
    """Reply to one optimizer call (a repair re-ask included) as text."""
    system = str(messages[0].get("content", "")) if messages else ""
    user = str(messages[1].get("content", "")) if len(messages) > 1 else ""
    m = re.search(r"<!-- skillopt:(\w+) -->", system)
    if m is None or m.group(1) not in ANSWERS:
        return "The simulated learner only answers SkillOpt's own prompts."
    text = json.dumps(ANSWERS[m.group(1)](user, opts), ensure_ascii=False)
    repairs = sum(1 for msg in messages if msg.get("role") == "assistant")
    fail = opts["malformed"] if repairs == 0 else 1.0 - opts["repair"]
    if unit("malformed", opts["seed"], system, user, repairs) < fail:
        return text[:int(len(text) * (0.3 + 0.5 * unit("cut", user, repairs)))]  # cut off mid-JSON
    return text


"""The simulated optimizer (`sim/optimizer`): answers SkillOpt's own prompts from the world.

It reads exactly what a real optimizer reads (the templates in skillopt/prompts/, told
apart by their `<!-- skillopt:NAME -->` marker), infers the house rule behind each case
from the order text and the expected route, and replies in the requested JSON, with
faults at the configured rates: harmful (contradicting) rules, over-specific rules about
one order, duplicates of rules already present, wrong anchors (a line that does not exist
or an invented heading) and malformed JSON, which the repair re-ask fixes `repair` of the
time. Strategy notes (the meta skill) that warn against a fault halve its rate: the
simulated counterpart of an optimizer learning from its notes. Everything is a hash of
the prompt, so a prompt always gets the same reply.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable, Mapping

from .simworld import (ORDER_CODE, RULES, RULES_BY_ID, Rule, line_routes, one_order_lines, parse_order, rule_for,
                       skill_states, tokens, unit)

_INVENTED_HEADINGS = ("Routing Rules", "Shipping policy", "Special cases", "Dispatch rules")
# Words in the strategy notes that make the simulated optimizer avoid a fault (rate halved).
_LESSONS = {"harmful": "contradict", "over_specific": "specific", "duplicate": "already", "wrong_anchor": "heading"}


def _section(user: str, header: str) -> str:
    """The text under an ALL-CAPS header line of a prompt, up to the next blank line + header."""
    m = re.search(rf"^{re.escape(header)}[^\n]*\n(.*?)(?=\n\n[A-Z][A-Z]+\b|\Z)", user, re.S | re.M)
    return m.group(1).strip() if m else ""


def _cases(text: str) -> list[tuple[str, str, str]]:
    """(task, expected, output) of every "--- case N ---" block."""
    out = []
    for block in re.split(r"^--- case \d+[^\n]*---$", text, flags=re.M)[1:]:
        task = block.split("\nOutput:", 1)[0].replace("Task:\n", "", 1)
        found = [re.search(rf"^{key}: (.*)$", block, re.M) for key in ("Expected", "Output")]
        out.append((task.strip(), *(m.group(1).strip().lower() if m else "" for m in found)))
    return out


def _numbered_skill(user: str) -> list[str]:
    block = user.split("SKILL (numbered lines):", 1)[-1].split("\nSECTIONS:", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\s*\d+\| ?(.*)$", block, re.M)]


def _rules_of_cases(cases: list[tuple[str, str, str]]) -> tuple[Counter[str], dict[str, str]]:
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for task, expected, _ in cases:
        rule = rule_for(task)
        if rule is not None and expected == rule.label:  # evidence agrees with the inferred rule
            counts[rule.id] += 1
            example.setdefault(rule.id, task)
    order = [r.id for r in RULES]
    return Counter(dict(sorted(counts.items(), key=lambda kv: (-kv[1], order.index(kv[0]))))), example


def rule_text(rule: Rule, skill: str, route: str | None = None) -> str:
    """How the optimizer states a rule: one wording per skill, so minibatches of one step agree."""
    text = rule.texts[int(unit("wording", rule.id, skill) * len(rule.texts))]
    return text.format(route=route or rule.label)


def classify(text: str) -> str:
    """What an edit text does in the world: "rule:<id>" (states it), "harmful:<id>", or "other"."""
    states = skill_states(text)
    for rule in RULES:
        if states[rule.id].state == "stated":
            return f"rule:{rule.id}"
        if states[rule.id].state in ("contradicted", "conflict"):
            return f"harmful:{rule.id}"
    return "other"


def _fault(rates: Mapping[str, float], *seed: object) -> str:
    u, edge = unit("edit-fault", *seed), 0.0
    for kind in ("harmful", "over_specific", "duplicate", "wrong_anchor"):
        edge += rates[kind]
        if u < edge:
            return kind
    return ""


def _faulty(kind: str, rule: Rule, good: dict, lines: list[str], sections: list[str], example: str,
            seed: str) -> dict:
    skill = "\n".join(lines)
    if kind == "harmful":  # misattribution: the route the cases expect, pinned on another rule's condition
        others = [r for r in RULES if r.id != rule.id]
        other = others[int(unit("harmful", seed, rule.id) * len(others))]
        return {**good, "op": "add", "line": 0, "content": rule_text(other, skill, rule.label)}
    if kind == "over_specific":
        order = parse_order(example)
        name = order.get("customer", "the customer").split("(")[0].strip()
        return {**good, "op": "add", "line": 0,
                "content": f"- Order {order.get('order', '?')} for {name} must be routed {rule.label}."}
    if kind == "duplicate":
        present = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("#", "<!--"))]
        if present:
            return {**good, "op": "add", "line": 0,
                    "content": present[int(unit("duplicate", seed, rule.id) * len(present))].strip()}
        return good
    if unit("anchor", seed, rule.id) < 0.5:  # wrong_anchor: a line past the end of the skill ...
        return {**good, "op": "replace", "section": "", "line": len(lines) + 1 + int(unit("line", seed) * 20)}
    invented = [h for h in _INVENTED_HEADINGS if h.lower() not in {s.lower() for s in sections}]
    return {**good, "op": "add", "line": 0, "section": invented[0]}  # ... or a heading that does not exist


def _reflect(user: str, opts: Mapping[str, float]) -> dict:
    lines = _numbered_skill(user)
    skill = "\n".join(lines)
    states = skill_states(skill)
    sections = re.findall(r'"([^"]+)"', user.split("SECTIONS:", 1)[-1].split("\n", 1)[0])
    m = re.search(r"at most (\d+) edits", user)
    budget = int(m.group(1)) if m else 2
    notes = _section(user, "STRATEGY NOTES").lower()
    rejected = " ".join(tokens(_section(user, "REJECTED EDITS")))
    rates = {k: opts[k] * (0.5 if word in notes else 1.0) for k, word in _LESSONS.items()}
    shared = _section(user, "EVERY TASK BELOW ALSO SAYS")  # template lines taken out of each case
    cases = [(f"{shared}\n{task}", expected, output) for task, expected, output in _cases(
        user.split("\nCASES (", 1)[-1])]
    counts, example = _rules_of_cases(cases)
    # A one-order line whose route the assistant gave where another was expected misleads it: delete it.
    misleading = Counter(n for _, expected, output in cases for n, route in one_order_lines(skill)
                         if output == route != expected)
    home = next((s for s in sections if "rule" in s.lower()), sections[-1] if sections else "")
    edits = []
    failures = "\nCASES (failure" in user
    for i, rid in enumerate(counts):
        rule, st = RULES_BY_ID[rid], states[rid]
        if len(edits) >= budget:
            break
        if st.state == "stated":
            # The skill already has the rule and the case failed anyway (the target's noise). A
            # real optimizer often patches such a case with a rule about that one order.
            if failures and unit("noise", user, rid) < 0.5 * (0.5 if _LESSONS["over_specific"] in notes else 1.0):
                edits.append(_faulty("over_specific", rule, {"section": home, "rationale": "this order failed"},
                                     lines, sections, example[rid], user))
            continue
        wrong = [n for n in st.lines if line_routes(lines[n - 1]) - {rule.label}
                 and rule.label not in line_routes(lines[n - 1])]
        good = {"op": "add", "section": home, "line": 0, "content": rule_text(rule, skill),
                "rationale": f"{counts[rid]} cases where {rule.pattern} expect {rule.label}"}
        if wrong:  # the skill holds a wrong rule: rewrite that line rather than add a conflict
            good = {**good, "op": "replace", "section": "", "line": wrong[0]}
        fault = _fault(rates, user, i)
        edit = _faulty(fault, rule, good, lines, sections, example[rid], user) if fault else good
        if edit["content"] and " ".join(tokens(edit["content"])) in rejected:
            continue  # it was rejected before: a careful optimizer does not propose it again
        edits.append(edit)
    for n, _ in misleading.most_common():
        if len(edits) < budget:
            edits.append({"op": "delete", "section": "", "line": n, "content": "",
                          "rationale": "a rule about one order that the assistant applies to other orders"})
    summary = "; ".join(f"{n} cases where {RULES_BY_ID[r].pattern} expect {RULES_BY_ID[r].label}"
                        for r, n in counts.items()) or "no pattern the skill does not already cover"
    if misleading:
        summary += f"; the one-order rule{'s' if len(misleading) > 1 else ''} on line " \
                   f"{', '.join(map(str, misleading))} mislead other orders"
    return {"summary": summary[:300], "edits": edits}


def _listing(user: str) -> list[tuple[str, int]]:
    """(new text, support) of each "[n] ..." entry of an edit listing."""
    out = []
    for block in re.split(r"^\[\d+\] ", user, flags=re.M)[1:]:
        m = re.search(r"\(support (\d+)", block)
        new = re.search(r"^\s+new: (.*)$", block, re.M)
        out.append((new.group(1) if new else "", int(m.group(1)) if m else 1))
    return out


def _quality(text: str) -> int:
    kind = classify(text)
    return 2 if kind.startswith("rule:") else 0 if kind.startswith("harmful:") else 1


def _merge(user: str, opts: Mapping[str, float]) -> dict:
    groups: dict[str, list[int]] = {}
    for i, (text, _) in enumerate(_listing(user), 1):
        kind = classify(text)  # only edits stating the same rule correctly are the same edit
        groups.setdefault(kind if kind.startswith("rule:") else f"{kind}:{i}", []).append(i)
    return {"groups": list(groups.values())}


def _rank(user: str, opts: Mapping[str, float]) -> dict:
    entries = _listing(user)
    order = sorted(range(1, len(entries) + 1), key=lambda i: (-_quality(entries[i - 1][0]), -entries[i - 1][1], i))
    return {"order": order}


def _lr(user: str, opts: Mapping[str, float]) -> dict:
    m = re.search(r"between (\d+) and (\d+)", user)
    low, high = (int(m.group(1)), int(m.group(2))) if m else (1, 4)
    good = {classify(text) for text, _ in _listing(user) if _quality(text) == 2}
    count = max(low, min(high, len(good)))
    return {"count": count, "reason": f"{len(good)} distinct general rules among the proposals"}


def _slow_update(user: str, opts: Mapping[str, float]) -> dict:
    skill = user.split("CURRENT SKILL:", 1)[-1]
    states = skill_states(skill)
    bullets = []
    counts, _ = _rules_of_cases(_cases(_section(user, "STILL FAILING CASES")))
    for rid in counts:
        if states[rid].state != "stated":
            bullets.append(rule_text(RULES_BY_ID[rid], skill).lstrip("- "))
    regressed, _ = _rules_of_cases(_cases(_section(user, "REGRESSED CASES")))
    for rid in regressed:
        rule = RULES_BY_ID[rid]
        if states[rid].state != "stated":
            bullets.append(f"Re-check orders where {rule.pattern}: the route is {rule.label}.")
    m = re.search(r"improved (\d+)", user)
    if m and int(m.group(1)):
        bullets.append(f"Keep the house rules added last epoch: they fixed {m.group(1)} "
                       f"order{'s' if int(m.group(1)) > 1 else ''}.")
    return {"guidance": (bullets or ["Keep the current house rules; they hold on these orders."])[:6]}


def _meta(user: str, opts: Mapping[str, float]) -> dict:
    rejected = _section(user, "REJECTED EDITS")
    accepted = [ln for ln in _section(user, "ACCEPTED EDITS").splitlines() if ln.startswith("- ")]
    notes = [ln.lstrip("- ").strip() for ln in _section(user, "CURRENT NOTES").splitlines()
             if ln.startswith("- ")]
    new = []
    if accepted:
        new.append(f"State one general rule per failure group (condition -> route); {len(accepted)} such edits "
                   "were accepted.")
    if any(classify(ln).startswith("harmful:") for ln in rejected.splitlines()):
        new.append("Never propose a route that contradicts the expected answers; contradicting rules were rejected.")
    if ORDER_CODE.search(rejected):
        new.append("Avoid rules about one specific order (order codes, names): too specific rules were rejected.")
    m = re.search(r"regressed (\d+)", user)
    if m and int(m.group(1)):
        new.append(f"Check that a new rule leaves cases that were right unchanged ({m.group(1)} regressed).")
    def key(note: str) -> str:  # a note's gist: a fresh count replaces the old note, not joins it
        return " ".join(note.lower().split()[:5])

    merged = list({key(n): n for n in reversed(new + notes)}.values())[::-1][:8]
    return {"notes": merged or ["Propose general rules backed by several failing cases."]}


ANSWERS: dict[str, Callable[[str, Mapping[str, float]], dict]] = {
    "reflect": _reflect, "merge": _merge, "rank": _rank, "lr": _lr, "slow_update": _slow_update, "meta": _meta}


def answer(messages: list[dict], opts: Mapping[str, float]) -> str:
    """Reply to one optimizer call (a repair re-ask included) as text."""
    system = str(messages[0].get("content", "")) if messages else ""
    user = str(messages[1].get("content", "")) if len(messages) > 1 else ""
    m = re.search(r"<!-- skillopt:(\w+) -->", system)
    if m is None or m.group(1) not in ANSWERS:
        return "The simulated optimizer only answers SkillOpt's own prompts."
    text = json.dumps(ANSWERS[m.group(1)](user, opts), ensure_ascii=False)
    repairs = sum(1 for msg in messages if msg.get("role") == "assistant")
    fail = opts["malformed"] if repairs == 0 else 1.0 - opts["repair"]
    if unit("malformed", system, user, repairs) < fail:
        cut = int(len(text) * (0.3 + 0.5 * unit("cut", user, repairs)))
        return text[:cut]  # a reply cut off mid-JSON, as small models do at their token limit
    if unit("fence", user) < 0.2:
        return f"Here is my answer:\n```json\n{text}\n```"
    return text

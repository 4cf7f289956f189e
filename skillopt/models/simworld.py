"""The simulated world: Harbor & Pine Outfitters' ten hidden house rules and how to read them.

Every order of the `sim-rulebook` task falls under exactly one rule (RULES). This module
says which rule an order falls under (parse_order, rule_for), how a skill treats each rule
(skill_states: stated, contradicted, in conflict, or absent), which skill lines are about
one order (one_order_lines), and gives the simulator its only randomness (unit, a hash).
The simulated target (sim.py), the simulated optimizer (sim_optimizer.py) and the task's
generator all read the world from here. See data/tasks/sim-rulebook/README.md.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

LABELS = ("standard", "freight", "air", "ground", "review", "hold", "consolidate", "courier", "postal",
          "split", "pickup")
# Words in a skill line that name a route (inflections included); "air" inside "airport" does not count.
_LABEL_WORDS = {**{label: label for label in LABELS}, "reviewed": "review", "held": "hold",
                "consolidated": "consolidate", "consolidation": "consolidate", "pick": "pickup"}


@dataclass(frozen=True)
class Rule:
    id: str
    label: str
    pattern: str  # the rule's condition in words, used in summaries
    trigger: tuple[frozenset[str], ...]  # a skill line mentions the rule when it has a word of every group
    texts: tuple[str, ...]  # ways to state the rule; "{route}" is the route
    applies: Callable[[dict[str, str]], bool]  # does an order (parsed prompt fields) fall under the rule?


def _words(*groups: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(g.split()) for g in groups)


def _total(order: dict[str, str]) -> float:
    m = re.search(r"[\d,]+(?:\.\d+)?", order.get("total", ""))
    return float(m.group(0).replace(",", "")) if m else 0.0


RULES: tuple[Rule, ...] = (
    Rule("z-code", "freight", "the order code starts with Z",
         _words("z", "prefix prefixed starts start starting begins begin beginning"),
         ("- Order codes starting with Z are bulky goods: route {route}.",
          "- If the order code begins with Z, the route is {route}."),
         lambda o: o.get("order", "").upper().startswith("Z")),
    Rule("remote-state", "air", "the order ships to Alaska (AK) or Hawaii (HI)", _words("alaska hawaii"),
         ("- Orders shipping to Alaska (AK) or Hawaii (HI): route {route}.",
          "- Destinations in Alaska or Hawaii always get route {route}."),
         lambda o: bool(re.search(r",\s*(AK|HI)\s+\d{5}", o.get("ship to", "")))),
    Rule("lithium", "ground", "the items include lithium batteries", _words("lithium batteries battery"),
         ("- Any order with lithium batteries (power banks, battery packs): route {route}.",
          "- Items with lithium batteries decide the route: {route}."),
         lambda o: "lithium" in o.get("items", "").lower()),
    Rule("wholesale", "consolidate", "the customer has a wholesale trade account", _words("wholesale"),
         ("- Wholesale (trade) accounts: route {route}.",
          "- Orders from wholesale customers always get route {route}."),
         lambda o: "wholesale" in o.get("customer", "").lower()),
    Rule("high-value", "review", "the order total is above $2,500", _words("2500"),
         ("- Orders with a total above $2,500: route {route}.",
          "- A total over $2,500 means route {route}, whatever else the order says."),
         lambda o: _total(o) > 2500),
    Rule("saturday", "courier", "the note asks for Saturday delivery", _words("saturday saturdays"),
         ("- A note asking for Saturday delivery: route {route}.",
          "- Saturday delivery requests get route {route}."),
         lambda o: "saturday" in o.get("note", "").lower()),
    Rule("po-box", "postal", "the address is a PO box", _words("box boxes", "po p"),
         ("- Addresses that are a PO Box: route {route}.",
          "- Ship-to addresses with a P.O. Box get route {route}."),
         lambda o: bool(re.search(r"\bP\.?\s?O\.?\s+Box\b", o.get("ship to", ""), re.I))),
    Rule("chargeback", "hold", "the customer has a chargeback on file", _words("chargeback chargebacks"),
         ("- Customers with a chargeback on file: route {route}.",
          "- Any chargeback history on the account means route {route}."),
         lambda o: "chargeback" in o.get("customer", "").lower()),
    Rule("engraved", "split", "an item is engraved",
         _words("engraved engraving engrave personalised personalized monogrammed"),
         ("- Orders with an engraved item: route {route} (engraving ships later).",
          "- If any item is engraved, the route is {route}."),
         lambda o: "engraved" in o.get("items", "").lower()),
    Rule("tacoma", "pickup", "the order ships to Tacoma, WA (the warehouse city)", _words("tacoma"),
         ("- Orders to Tacoma, WA (our warehouse city): route {route}.",
          "- Tacoma addresses get route {route}: customers collect at the depot."),
         lambda o: bool(re.search(r",\s*Tacoma,\s*WA\b", o.get("ship to", ""), re.I))),
)
RULES_BY_ID = {r.id: r for r in RULES}
FIELDS = ("order", "customer", "ship to", "items", "total", "note")


def parse_order(prompt: str) -> dict[str, str]:
    """The order's fields from a rendered sim-rulebook prompt ("Order: Z-10442" lines)."""
    out: dict[str, str] = {}
    for line in prompt.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in FIELDS:
            out.setdefault(key.strip().lower(), value.strip())
    return out


def rule_for(prompt: str) -> Rule | None:
    """The house rule an order falls under (the generator makes it exactly one)."""
    order = parse_order(prompt)
    if "order" not in order:
        return None
    return next((r for r in RULES if r.applies(order)), None)


def tokens(line: str) -> list[str]:
    line = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", line.lower())  # "$2,500" -> "2500"
    return re.findall(r"[a-z0-9]+", line)


def line_routes(line: str) -> set[str]:
    """The routes a line names."""
    return {_LABEL_WORDS[w] for w in tokens(line) if w in _LABEL_WORDS}


@dataclass(frozen=True)
class RuleState:
    state: str  # stated | contradicted | conflict | absent
    lines: tuple[int, ...]  # 1-based numbers of the skill lines that mention the rule
    wrong: tuple[str, ...]  # routes the contradicting lines give
    text: str  # those lines, the only part of the skill the target's answer depends on


@lru_cache(maxsize=256)
def skill_states(skill: str) -> dict[str, RuleState]:
    """Rule id -> how the skill treats that rule (robust keyword match per line)."""
    lines = skill.split("\n")
    words_of = [set(tokens(line)) for line in lines]  # once per line, not once per line and rule
    out = {}
    for rule in RULES:
        stated, wrong, nums = False, [], []
        for n, (line, words) in enumerate(zip(lines, words_of), 1):
            if not all(words & group for group in rule.trigger):
                continue
            nums.append(n)
            routes = line_routes(line)
            if rule.label in routes:
                stated = True
            elif routes:
                wrong.extend(sorted(routes))
        state = ("conflict" if wrong else "stated") if stated else ("contradicted" if wrong else "absent")
        out[rule.id] = RuleState(state, tuple(nums), tuple(dict.fromkeys(wrong)),
                                 "\n".join(lines[n - 1].strip() for n in nums))
    return out


ORDER_CODE = re.compile(r"\b[A-Z]-\d{5}\b")


@lru_cache(maxsize=256)
def one_order_lines(skill: str) -> tuple[tuple[int, str], ...]:
    """(line number, route) of lines about one order ("Order B-12345 ... air"): clutter that
    distracts the target, which then sends other orders that route too."""
    out = []
    for n, line in enumerate(skill.split("\n"), 1):
        routes = line_routes(line)
        if ORDER_CODE.search(line) and routes:
            out.append((n, sorted(routes)[0]))
    return tuple(out)


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts: the simulator's only randomness."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:13], 16) / 16 ** 13

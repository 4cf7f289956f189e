"""The simulated world: models `sim/target` and `sim/optimizer`, instant and deterministic.

Harbor & Pine Outfitters routes every order by ten hidden house rules (RULES). Each item
of the `sim-rulebook` task depends on exactly one rule. The simulated target reads the
rule state off the skill (its system message): it answers right with probability
`stated` when the skill states the item's rule, `base` when it does not, `contradicted`
when the skill holds the rule's trigger with a wrong route. The simulated optimizer reads
the same reflection prompt a real model gets, infers the rules behind the cases it is
shown and answers with edits, including realistic faults at configurable rates.

Every random choice is a hash of the prompt (and of the rule's lines in the skill, for the
target), so the same prompt always gets the same reply: resume and the cache stay exact,
and unrelated edits never reshuffle answers, so the gate sees the effect of an edit and
nothing else. Options ride on the model string: `sim/optimizer?harmful=0.3&malformed=0.5`,
`sim/optimizer?faults=0` (clean), `sim/target?error=0.1&timeout=0.05`.
See data/tasks/sim-rulebook/README.md for the documented world.
"""
from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Callable, Mapping
from urllib.parse import parse_qsl

from .llm import FATAL_KINDS, RETRYABLE_KINDS, GenSettings, ProviderError, register_provider

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
    out = {}
    for rule in RULES:
        stated, wrong, nums = False, [], []
        for n, line in enumerate(lines, 1):
            words = set(tokens(line))
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


# --- options on the model string --------------------------------------------------------------

# Optimizer fault rates per proposed edit (malformed: per reply). Moderate by default so the gate
# has real work to do; `faults=0` turns them all off.
FAULTS = {"harmful": 0.12, "over_specific": 0.12, "duplicate": 0.12, "wrong_anchor": 0.12, "malformed": 0.12}
_COMMON = {"latency": 0.0, "retry_after": 0.1, **{k: 0.0 for k in RETRYABLE_KINDS + FATAL_KINDS}, "error": 0.0}
DEFAULTS = {
    "target": {"stated": 0.9, "base": 0.25, "contradicted": 0.05, "conflict": 0.4, "distract": 0.03, **_COMMON},
    "optimizer": {**FAULTS, "repair": 0.6, **_COMMON},
}


@lru_cache(maxsize=128)
def options(name: str) -> tuple[str, Mapping[str, float]]:
    """("target" | "optimizer", options) from "optimizer?harmful=0.3"; bad options are fatal."""
    role, _, query = name.partition("?")
    if role not in DEFAULTS:
        raise ProviderError("not_found", f"unknown simulated model 'sim/{role}' (use sim/target or sim/optimizer)")
    opts = dict(DEFAULTS[role])
    pairs = parse_qsl(query, keep_blank_values=True)
    for key, raw in pairs:
        if key not in opts and key != "faults":
            raise ProviderError("bad_request", f"sim/{role}: unknown option '{key}' (known: {', '.join(opts)})")
        try:
            value = float(raw)
        except ValueError:
            raise ProviderError("bad_request", f"sim/{role}: option '{key}' must be a number, got {raw!r}") from None
        if key == "faults":  # one knob for every optimizer fault; specific keys still win below
            opts.update({k: value for k in FAULTS if role == "optimizer"})
    opts.update({k: float(v) for k, v in pairs if k != "faults"})
    return role, MappingProxyType(opts)  # cached and shared: read-only


_FAULT_KINDS = (*RETRYABLE_KINDS, *FATAL_KINDS, "error")
_CALLS: Counter[str] = Counter()  # per-prompt call count: a retry draws a fresh fault, deterministically
_CALLS_LOCK = threading.Lock()


def _inject_faults(name: str, opts: Mapping[str, float], text: str) -> None:
    if not any(opts[kind] > 0 for kind in _FAULT_KINDS):
        return  # the common case: no counting, no hashing
    with _CALLS_LOCK:
        key = hashlib.sha256(f"{name}\x1f{text}".encode()).hexdigest()
        _CALLS[key] += 1
        attempt = _CALLS[key]
    u = unit("fault", name, text, attempt)
    share = opts["error"] / len(RETRYABLE_KINDS)  # "error" spreads evenly over the retryable kinds
    edge = 0.0
    for kind in RETRYABLE_KINDS + FATAL_KINDS:
        edge += opts[kind] + (share if kind in RETRYABLE_KINDS else 0.0)
        if u < edge:
            retry_after = opts["retry_after"] if kind == "rate_limit" else None
            raise ProviderError(kind, f"simulated {kind} fault (sim/{name})", retry_after)


def target_answer(skill: str, prompt: str, opts: Mapping[str, float] | None = None) -> str:
    """The simulated target's answer to one order, given the skill it runs with."""
    opts = opts or DEFAULTS["target"]
    rule = rule_for(prompt)
    if rule is None:
        return "standard"  # not a sim-rulebook order: the naive default
    st = skill_states(skill)[rule.id]
    p_right = {"stated": opts["stated"], "absent": opts["base"], "contradicted": opts["contradicted"],
               "conflict": opts["conflict"]}[st.state]
    clutter = one_order_lines(skill)
    u = unit("answer", prompt, st.state, st.text)
    if u < p_right * (1.0 - opts["distract"]) ** len(clutter):
        return rule.label
    if u < p_right:  # would have been right, but a one-order line led it astray
        return clutter[int(unit("clutter", prompt) * len(clutter))][1]
    if st.wrong:  # following the wrong rule it was given
        return st.wrong[0]
    wrong = [label for label in LABELS if label != rule.label]
    pick = unit("wrong", prompt, st.text)
    return "standard" if pick < 0.6 else wrong[int((pick - 0.6) / 0.4 * len(wrong))]


def handle(name: str, messages: list[dict], settings: GenSettings, response_format: dict | None):
    """The provider handler: (text, prompt_tokens, completion_tokens)."""
    role, opts = options(name)
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if opts["latency"] > 0:
        time.sleep(opts["latency"])
    _inject_faults(name, opts, text)
    if role == "target":
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        reply = target_answer(system, user, opts)
    else:
        from . import sim_optimizer  # lazily: it imports this module's world

        reply = sim_optimizer.answer(messages, opts)
    return reply, max(1, len(text) // 4), max(1, len(reply) // 4)


def register() -> None:
    """Register provider "sim" (called by llm.py on first use of a "sim/..." model; idempotent)."""
    register_provider("sim", handle, via_litellm=False)


register()

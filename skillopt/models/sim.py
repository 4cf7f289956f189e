"""The simulated models `sim/target` and `sim/optimizer`, provider "sim": instant and deterministic.

Harbor & Pine Outfitters routes every order by ten hidden house rules (the world, in
simworld.py). Each item of the `sim-rulebook` task depends on exactly one rule. The
simulated target reads the rule state off the skill (its system message): it answers right
with probability `stated` when the skill states the item's rule, `base` when it does not,
`contradicted` when the skill holds the rule's trigger with a wrong route. The simulated
optimizer (sim_optimizer.py) reads the same reflection prompt a real model gets, infers the
rules behind the cases it is shown and answers with edits, including realistic faults at
configurable rates. It is an ORACLE: it asks the world which rule each case falls under.
`sim/learner` (sim_learner.py) is not: it sees only the prompts and learns rules from the
cases by a fixed procedure, with `noise` wrong or irrelevant rules (`sim/learner?noise=0.2`).

Every random choice is a hash of the prompt (and of the rule's lines in the skill, for the
target; and of the call's seed for a target sampled at temperature > 0, see target_answer),
so the same prompt always gets the same reply: resume and the cache stay exact,
and unrelated edits never reshuffle answers, so the gate sees the effect of an edit and
nothing else. Options ride on the model string: `sim/optimizer?harmful=0.3&malformed=0.5`,
`sim/optimizer?faults=0` (clean), `sim/target?error=0.1&timeout=0.05` (faults drawn afresh at each
attempt, so retries recover), `sim/target?broken=0.2` (a fifth of the prompts fail at every attempt).
See data/tasks/sim-rulebook/README.md for the documented world.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping
from urllib.parse import parse_qsl

from . import sim_learner, sim_optimizer
from .providers import (FATAL_KINDS, PROMPT_KINDS, RETRYABLE_KINDS, GenSettings, HandlerResult, ProviderError,
                        register_provider)
from .simworld import LABELS, one_order_lines, rule_for, skill_states, unit


# --- options on the model string --------------------------------------------------------------

# Optimizer fault rates per proposed edit (malformed: per reply). Moderate by default so the gate
# has real work to do; `faults=0` turns them all off.
FAULTS = {"harmful": 0.12, "over_specific": 0.12, "duplicate": 0.12, "wrong_anchor": 0.12, "malformed": 0.12}
_KINDS = RETRYABLE_KINDS + FATAL_KINDS + PROMPT_KINDS  # every provider fault a simulated model can inject
_COMMON = {"latency": 0.0, "retry_after": 0.1, **{k: 0.0 for k in _KINDS}, "error": 0.0,
           "broken": 0.0}
DEFAULTS = {
    "target": {"stated": 0.9, "base": 0.25, "contradicted": 0.05, "conflict": 0.4, "distract": 0.03, **_COMMON},
    "optimizer": {**FAULTS, "repair": 0.6, **_COMMON},
    # the non-oracle optimizer: a fifth of its rules wrong or irrelevant by default, as a small model's
    "learner": {"noise": 0.2, "seed": 0.0, "malformed": 0.0, "repair": 0.6, **_COMMON},
}


@lru_cache(maxsize=128)
def options(name: str) -> tuple[str, Mapping[str, float]]:
    """("target" | "optimizer", options) from "optimizer?harmful=0.3"; bad options are fatal."""
    role, _, query = name.partition("?")
    if role not in DEFAULTS:
        raise ProviderError("not_found", f"unknown simulated model 'sim/{role}' "
                            "(use sim/target, sim/optimizer or sim/learner)")
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


_FAULT_KINDS = (*_KINDS, "error")
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
    for kind in _KINDS:
        edge += opts[kind] + (share if kind in RETRYABLE_KINDS else 0.0)
        if u < edge:
            retry_after = opts["retry_after"] if kind == "rate_limit" else None
            raise ProviderError(kind, f"simulated {kind} fault (sim/{name})", retry_after)


def target_answer(skill: str, prompt: str, opts: Mapping[str, float] | None = None, *,
                  temperature: float = 0.0, seed: int | None = None) -> str:
    """The simulated target's answer to one order, given the skill it runs with.

    At temperature 0 the answer is a function of the prompt and the rule's state. Above 0 a
    reply is a sample: with probability min(1, temperature / 2), drawn from (prompt, seed), it
    draws its own chance of being right, so samples of one item differ while each stays
    reproducible. The draw that picks the resampled replies ignores the skill, so two skills'
    samples of an item differ only where the skills do (as at temperature 0)."""
    opts = opts or DEFAULTS["target"]
    rule = rule_for(prompt)
    if rule is None:
        return "standard"  # not a sim-rulebook order: the naive default
    st = skill_states(skill)[rule.id]
    p_right = {"stated": opts["stated"], "absent": opts["base"], "contradicted": opts["contradicted"],
               "conflict": opts["conflict"]}[st.state]
    clutter = one_order_lines(skill)
    u = unit("answer", prompt, st.state, st.text)
    if temperature > 0 and unit("resample", prompt, seed) < min(1.0, temperature / 2):
        u = unit("answer", prompt, st.state, st.text, seed)
    if u < p_right * (1.0 - opts["distract"]) ** len(clutter):
        return rule.label
    if u < p_right:  # would have been right, but a one-order line led it astray
        return clutter[int(unit("clutter", prompt) * len(clutter))][1]
    if st.wrong:  # following the wrong rule it was given
        return st.wrong[0]
    wrong = [label for label in LABELS if label != rule.label]
    pick = unit("wrong", prompt, st.text)
    return "standard" if pick < 0.6 else wrong[int((pick - 0.6) / 0.4 * len(wrong))]


def handle(name: str, messages: list[dict], settings: GenSettings, response_format: dict | None) -> HandlerResult:
    """The provider handler; tokens are estimated at 4 chars each."""
    role, opts = options(name)
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if opts["latency"] > 0:
        time.sleep(opts["latency"])
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    if opts["broken"] > 0 and unit("broken", user) < opts["broken"]:
        # Persistent: drawn from the task's message alone, so the same items fail at every
        # attempt, under every skill.
        raise ProviderError("server", f"simulated persistent failure (sim/{name})")
    _inject_faults(name, opts, text)
    if role == "target":
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        reply = target_answer(system, user, opts, temperature=settings.temperature, seed=settings.seed)
    elif role == "learner":
        reply = sim_learner.answer(messages, opts)
    else:
        reply = sim_optimizer.answer(messages, opts)
    return HandlerResult(reply, max(1, len(text) // 4), max(1, len(reply) // 4))


def register() -> None:
    """Register provider "sim" (run on import, which the registry does on first use of a
    "sim/..." model; idempotent)."""
    register_provider("sim", handle, via_litellm=False, concurrency=concurrency)


def concurrency(name: str) -> int | None:
    """One call at a time for a simulated model that answers at once (it computes under the GIL:
    threads only add switches); no limit of its own for one that waits like a remote API."""
    try:
        return None if options(name)[1]["latency"] > 0 else 1
    except ProviderError:  # an unknown simulated model: its first call reports it
        return None


register()

"""The provider registry: python backends that answer "prefix/name" model strings.

A provider is a handler function plus how it is reached. The contract a handler meets is
defined here and nowhere else: what it receives (GenSettings), what it returns
(HandlerResult) and what it raises (ProviderError for a fault of one call, ModelError when
the backend cannot be used at all, e.g. a missing package: that stops the run with its
message). The built-in providers ("local", "sim") register themselves when their module is
imported; `lookup` imports them on first use, so nothing here pulls llama.cpp or the
simulator in until a model of theirs is asked for.

Public API:
    GenSettings, HandlerResult, Handler, ProviderError, RETRYABLE_KINDS, FATAL_KINDS, PROMPT_KINDS, prompt_fault
    register_provider(prefix, handler, via_litellm=False, preflight=None)
    lookup(prefix) -> Provider | None;  available(prefix) -> Provider | None
    registered() -> list[tuple[str, Provider]]
    BUILTIN_PROVIDERS: prefix -> module that registers it
"""
from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class GenSettings:
    temperature: float = 0.0
    max_tokens: int = 512
    timeout: float = 120.0
    max_retries: int = 4
    # The sampling seed of one call: the evaluator gives each sample of an item its own, so
    # a sample is reproducible and samples differ. None: the backend's default (llama.cpp
    # derives one from the request).
    seed: int | None = None


@dataclass(frozen=True)
class HandlerResult:
    """One successful answer of a backend. cost_usd is for backends with a price of their
    own (simulated budgets); calls routed through litellm are priced from its cost map."""
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float = 0.0


# handler(model_name_after_prefix, messages, settings, response_format) -> HandlerResult
Handler = Callable[[str, list[dict], GenSettings, dict | None], HandlerResult]
# preflight(model_name_after_prefix) -> a one-line problem, or None. No network, no loading.
Preflight = Callable[[str], str | None]

RETRYABLE_KINDS = ("timeout", "rate_limit", "server", "connection", "empty")
FATAL_KINDS = ("auth", "not_found", "bad_request")
# The prompt, not the model, is at fault (longer than the model's context window): that one call
# fails and is not retried, but the model works, so the run goes on: a rollout errors (left out of
# the score), a reflection is unusable, a candidate skill too long for the target is rejected.
PROMPT_KINDS = ("context",)


def prompt_fault(error: str) -> bool:
    """Whether a failed call's error ("kind: message") was its prompt's fault, not the model's."""
    return error.startswith(tuple(f"{kind}:" for kind in PROMPT_KINDS))


class ProviderError(Exception):
    """Raised by a backend handler (and mapped from litellm's exceptions).

    kind: retryable = timeout | rate_limit | server | connection | empty;
          fatal     = auth | not_found | bad_request;
          prompt    = context (this call fails, the run goes on).
    retry_after: seconds the provider asked us to wait (429 Retry-After), if any.
    """

    def __init__(self, kind: str, message: str = "", retry_after: float | None = None):
        super().__init__(message or kind)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


# model name -> the most calls of it worth having in flight at once; None: no limit of its own
Concurrency = Callable[[str], "int | None"]
# model name -> its context window in tokens, prompt and reply together; None: not known
Window = Callable[[str], "int | None"]
# (model name, text) -> how many tokens the text takes in that model
Tokens = Callable[[str, str], int]


@dataclass(frozen=True)
class Provider:
    handler: Handler
    via_litellm: bool
    preflight: Preflight | None = None
    concurrency: Concurrency | None = None
    window: Window | None = None
    tokens: Tokens | None = None


# Prefixes whose provider module registers itself on import; named, not imported, so that
# the registry never pulls llama.cpp or the simulator in before a model of theirs is used.
BUILTIN_PROVIDERS = {"local": "skillopt.models.local", "sim": "skillopt.models.sim"}

_PROVIDERS: dict[str, Provider] = {}
_LOCK = threading.Lock()


def register_provider(prefix: str, handler: Handler, *, via_litellm: bool = False,
                      preflight: Preflight | None = None, concurrency: Concurrency | None = None,
                      window: Window | None = None, tokens: Tokens | None = None) -> None:
    """Route "prefix/name" models to `handler`. Re-registering a prefix replaces its handler.

    via_litellm=False calls the handler directly (microseconds: the simulated world);
    via_litellm=True makes the call go through litellm.completion as a CustomLLM, so the
    local model exercises the same path, exceptions and accounting as any remote provider.
    preflight, when given, answers the dashboard's check of a "prefix/name" model string.
    concurrency, when given, says how many calls of a model are worth having in flight: 1 for
    a model that computes in this process one call at a time, where more threads only queue.
    window and tokens, when given, say how long a prompt of a model may be and how long one is
    (its tokenizer), so a prompt can be fitted to the model (window.py).
    """
    if not prefix or "/" in prefix:
        raise ValueError(f"provider prefix must be a non-empty name without '/', got {prefix!r}")
    with _LOCK:
        _PROVIDERS[prefix] = Provider(handler, via_litellm, preflight, concurrency, window, tokens)


def is_known(prefix: str) -> bool:
    """Registered already, or a built-in provider that registers itself on first use."""
    return prefix in _PROVIDERS or prefix in BUILTIN_PROVIDERS


def lookup(prefix: str) -> Provider | None:
    """The provider of `prefix`, importing a built-in one on first use; None when unknown.
    An ImportError of a built-in provider's module propagates."""
    if prefix not in _PROVIDERS and prefix in BUILTIN_PROVIDERS:
        importlib.import_module(BUILTIN_PROVIDERS[prefix])
    return _PROVIDERS.get(prefix)


def available(prefix: str) -> Provider | None:
    """`lookup`, with a built-in provider whose package is missing taken as absent: for the
    questions asked before a call (how many in flight, how long a prompt), where the call itself
    then reports the missing package."""
    try:
        return lookup(prefix)
    except ImportError:
        return None


def registered() -> list[tuple[str, Provider]]:
    """(prefix, provider) of every registered provider, a snapshot."""
    with _LOCK:
        return list(_PROVIDERS.items())

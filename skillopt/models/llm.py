"""The model client: one model in one role of a run, with retries, cache, budget and accounting.

Public API:
    Reply, CallRecord, CallSink, Models
    LLM(model, role, settings, sink=None, meter=None, run_id="", api_base="", api_key_env="",
        use_cache=True, max_concurrency=8)
        .complete(messages, *, stage, step, response_format=None, max_tokens=None, settings=None) -> Reply
        .complete_json(messages, *, stage, step, schema, validate, note="") -> tuple[object | None, Reply]
        .prompt_room() -> int | None;  .prompt_tokens(messages) -> int  (fitting a prompt: window.py)
    build_models(config, sink, run_id, meter) -> Models(target, optimizer, judge)
    cache_key(model, messages, settings, response_format) -> str
    preflight(model, api_key_env, api_base) -> str | None
    provider_problem(model, api_base) -> str | None

Its neighbours: providers.py (the registry of python backends and the handler contract:
GenSettings, HandlerResult, ProviderError), bridge.py (litellm, imported lazily: the only
module that imports it), limits.py (Meter, limiter), tokens.py (context windows, prompt
sizes), jsonreply.py (extract_json) and redaction.py (redact, one_line).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar

from ..errors import ModelError
from ..vocabulary import CALL_STAGES, ROLES
from . import bridge, providers, tokens
from .jsonreply import extract_json
from .limits import Meter, limiter
from .providers import PROMPT_KINDS, GenSettings, HandlerResult, ProviderError
from .redaction import one_line, redact

if TYPE_CHECKING:
    from ..config import RunConfig


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    error: str = ""  # non-empty: the call failed after retries (text is then "")

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class CallRecord:
    """One accounting row per call (cached calls included, with cached=True).

    error: only a call that failed: "kind: message" after retries or on a fatal fault, or
    "invalid_json: ..." when a structured reply stayed unusable after its repair re-ask.
    note: faults of a call that still gave a usable reply, joined by "; ": "retried: kind:
    message | kind: message" (the failed attempts before the good one), "truncated: ..."
    (reply clipped or at max_tokens), "invalid_json: ... (repair asked)" (the first reply of
    a structured call; its repair decides), "dropped: ..." (parts of a structured reply the
    validator discarded). Kept apart so that error counts mean failures, while every fault
    a model made is still on its row.
    """
    run_id: str
    step: int
    role: str
    stage: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    cached: bool
    error: str
    attempts: int
    created_at: float
    note: str = ""  # faults met by a call that gave a usable reply (see the class docstring)


class CallSink(Protocol):
    """Implemented by store.Store: response cache + accounting. Must be thread-safe."""

    def cache_get(self, key: str) -> dict | None: ...

    def cache_put(self, key: str, model: str, value: dict) -> None: ...

    def record_call(self, record: CallRecord) -> None: ...


# Patchable seams: tests replace _sleep to run backoff instantly and read the waits.
_sleep = time.sleep
_clock = time.monotonic
MAX_WAIT_S = 60.0  # cap on one backoff wait, Retry-After included: a run must not hang for an hour
BASE_WAIT_S = 1.0
TRUNCATE_FACTOR = 8  # replies longer than 8 chars per max token are clipped (runaway generations)
REPAIR_ECHO_CHARS = 2000  # how much of a bad JSON reply is echoed back in the repair re-ask


# --- cache keys and structured replies ------------------------------------------------------

def cache_key(model: str, messages: list[dict], settings: GenSettings, response_format: dict | None) -> str:
    """sha256 of what determines a reply; timeouts, retries and keys do not change it."""
    payload = {"model": model, "messages": messages, "temperature": settings.temperature,
               "max_tokens": settings.max_tokens, "response_format": response_format}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _schema_format(schema: dict) -> dict:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))[:64]
    # strict=False: OpenAI's strict mode rejects schemas with maxLength/maxItems or optional
    # properties (a fatal 400); non-strict still steers the reply, and we validate on return.
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


T = TypeVar("T")


# --- the client -----------------------------------------------------------------------------

class LLM:
    """One model in one role of one run: calls with retries, cache, budget, accounting."""

    def __init__(self, model: str, role: str, settings: GenSettings, *, sink: CallSink | None = None,
                 meter: Meter | None = None, run_id: str = "", api_base: str = "", api_key_env: str = "",
                 use_cache: bool = True, max_concurrency: int = 8):
        if not model or not model.strip():
            raise ModelError(f"{role} model is empty")
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        self.model, self.role, self.settings = model.strip(), role, settings
        self.sink, self.meter, self.run_id = sink, meter, run_id
        self.api_base, self.api_key_env, self.use_cache = api_base, api_key_env, use_cache
        self.prefix, _, self.name = self.model.partition("/")
        self._semaphore = limiter(self.model, max_concurrency)

    def __repr__(self) -> str:
        return f"LLM({self.model!r}, role={self.role!r})"

    def useful_concurrency(self) -> int | None:
        """The most calls of this model worth having in flight, as its provider says (1 for a
        model computed in this process one call at a time); None: no limit of its own."""
        provider = providers.available(self.prefix)
        return provider.concurrency(self.name) if provider is not None and provider.concurrency else None

    @functools.cached_property
    def _window(self) -> int | None:  # looked up once, when a prompt is first fitted
        return tokens.window(self.model)

    def prompt_room(self) -> int | None:
        """Tokens a prompt may take and leave the reply its max_tokens; None: window not known."""
        return None if self._window is None else max(self._window - self.settings.max_tokens, 0)

    def prompt_tokens(self, messages: list[dict]) -> int:
        return tokens.prompt_tokens(self.model, messages)

    # public ---------------------------------------------------------------------------------
    def complete(self, messages: list[dict], *, stage: str, step: int, response_format: dict | None = None,
                 max_tokens: int | None = None, settings: GenSettings | None = None) -> Reply:
        """settings: this call's own generation settings (a sample's temperature and seed) in
        place of the role's; the response cache still serves temperature-0 calls only."""
        reply, record = self._complete(messages, stage, step, response_format, max_tokens, settings)
        self._record(record)
        return reply

    def complete_json(self, messages: list[dict], *, stage: str, step: int, schema: dict,
                      validate: Callable[[object], T], note: str = "") -> tuple[T | None, Reply]:
        """Structured call: schema-constrained where supported, validated, one repair re-ask.

        A first reply that is not usable JSON is noted on its row ("invalid_json: ... (repair
        asked)"), so every fault is visible even when the repair succeeds; only a repair that is
        unusable too is an error. `note`: what the caller wants on the first call's row (how its
        prompt was fitted).
        """
        fmt = _schema_format(schema)
        reply, record = self._complete(messages, stage, step, fmt, None)
        value, problem = self._parse(reply, validate)
        self._record(_noted(_noted(record, note), f"{problem} (repair asked)" if problem else _dropped(value)))
        if not problem:
            return value, reply
        repair = [*messages, {"role": "assistant", "content": reply.text[:REPAIR_ECHO_CHARS]},
                  {"role": "user", "content": f"That reply was not usable: {problem.split(': ', 1)[1]}. Reply "
                                              f"again with ONLY the JSON object that matches the schema: no prose, "
                                              f"no code fence."}]
        reply, record = self._complete(repair, stage, step, fmt, None)
        value, problem = self._parse(reply, validate)
        self._record(_failed(record, problem) if problem else _noted(record, _dropped(value)))
        return (None, dataclasses.replace(reply, error=problem)) if problem else (value, reply)

    # internals ------------------------------------------------------------------------------
    def _parse(self, reply: Reply, validate: Callable[[object], T]) -> tuple[T | None, str]:
        """(value, "") or (None, "invalid_json: reason"); a failed call is not a JSON problem."""
        if not reply.ok:
            return None, ""
        try:
            return validate(extract_json(reply.text)), ""
        except ValueError as exc:
            reason = one_line(redact(str(exc), (self.api_key_env,)), 300) or "reply does not match the schema"
            return None, f"invalid_json: {reason}"

    def _record(self, record: CallRecord) -> None:
        if self.sink is not None:
            self.sink.record_call(record)

    def _row(self, stage: str, step: int, reply: Reply, attempts: int, note: str = "") -> CallRecord:
        return CallRecord(run_id=self.run_id, step=step, role=self.role, stage=stage, model=self.model,
                          prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                          cost_usd=reply.cost_usd, latency_s=reply.latency_s, cached=reply.cached,
                          error=reply.error, attempts=attempts, created_at=time.time(), note=note)

    def _complete(self, messages: list[dict], stage: str, step: int, response_format: dict | None,
                  max_tokens: int | None, override: GenSettings | None = None) -> tuple[Reply, CallRecord]:
        if stage not in CALL_STAGES:
            raise ValueError(f"stage must be one of {CALL_STAGES}, got {stage!r}")
        settings = override or self.settings
        settings = settings if max_tokens is None else dataclasses.replace(settings, max_tokens=max_tokens)
        key = ""
        if self.sink is not None and self.use_cache and settings.temperature == 0:
            key = cache_key(self.model, messages, settings, response_format)
            hit = self.sink.cache_get(key)
            if hit is not None and isinstance(hit.get("text"), str) and hit["text"]:
                reply = Reply(text=hit["text"], prompt_tokens=int(hit.get("prompt_tokens", 0)),
                              completion_tokens=int(hit.get("completion_tokens", 0)), cached=True)
                return reply, self._row(stage, step, reply, attempts=0)
        if self.meter is not None:
            self.meter.reserve()  # raises BudgetExhausted: the trainer ends the run, keeping its best skill
        reply, attempts, note, fatal = self._call_with_retries(messages, settings, response_format, key)
        if self.meter is not None:
            self.meter.charge(reply.cost_usd)
        if fatal is not None:
            self._record(self._row(stage, step, reply, attempts))  # the failing call is accounted too
            raise fatal
        if key and reply.ok:
            self.sink.cache_put(key, self.model, {"text": reply.text, "prompt_tokens": reply.prompt_tokens,
                                                  "completion_tokens": reply.completion_tokens})
        return reply, self._row(stage, step, reply, attempts, note=note)

    def _call_with_retries(self, messages: list[dict], settings: GenSettings, response_format: dict | None,
                           key: str) -> tuple[Reply, int, str, ModelError | None]:
        """(reply, attempts, note, fatal): retryable faults are retried then returned as a
        failed Reply; fatal ones come back as the ModelError to raise after accounting."""
        start = _clock()
        attempt = 0
        faults: list[str] = []  # the failed attempts before a good one: noted on the call's row
        while True:
            attempt += 1
            try:
                with self._semaphore:
                    result = self._call(messages, settings, response_format)
                if not result.text.strip():
                    raise ProviderError("empty", "the model returned an empty reply")
                break
            except ModelError as exc:
                message = one_line(redact(str(exc), (self.api_key_env,)))
                return Reply(text="", latency_s=_clock() - start, error=message), attempt, "", ModelError(message)
            except ProviderError as exc:
                message = one_line(redact(f"{exc.kind}: {exc}", (self.api_key_env,)))
                failed = Reply(text="", latency_s=_clock() - start, error=message)
                if exc.kind in PROMPT_KINDS:  # the same prompt fails again: this call fails, the run goes on
                    return failed, attempt, "", None
                if not exc.retryable:
                    return failed, attempt, "", ModelError(f"{self.role} model {self.model} failed: {message}")
                if attempt > settings.max_retries:
                    return failed, attempt, "", None
                faults.append(one_line(message, 160))
                jitter_seed = key or cache_key(self.model, messages, settings, response_format)
                _sleep(self._backoff(attempt, exc.retry_after, jitter_seed))
        notes = [f"retried: {' | '.join(faults)}"] if faults else []
        text, completion_tokens = result.text, result.completion_tokens
        limit = TRUNCATE_FACTOR * settings.max_tokens
        if len(text) > limit:
            notes.append(f"truncated: reply of {len(text)} chars clipped to {limit} (max_tokens {settings.max_tokens})")
            text = text[:limit]
        elif completion_tokens >= settings.max_tokens:
            # The provider stopped at the cap (finish_reason "length"): the answer may be cut short.
            notes.append(f"truncated: reply reached max_tokens ({completion_tokens} of {settings.max_tokens} tokens)")
        note = "; ".join(notes)
        reply = Reply(text=text, prompt_tokens=result.prompt_tokens, completion_tokens=completion_tokens,
                      cost_usd=float(result.cost_usd), latency_s=_clock() - start)
        return reply, attempt, note, None

    @staticmethod
    def _backoff(attempt: int, retry_after: float | None, key: str) -> float:
        """Exponential backoff with jitter derived from the request (reproducible, yet
        decorrelated across concurrent requests); Retry-After wins when given."""
        if retry_after is not None and retry_after > 0:
            return min(MAX_WAIT_S, float(retry_after))
        digest = hashlib.sha256(f"{key}:{attempt}".encode()).digest()
        jitter = 0.5 + digest[0] / 510.0  # 0.5 .. 1.0
        return min(MAX_WAIT_S, BASE_WAIT_S * 2 ** (attempt - 1) * jitter)

    def _call(self, messages: list[dict], settings: GenSettings, response_format: dict | None) -> HandlerResult:
        """One attempt: a direct provider's handler, or litellm (bridged providers included)."""
        provider = providers.lookup(self.prefix)
        if provider is not None and not provider.via_litellm:
            try:
                return provider.handler(self.name, messages, settings, response_format)
            except (ProviderError, ModelError):
                raise
            except Exception as exc:  # same treatment as through litellm: a transient, recorded fault
                raise ProviderError("server", f"{type(exc).__name__}: {exc}") from None
        if provider is None and self.prefix in providers.BUILTIN_PROVIDERS:
            module = providers.BUILTIN_PROVIDERS[self.prefix]
            raise ModelError(f"provider '{self.prefix}' did not register itself (import {module})")
        api_key = ""
        if self.api_key_env:
            api_key = os.environ.get(self.api_key_env, "")
            if not api_key:
                raise ModelError(f"{self.role} model {self.model}: environment variable {self.api_key_env} is not set")
        # The key is read at call time and passed on, never stored on the object.
        return bridge.complete(self.model, messages, settings, response_format, api_base=self.api_base,
                               api_key=api_key)


def _noted(record: CallRecord, note: str) -> CallRecord:
    """The record with `note` appended to its notes (a retried call may also be truncated)."""
    if not note:
        return record
    return dataclasses.replace(record, note=f"{record.note}; {note}" if record.note else note)


def _failed(record: CallRecord, error: str) -> CallRecord:
    """The record of a call whose reply stayed unusable: `error` joins its errors, its notes stay."""
    return dataclasses.replace(record, error=f"{record.error}; {error}" if record.error else error)


def _dropped(value: object) -> str:
    """A validator may return an object with `dropped`: the parts of a reply it discarded
    (e.g. an edit with an unknown op). They are model faults too, so they go on the row."""
    dropped = getattr(value, "dropped", ())
    if not dropped or not isinstance(dropped, (tuple, list)):
        return ""
    return one_line(f"dropped: {len(dropped)} part(s) of the reply: {'; '.join(map(str, dropped))}", 400)


# --- a run's three models -----------------------------------------------------------------

@dataclass(frozen=True)
class Models:
    target: LLM
    optimizer: LLM
    judge: LLM


def build_models(config: "RunConfig", sink: CallSink | None, run_id: str, meter: Meter | None) -> Models:
    """The target, optimizer and judge of a run; same model strings share one concurrency limit."""
    settings = GenSettings(temperature=config.temperature, max_tokens=config.max_tokens,
                           timeout=config.request_timeout, max_retries=config.max_retries)
    common = dict(sink=sink, meter=meter, run_id=run_id, use_cache=config.use_cache,
                  max_concurrency=config.max_concurrency)
    target = LLM(config.target_model, "target", settings, api_base=config.target_api_base,
                 api_key_env=config.target_api_key_env, **common)
    optimizer = LLM(config.optimizer_model, "optimizer", settings, api_base=config.optimizer_api_base,
                    api_key_env=config.optimizer_api_key_env, **common)
    # The judge has no endpoint settings of its own: it borrows those of the role whose model it is.
    borrow = config.judge == config.target_model and config.judge != config.optimizer_model
    base, key_env = ((config.target_api_base, config.target_api_key_env) if borrow
                     else (config.optimizer_api_base, config.optimizer_api_key_env))
    judge = LLM(config.judge, "judge", settings, api_base=base, api_key_env=key_env, **common)
    return Models(target=target, optimizer=optimizer, judge=judge)


def preflight(model: str, api_key_env: str = "", api_base: str = "") -> str | None:
    """A one-line problem that would stop `model` from working, or None. No network call."""
    model = (model or "").strip()
    if not model:
        return "model string is empty"
    prefix, _, name = model.partition("/")
    if providers.is_known(prefix):
        try:
            provider = providers.lookup(prefix)
        except ImportError as exc:
            return f"{model}: provider '{prefix}' cannot be loaded: {one_line(str(exc))}"
        if provider is None:
            return f"{model}: provider '{prefix}' is not available"
        return provider.preflight(name) if provider.preflight is not None else None
    if api_key_env and not os.environ.get(api_key_env):
        return f"{model}: environment variable {api_key_env} (api_key_env) is not set"
    return bridge.preflight(model, api_base, key_from_env=bool(api_key_env))


def provider_problem(model: str, api_base: str = "") -> str | None:
    """A one-line problem when no provider answers `model`'s prefix, or None. Only the
    provider is checked, never the model name (new models must work) nor keys; our own
    prefixes (local, sim, registered providers) need no litellm import."""
    model = (model or "").strip()
    if not model:
        return "model string is empty"
    if providers.is_known(model.partition("/")[0]):
        return None
    return bridge.unknown_provider(model, api_base)

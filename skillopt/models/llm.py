"""The model layer: the only module that imports litellm.

Public API:
    Reply, CallRecord, GenSettings, CallSink, Meter, Models, ProviderError
    register_provider(prefix, handler, via_litellm=False)    plug a python backend in ("sim", "local", tests' "fake")
    LLM(model, role, settings, sink=None, meter=None, run_id="", api_base="", api_key_env="",
        use_cache=True, max_concurrency=8)
        .complete(messages, *, stage, step, response_format=None, max_tokens=None) -> Reply
        .complete_json(messages, *, stage, step, schema, validate) -> tuple[object | None, Reply]
    build_models(config, sink, run_id, meter) -> Models(target, optimizer, judge)
    cache_key(model, messages, settings, response_format) -> str
    extract_json(text) -> object;  redact(text) -> str;  preflight(model, api_key_env, api_base) -> str | None
    limiter(model, limit) -> threading.BoundedSemaphore

litellm is imported lazily (``_litellm()``): importing it takes seconds, and the dashboard,
the CLI and simulated runs must not pay that when they never call a real provider.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from ..errors import ModelError
from .jsonreply import extract_json  # noqa: F401  (public API, re-exported)
from .limits import Meter, limiter  # noqa: F401  (public API, re-exported)
from .redaction import _one_line, redact  # noqa: F401  (public API, re-exported)

if TYPE_CHECKING:
    from ..config import RunConfig

ROLES = ("target", "optimizer", "judge")
STAGES = ("rollout", "reflect", "merge", "rank", "lr", "gate", "slow_update", "meta", "test", "judge", "preflight")


@dataclass(frozen=True)
class GenSettings:
    temperature: float = 0.0
    max_tokens: int = 512
    timeout: float = 120.0
    max_retries: int = 4


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

    error: "" on a clean success; "kind: message" on failure. A call that succeeded but met
    faults on the way carries notes, joined by "; ": "retried: kind: message | kind: message"
    (the failed attempts before the good one), "truncated: ..." (reply clipped or at
    max_tokens), "invalid_json: ..." (unusable structured reply), "dropped: ..." (parts of a
    structured reply the validator discarded). So every fault a model made is on its row.
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


class CallSink(Protocol):
    """Implemented by store.Store: response cache + accounting. Must be thread-safe."""

    def cache_get(self, key: str) -> dict | None: ...

    def cache_put(self, key: str, model: str, value: dict) -> None: ...

    def record_call(self, record: CallRecord) -> None: ...


# handler(model_name_after_prefix, messages, settings, response_format) -> (text, prompt_tokens, completion_tokens)
# A handler may return a 4th element, the call's cost in USD (simulated budgets); default 0.
# A handler raises ProviderError(kind=...) to simulate/propagate faults, or ModelError when
# the backend cannot be used at all (missing package): that stops the run with its message.
Handler = Callable[[str, list[dict], GenSettings, "dict | None"], tuple[str, int, int]]

RETRYABLE_KINDS = ("timeout", "rate_limit", "server", "connection", "empty")
FATAL_KINDS = ("auth", "not_found", "context", "bad_request")


class ProviderError(Exception):
    """Raised by a backend handler (and mapped from litellm's exceptions).

    kind: retryable = timeout | rate_limit | server | connection | empty;
          fatal     = auth | not_found | context | bad_request.
    retry_after: seconds the provider asked us to wait (429 Retry-After), if any.
    """

    def __init__(self, kind: str, message: str = "", retry_after: float | None = None):
        super().__init__(message or kind)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


# Patchable seams: tests replace _sleep to run backoff instantly and read the waits.
_sleep = time.sleep
_clock = time.monotonic
MAX_WAIT_S = 60.0  # cap on one backoff wait, Retry-After included: a run must not hang for an hour
BASE_WAIT_S = 1.0
TRUNCATE_FACTOR = 8  # replies longer than 8 chars per max token are clipped (runaway generations)
REPAIR_ECHO_CHARS = 2000  # how much of a bad JSON reply is echoed back in the repair re-ask

# Prefixes whose provider module registers itself on import; loaded on first use so that
# importing llm.py never pulls llama.cpp or the simulator in.
_LAZY_PROVIDERS = {"local": "skillopt.models.local", "sim": "skillopt.models.sim"}


@dataclass(frozen=True)
class _Provider:
    handler: Handler
    via_litellm: bool


_PROVIDERS: dict[str, _Provider] = {}
_REG_LOCK = threading.Lock()


def register_provider(prefix: str, handler: Handler, *, via_litellm: bool = False) -> None:
    """Route "prefix/name" models to `handler`. Re-registering a prefix replaces its handler.

    via_litellm=False calls the handler directly (microseconds: the simulated world);
    via_litellm=True makes the call go through litellm.completion as a CustomLLM, so the
    local model exercises the same path, exceptions and accounting as any remote provider.
    """
    if not prefix or "/" in prefix:
        raise ValueError(f"provider prefix must be a non-empty name without '/', got {prefix!r}")
    with _REG_LOCK:
        _PROVIDERS[prefix] = _Provider(handler, via_litellm)


def _provider(prefix: str) -> _Provider | None:
    if prefix not in _PROVIDERS and prefix in _LAZY_PROVIDERS:
        importlib.import_module(_LAZY_PROVIDERS[prefix])
    return _PROVIDERS.get(prefix)


# --- litellm, lazily --------------------------------------------------------------------------

_LITELLM: Any = None
_BRIDGED: set[str] = set()
_LITELLM_LOCK = threading.Lock()
_STASH = threading.local()  # a ModelError raised inside a bridged handler, re-raised as is


def _litellm() -> Any:
    """Import litellm once (offline cost map, no telemetry) and bridge registered providers."""
    global _LITELLM
    with _LITELLM_LOCK:
        if _LITELLM is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the cost map
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            _LITELLM = litellm
        for prefix, provider in _PROVIDERS.items():
            if provider.via_litellm and prefix not in _BRIDGED:
                _LITELLM.custom_provider_map = [
                    *_LITELLM.custom_provider_map, {"provider": prefix, "custom_handler": _bridge(prefix)}]
                _BRIDGED.add(prefix)
        return _LITELLM


def _bridge(prefix: str) -> Any:
    """A litellm CustomLLM that forwards to whatever handler `prefix` has at call time."""
    litellm = _LITELLM
    from litellm.types.utils import Usage

    class Bridge(litellm.CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            params = kwargs.get("optional_params") or {}
            settings = GenSettings(temperature=float(params.get("temperature", 0.0) or 0.0),
                                   max_tokens=int(params.get("max_tokens") or GenSettings.max_tokens),
                                   timeout=float(kwargs.get("timeout") or GenSettings.timeout), max_retries=0)
            try:
                result = _PROVIDERS[prefix].handler(model, messages, settings, params.get("response_format"))
            except ProviderError as exc:
                raise _to_litellm_error(litellm, exc, f"{prefix}/{model}") from None
            except ModelError as exc:
                _STASH.error = exc
                raise litellm.BadRequestError(str(exc), llm_provider=prefix, model=model) from None
            text, prompt_tokens, completion_tokens = result[:3]
            response = litellm.ModelResponse(
                choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                            total_tokens=prompt_tokens + completion_tokens),
                model=f"{prefix}/{model}")
            response._hidden_params["skillopt_cost"] = float(result[3]) if len(result) > 3 else 0.0
            return response

    return Bridge()


def _to_litellm_error(litellm: Any, exc: ProviderError, model: str) -> Exception:
    """Raise handler faults as the exceptions real providers produce, so one mapper serves both."""
    import httpx

    request = httpx.Request("POST", "http://provider.invalid")
    msg, provider = str(exc), model.split("/", 1)[0]
    headers = {"retry-after": str(exc.retry_after)} if exc.retry_after is not None else {}
    factories = {
        "rate_limit": lambda: litellm.RateLimitError(msg, provider, model, response=httpx.Response(
            429, headers=headers, request=request)),
        "timeout": lambda: litellm.Timeout(msg, model=model, llm_provider=provider),
        "server": lambda: litellm.InternalServerError(msg, provider, model),
        "connection": lambda: litellm.APIConnectionError(msg, provider, model),
        "empty": lambda: litellm.InternalServerError(f"empty reply: {msg}", provider, model),
        "auth": lambda: litellm.AuthenticationError(msg, provider, model),
        "not_found": lambda: litellm.NotFoundError(msg, model, provider),
        "context": lambda: litellm.ContextWindowExceededError(msg, model, provider),
        "bad_request": lambda: litellm.BadRequestError(msg, model, provider),
    }
    return factories.get(exc.kind, factories["server"])()


def _retry_after(exc: Exception) -> float | None:
    """Seconds from a Retry-After / retry-after-ms header on a litellm/openai exception."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    response = getattr(exc, "response", None)
    if headers is None and response is not None:
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000.0
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            from email.utils import parsedate_to_datetime
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)+")


def _classify(litellm: Any, exc: Exception) -> ProviderError:
    """Map a litellm exception (subclasses first) to a ProviderError kind."""
    ordered = (
        ("ContextWindowExceededError", "context"), ("AuthenticationError", "auth"),
        ("PermissionDeniedError", "auth"), ("NotFoundError", "not_found"), ("RateLimitError", "rate_limit"),
        ("Timeout", "timeout"), ("APIConnectionError", "connection"), ("ServiceUnavailableError", "server"),
        ("InternalServerError", "server"), ("BadGatewayError", "server"), ("BadRequestError", "bad_request"),
        ("UnprocessableEntityError", "bad_request"),
    )
    message = _LITELLM_PREFIX.sub("", str(exc))  # "litellm.RateLimitError: " repeats the kind
    for name, kind in ordered:
        cls = getattr(litellm, name, None)
        if cls is not None and isinstance(exc, cls):
            return ProviderError(kind, message, _retry_after(exc))
    status = getattr(exc, "status_code", None)
    by_status = {400: "bad_request", 401: "auth", 403: "auth", 404: "not_found", 408: "timeout",
                 413: "context", 422: "bad_request", 429: "rate_limit"}
    if isinstance(status, int):
        kind = by_status.get(status, "server" if status >= 500 else "bad_request")
        return ProviderError(kind, message, _retry_after(exc))
    # An unknown exception (a provider SDK bug, a dropped socket) is treated as transient;
    # if it persists the call is recorded as failed and the trainer's dead-backend check stops the run.
    return ProviderError("server", f"{type(exc).__name__}: {exc}")


# --- cache keys, budgets, concurrency -----------------------------------------------------

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

    # public ---------------------------------------------------------------------------------
    def complete(self, messages: list[dict], *, stage: str, step: int, response_format: dict | None = None,
                 max_tokens: int | None = None) -> Reply:
        reply, record = self._complete(messages, stage, step, response_format, max_tokens)
        self._record(record)
        return reply

    def complete_json(self, messages: list[dict], *, stage: str, step: int, schema: dict,
                      validate: Callable[[object], T]) -> tuple[T | None, Reply]:
        """Structured call: schema-constrained where supported, validated, one repair re-ask.

        A reply that is not usable JSON is noted on its call's row ("invalid_json: ..."), so
        every fault is visible in the store even when the repair succeeds.
        """
        fmt = _schema_format(schema)
        reply, record = self._complete(messages, stage, step, fmt, None)
        value, problem = self._parse(reply, validate)
        self._record(_noted(record, f"{problem} (repair asked)" if problem else _dropped(value)))
        if not problem:
            return value, reply
        repair = [*messages, {"role": "assistant", "content": reply.text[:REPAIR_ECHO_CHARS]},
                  {"role": "user", "content": f"That reply was not usable: {problem.split(': ', 1)[1]}. Reply "
                                              f"again with ONLY the JSON object that matches the schema: no prose, "
                                              f"no code fence."}]
        reply, record = self._complete(repair, stage, step, fmt, None)
        value, problem = self._parse(reply, validate)
        self._record(_noted(record, problem or _dropped(value)))
        return (None, dataclasses.replace(reply, error=problem)) if problem else (value, reply)

    # internals ------------------------------------------------------------------------------
    def _parse(self, reply: Reply, validate: Callable[[object], T]) -> tuple[T | None, str]:
        """(value, "") or (None, "invalid_json: reason"); a failed call is not a JSON problem."""
        if not reply.ok:
            return None, ""
        try:
            return validate(extract_json(reply.text)), ""
        except ValueError as exc:
            reason = _one_line(redact(str(exc), (self.api_key_env,)), 300) or "reply does not match the schema"
            return None, f"invalid_json: {reason}"

    def _record(self, record: CallRecord) -> None:
        if self.sink is not None:
            self.sink.record_call(record)

    def _row(self, stage: str, step: int, reply: Reply, attempts: int, error: str = "") -> CallRecord:
        return CallRecord(run_id=self.run_id, step=step, role=self.role, stage=stage, model=self.model,
                          prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                          cost_usd=reply.cost_usd, latency_s=reply.latency_s, cached=reply.cached,
                          error=error or reply.error, attempts=attempts, created_at=time.time())

    def _complete(self, messages: list[dict], stage: str, step: int, response_format: dict | None,
                  max_tokens: int | None) -> tuple[Reply, CallRecord]:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        settings = self.settings if max_tokens is None else dataclasses.replace(self.settings, max_tokens=max_tokens)
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
        return reply, self._row(stage, step, reply, attempts, error=note)

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
                    text, prompt_tokens, completion_tokens, cost = self._call(messages, settings, response_format)
                if not text.strip():
                    raise ProviderError("empty", "the model returned an empty reply")
                break
            except ModelError as exc:
                message = _one_line(redact(str(exc), (self.api_key_env,)))
                return Reply(text="", latency_s=_clock() - start, error=message), attempt, "", ModelError(message)
            except ProviderError as exc:
                message = _one_line(redact(f"{exc.kind}: {exc}", (self.api_key_env,)))
                failed = Reply(text="", latency_s=_clock() - start, error=message)
                if not exc.retryable:
                    return failed, attempt, "", ModelError(f"{self.role} model {self.model} failed: {message}")
                if attempt > settings.max_retries:
                    return failed, attempt, "", None
                faults.append(_one_line(message, 160))
                jitter_seed = key or cache_key(self.model, messages, settings, response_format)
                _sleep(self._backoff(attempt, exc.retry_after, jitter_seed))
        notes = [f"retried: {' | '.join(faults)}"] if faults else []
        limit = TRUNCATE_FACTOR * settings.max_tokens
        if len(text) > limit:
            notes.append(f"truncated: reply of {len(text)} chars clipped to {limit} (max_tokens {settings.max_tokens})")
            text = text[:limit]
        elif completion_tokens >= settings.max_tokens:
            # The provider stopped at the cap (finish_reason "length"): the answer may be cut short.
            notes.append(f"truncated: reply reached max_tokens ({completion_tokens} of {settings.max_tokens} tokens)")
        note = "; ".join(notes)
        reply = Reply(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                      cost_usd=cost, latency_s=_clock() - start)
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

    def _call(self, messages: list[dict], settings: GenSettings,
              response_format: dict | None) -> tuple[str, int, int, float]:
        provider = _provider(self.prefix)
        if provider is not None and not provider.via_litellm:
            try:
                result = provider.handler(self.name, messages, settings, response_format)
            except (ProviderError, ModelError):
                raise
            except Exception as exc:  # same treatment as through litellm: a transient, recorded fault
                raise ProviderError("server", f"{type(exc).__name__}: {exc}") from None
            return result[0], result[1], result[2], float(result[3]) if len(result) > 3 else 0.0
        if provider is None and self.prefix in _LAZY_PROVIDERS:
            raise ModelError(f"provider '{self.prefix}' did not register itself (import {_LAZY_PROVIDERS[self.prefix]})")
        litellm = _litellm()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": settings.temperature,
                                  "max_tokens": settings.max_tokens, "timeout": settings.timeout,
                                  "num_retries": 0, "max_retries": 0}  # retries are ours: one policy, recorded
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ModelError(f"{self.role} model {self.model}: environment variable {self.api_key_env} is not set")
            kwargs["api_key"] = key  # read at call time, never stored on the object
        _STASH.error = None
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # litellm raises its own hierarchy; anything else is mapped too
            stashed, _STASH.error = _STASH.error, None
            if stashed is not None:
                raise stashed from None
            raise _classify(litellm, exc) from None
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = response._hidden_params.get("skillopt_cost")
        if cost is None:
            try:
                cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:  # models missing from the cost map (self-hosted) cost 0, not a crash
                cost = 0.0
        return text, prompt_tokens, completion_tokens, float(cost)


def _noted(record: CallRecord, note: str) -> CallRecord:
    """The record with `note` appended to its notes (a retried call may also be invalid JSON)."""
    if not note:
        return record
    return dataclasses.replace(record, error=f"{record.error}; {note}" if record.error else note)


def _dropped(value: object) -> str:
    """A validator may return an object with `dropped`: the parts of a reply it discarded
    (e.g. an edit with an unknown op). They are model faults too, so they go on the row."""
    dropped = getattr(value, "dropped", ())
    if not dropped or not isinstance(dropped, (tuple, list)):
        return ""
    return _one_line(f"dropped: {len(dropped)} part(s) of the reply: {'; '.join(map(str, dropped))}", 400)


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
    if config.judge == config.target_model and config.judge != config.optimizer_model:
        base, key_env = config.target_api_base, config.target_api_key_env
    else:
        base, key_env = config.optimizer_api_base, config.optimizer_api_key_env
    judge = LLM(config.judge, "judge", settings, api_base=base, api_key_env=key_env, **common)
    return Models(target=target, optimizer=optimizer, judge=judge)


def preflight(model: str, api_key_env: str = "", api_base: str = "") -> str | None:
    """A one-line problem that would stop `model` from working, or None. No network call."""
    model = (model or "").strip()
    if not model:
        return "model string is empty"
    prefix, _, name = model.partition("/")
    if prefix == "local":
        from . import local
        return local.preflight(name)
    if prefix in _PROVIDERS or prefix in _LAZY_PROVIDERS:
        try:
            return None if _provider(prefix) is not None else f"{model}: provider '{prefix}' is not available"
        except ImportError as exc:
            return f"{model}: provider '{prefix}' cannot be loaded: {_one_line(str(exc))}"
    if api_key_env and not os.environ.get(api_key_env):
        return f"{model}: environment variable {api_key_env} (api_key_env) is not set"
    litellm = _litellm()
    try:
        litellm.get_llm_provider(model, api_base=api_base or None)
    except Exception:
        return f"{model}: unknown provider '{prefix if name else model}'; use a litellm model string such as openai/gpt-4o-mini"
    if api_key_env or api_base:
        return None  # the key comes from api_key_env, or a self-hosted server may need none
    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:
        return None  # providers litellm cannot check are left to the first call
    secrets = [m for m in missing if m.upper().endswith(("_KEY", "_TOKEN", "_SECRET", "_CREDENTIALS"))]
    if secrets:
        return f"{model}: set the environment variable {', '.join(secrets)} or name one with api_key_env"
    return None

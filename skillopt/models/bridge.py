"""Everything that touches litellm: the only module of SkillOpt that imports it.

Public API:
    complete(model, messages, settings, response_format, api_base="", api_key="") -> HandlerResult
    preflight(model, api_base="", key_from_env=False) -> str | None
    unknown_provider(model, api_base="") -> str | None
    token_prices(model) -> (USD per prompt token, USD per completion token) | None

litellm is imported lazily (``_litellm()``): importing it takes seconds, and the dashboard,
the CLI and simulated runs must not pay that when they never call a real provider. Providers
registered with via_litellm=True are plugged into litellm as CustomLLMs, so their calls take
the same path, exceptions and accounting as any remote provider's.
"""
from __future__ import annotations

import os
import re
import threading
import time
from typing import Any

from ..errors import ModelError
from . import providers
from .providers import GenSettings, HandlerResult, ProviderError

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
        for prefix, provider in providers.registered():
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
                                   timeout=float(kwargs.get("timeout") or GenSettings.timeout), max_retries=0,
                                   seed=None if params.get("seed") is None else int(params["seed"]))
            provider = providers.lookup(prefix)
            assert provider is not None  # bridged only once registered, and never unregistered
            try:
                result = provider.handler(model, messages, settings, params.get("response_format"))
            except ProviderError as exc:
                raise _to_litellm_error(litellm, exc, f"{prefix}/{model}") from None
            except ModelError as exc:
                _STASH.error = exc
                raise litellm.BadRequestError(str(exc), llm_provider=prefix, model=model) from None
            message = {"role": "assistant", "content": result.text}
            response = litellm.ModelResponse(
                choices=[{"index": 0, "finish_reason": "stop", "message": message}],
                usage=Usage(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                            total_tokens=result.prompt_tokens + result.completion_tokens),
                model=f"{prefix}/{model}")
            response._hidden_params["skillopt_cost"] = float(result.cost_usd)
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


def complete(model: str, messages: list[dict], settings: GenSettings, response_format: dict | None, *,
             api_base: str = "", api_key: str = "") -> HandlerResult:
    """One attempt through litellm.completion; faults come back as ProviderError (or the
    ModelError a bridged handler raised). Retries are the caller's: one policy, recorded."""
    litellm = _litellm()
    kwargs: dict[str, Any] = {"model": model, "messages": messages, "temperature": settings.temperature,
                              "max_tokens": settings.max_tokens, "timeout": settings.timeout,
                              "num_retries": 0, "max_retries": 0}
    if response_format is not None:
        kwargs["response_format"] = response_format
    if settings.seed is not None and _takes_seed(litellm, model):
        kwargs["seed"] = settings.seed
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
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
    return HandlerResult(text, prompt_tokens, completion_tokens, float(cost))


def _takes_seed(litellm: Any, model: str) -> bool:
    """Whether `seed` may go with the call: a provider without the parameter (Anthropic)
    refuses the whole call over it, and a sample without a seed is still a sample."""
    if providers.is_known(model.partition("/")[0]):
        return True  # our bridged providers (llama.cpp) read it
    try:
        provider = litellm.get_llm_provider(model)[1]
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # a model litellm cannot place: leave the seed out rather than fail the call
        return False
    return bool(params) and "seed" in params


def unknown_provider(model: str, api_base: str = "") -> str | None:
    """A one-line problem when litellm cannot tell which provider serves `model`, else None.

    A prefix from litellm's provider list (or a provider bridged into it) is enough: the
    model name after it is never checked, so a model released after this litellm works.
    Anything else is what litellm itself resolves, e.g. a bare "gpt-4o-mini" (openai).
    """
    litellm = _litellm()
    prefix, slash, _ = model.partition("/")
    known = {getattr(p, "value", p) for p in litellm.provider_list}
    known |= {entry["provider"] for entry in litellm.custom_provider_map}
    if slash and prefix in known:
        return None
    try:
        litellm.get_llm_provider(model, api_base=api_base or None)
        return None
    except Exception:  # litellm's BadRequestError, worded over several lines
        pass
    if slash:
        return f"{model}: unknown provider '{prefix}'; use a litellm model string such as openai/gpt-4o-mini"
    return f"{model}: unknown provider for this bare model name; name one, as in openai/gpt-4o-mini"


def preflight(model: str, api_base: str = "", *, key_from_env: bool = False) -> str | None:
    """litellm's view of a model string: a one-line problem (unknown provider, a missing key
    variable), or None. No network call. key_from_env: the caller names the key variable."""
    litellm = _litellm()
    problem = unknown_provider(model, api_base)
    if problem is not None:
        return problem
    if key_from_env or api_base:
        return None  # the key comes from api_key_env, or a self-hosted server may need none
    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:
        return None  # providers litellm cannot check are left to the first call
    secrets = [m for m in missing if m.upper().endswith(("_KEY", "_TOKEN", "_SECRET", "_CREDENTIALS"))]
    if secrets:
        return f"{model}: set the environment variable {', '.join(secrets)} or name one with api_key_env"
    return None


def token_prices(model: str) -> tuple[float, float] | None:
    """USD per (prompt, completion) token from litellm's offline cost map; None when the map
    does not know the model. The built-in providers (local, sim) cost 0."""
    prefix, slash, name = model.partition("/")
    if slash and prefix in providers.BUILTIN_PROVIDERS:
        return 0.0, 0.0
    cost_map = _litellm().model_cost
    entry = cost_map.get(model) or cost_map.get(name)
    if not entry or "input_cost_per_token" not in entry:
        return None
    return float(entry["input_cost_per_token"]), float(entry.get("output_cost_per_token", 0.0))


def context_window(model: str) -> int | None:
    """The longest prompt litellm's offline model map gives `model` (max_input_tokens); None
    when the map does not know it. The built-in providers say their own (providers.Window)."""
    prefix, slash, name = model.partition("/")
    if slash and prefix in providers.BUILTIN_PROVIDERS:
        return None
    cost_map = _litellm().model_cost
    entry = cost_map.get(model) or cost_map.get(name) or {}
    size = entry.get("max_input_tokens")
    return int(size) if isinstance(size, (int, float)) and size > 0 else None

"""Fake providers for the model-layer tests: a scripted handler, an in-memory call sink, and
an LLM in front of them. Registered with via_litellm=True by default, so calls really go
through litellm.completion (and its exception mapping), with no network."""
from __future__ import annotations

import threading

from skillopt.models.llm import LLM, CallRecord
from skillopt.models.providers import GenSettings, HandlerResult, register_provider

MSGS = [{"role": "system", "content": "You route tickets."}, {"role": "user", "content": "Refund 900 EUR"}]


class MemorySink:
    """The CallSink contract in memory: response cache + accounting rows."""

    def __init__(self) -> None:
        self.cache: dict[str, dict] = {}
        self.records: list[CallRecord] = []
        self.lock = threading.Lock()

    def cache_get(self, key: str) -> dict | None:
        with self.lock:
            return self.cache.get(key)

    def cache_put(self, key: str, model: str, value: dict) -> None:
        with self.lock:
            self.cache[key] = value

    def record_call(self, record: CallRecord) -> None:
        with self.lock:
            self.records.append(record)


class Script:
    """A provider handler that plays a list of actions: a string reply, a (text, cost)
    reply, or a ProviderError to raise. The last action repeats."""

    def __init__(self, *actions):
        self.actions = list(actions)
        self.calls: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, name, messages, settings, response_format):
        with self.lock:
            index = min(len(self.calls), len(self.actions) - 1)
            self.calls.append({"name": name, "messages": messages, "settings": settings,
                               "response_format": response_format})
        action = self.actions[index]
        if isinstance(action, Exception):
            raise action
        if isinstance(action, tuple):
            return HandlerResult(action[0], 11, 7, action[1])
        return HandlerResult(action, 11, 7)


def fake(script: Script, *, prefix: str = "fake", via_litellm: bool = True, retries: int = 4,
         temperature: float = 0.0, sink: MemorySink | None = None, **kwargs) -> tuple[LLM, MemorySink]:
    register_provider(prefix, script, via_litellm=via_litellm)
    sink = sink if sink is not None else MemorySink()
    model = LLM(f"{prefix}/m1", "target", GenSettings(temperature=temperature, max_tokens=32, max_retries=retries),
                sink=sink, run_id="run-1", **kwargs)
    return model, sink

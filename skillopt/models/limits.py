"""The limits a run shares across roles and stages: the call/cost budget and the per-model
concurrency limit. Thread-safe; no I/O.
"""
from __future__ import annotations

import threading

from ..errors import BudgetExhausted


class Meter:
    """Run budget shared by all roles. Thread-safe; 0 means unlimited.

    reserve() counts a call BEFORE it is made, so max_calls is never exceeded; cost is only
    known afterwards, so max_cost_usd can be overshot by at most the calls in flight.
    """

    def __init__(self, max_calls: int = 0, max_cost_usd: float = 0.0):
        self.max_calls = max_calls
        self.max_cost_usd = max_cost_usd
        self.calls = 0
        self.cost_usd = 0.0
        self._lock = threading.Lock()

    def reserve(self) -> None:
        with self._lock:
            if self.max_calls and self.calls >= self.max_calls:
                raise BudgetExhausted(f"max_calls reached ({self.calls} of {self.max_calls})")
            if self.max_cost_usd and self.cost_usd >= self.max_cost_usd:
                raise BudgetExhausted(f"max_cost_usd reached (${self.cost_usd:.4f} of ${self.max_cost_usd:.4f})")
            self.calls += 1

    def charge(self, cost: float) -> None:
        with self._lock:
            self.cost_usd += cost


_LIMITERS: dict[str, tuple[int, threading.BoundedSemaphore]] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter(model: str, limit: int) -> threading.BoundedSemaphore:
    """The process-wide in-flight limit of `model`, shared by every LLM of that model string.

    Asking again with a different limit installs a new semaphore (the latest configuration
    wins); LLM objects built before keep the one they got.
    """
    if limit < 1:
        raise ValueError(f"concurrency limit must be at least 1, got {limit}")
    with _LIMITERS_LOCK:
        current = _LIMITERS.get(model)
        if current is None or current[0] != limit:
            current = (limit, threading.BoundedSemaphore(limit))
            _LIMITERS[model] = current
        return current[1]

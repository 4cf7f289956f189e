"""The limits a run shares: the call and cost budget (Meter) and the per-model concurrency
limit (limiter), under threads."""
from __future__ import annotations

import threading

import pytest

from skillopt.errors import BudgetExhausted
from skillopt.models.limits import Meter, limiter
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings, HandlerResult, register_provider

from tests.models.fakes import MSGS, Script, fake


def _hammer(model: LLM, threads: int, calls_each: int) -> list[str]:
    outcomes: list[str] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        for i in range(calls_each):
            try:
                model.complete([{"role": "user", "content": f"{t}-{i}"}], stage="rollout", step=0)
                result = "ok"
            except BudgetExhausted:
                result = "budget"
            with lock:
                outcomes.append(result)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return outcomes


def test_meter_max_calls_is_never_exceeded_under_threads():
    script = Script("ok")
    meter = Meter(max_calls=30)
    model, _ = fake(script, prefix="fake_meter", meter=meter)
    outcomes = _hammer(model, threads=10, calls_each=5)
    assert len(script.calls) == 30 and meter.calls == 30
    assert outcomes.count("ok") == 30 and outcomes.count("budget") == 20


def test_meter_cost_cap_overshoots_by_at_most_the_calls_in_flight():
    threads = 6
    script = Script(("ok", 0.1))
    meter = Meter(max_cost_usd=0.5)
    model, _ = fake(script, prefix="fake_cost", meter=meter)
    outcomes = _hammer(model, threads=threads, calls_each=10)
    assert outcomes.count("budget") > 0
    assert 0.5 <= meter.cost_usd <= 0.5 + 0.1 * (threads - 1) + 1e-9
    assert len(script.calls) == outcomes.count("ok")


def test_cached_calls_are_free():
    meter = Meter(max_calls=1)
    model, _ = fake(Script("ok"), prefix="fake_free", meter=meter)
    for _ in range(5):
        model.complete(MSGS, stage="rollout", step=0)
    assert meter.calls == 1
    with pytest.raises(BudgetExhausted):
        model.complete(MSGS[:1], stage="rollout", step=0)


def test_concurrency_limit_is_shared_by_every_role_of_a_model():
    limit, inside, peak = 4, [0], [0]
    lock = threading.Lock()
    barrier = threading.Barrier(limit, timeout=20)  # lets exactly `limit` callers meet at a time

    def handler(name, messages, settings, response_format):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        try:
            barrier.wait()
        finally:
            with lock:
                inside[0] -= 1
        return HandlerResult("ok", 1, 1)

    register_provider("fake_slow", handler, via_litellm=True)
    settings = GenSettings(max_retries=0)
    roles = [LLM("fake_slow/m", role, settings, use_cache=False, max_concurrency=limit)
             for role in ("target", "optimizer", "judge")]
    errors: list[str] = []

    def work(i: int) -> None:
        reply = roles[i % 3].complete([{"role": "user", "content": str(i)}], stage="rollout", step=0)
        if not reply.ok:
            errors.append(reply.error)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert errors == []
    assert peak[0] == limit


def test_limiter_is_one_semaphore_per_model_string():
    assert limiter("fake/a", 3) is limiter("fake/a", 3)
    assert limiter("fake/a", 3) is not limiter("fake/b", 3)
    with pytest.raises(ValueError):
        limiter("fake/a", 0)

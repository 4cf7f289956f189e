"""A run as one file: every row the store holds for it, in a versioned format.

`python -m skillopt export RUN --bundle FILE` writes it, `python -m skillopt import FILE` reads it
into any store, and a Ray trial returns one to the head, which imports it over the progress it
recorded. The tables are read from the database itself (every table with a run_id column, and
the runs row), so a table a later migration adds travels without a change here; a bundle from
an older or newer schema imports the columns both sides know.

Format (gzip-compressed JSON): {"format": FORMAT, "version": VERSION, "run_id": ...,
"migrations": [...], "tables": {name: {"columns": [...], "rows": [[...], ...]}}}. Integer
primary keys (llm_calls.id, events.id) are left out and numbered afresh on import, in the
same order. A bundle is data only: no code runs on import, table and column names are
checked against the target schema, and every row must belong to the bundle's run.
No secret is in it: the store never holds one (models travel as environment variable names).
"""
from __future__ import annotations

import gzip
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import UserError
from ..store.writer import Store
from ..vocabulary import LIVE_STATUSES

FORMAT = "skillopt-run-bundle"
VERSION = 1
EXCLUDED = ("sweep_trials",)  # the sweep's bookkeeping names runs but is not part of one
MAX_BYTES = 512 * 1024 * 1024  # uncompressed: a guard against a hostile or corrupt file


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: str  # the column naming the run: runs.id, else run_id
    rowid: str | None  # an INTEGER PRIMARY KEY column, numbered afresh on import
    has_step: bool


def tables(conn: sqlite3.Connection) -> dict[str, Table]:
    """The run's tables in this database, read from its schema."""
    out = {}
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    for name in names:
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        cols = tuple(r[1] for r in info)
        key = "id" if name == "runs" else "run_id"
        if key not in cols or name in EXCLUDED or name.startswith(("_", "sqlite_")):
            continue
        pks = [r for r in info if r[5]]
        rowid = pks[0][1] if len(pks) == 1 and str(pks[0][2]).upper() == "INTEGER" and name != "runs" else None
        out[name] = Table(name, cols, key, rowid, "step" in cols)
    return out


def collect(conn: sqlite3.Connection, run_id: str, *, since_step: int | None = None,
            after: Mapping[str, int] | None = None, items: bool = True) -> tuple[dict, dict[str, int]]:
    """The run's rows: all of them, or (for progress reports) only rows at steps >= since_step
    and rows numbered after `after[table]`. Returns (tables, the last number seen per table)."""
    out, marks = {}, dict(after or {})
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")  # one snapshot: a trainer committing meanwhile is seen whole or not at all
    try:
        for t in tables(conn).values():
            if t.name == "items" and not items:
                continue
            cols = [c for c in t.columns if c != t.rowid]
            sql, params = f'SELECT {_names(cols)}{", " + t.rowid if t.rowid else ""} FROM "{t.name}" ' \
                          f'WHERE "{t.key}" = ?', [run_id]
            if t.rowid and after is not None:
                sql, params = sql + f" AND {t.rowid} > ?", params + [marks.get(t.name, 0)]
            elif since_step is not None and t.has_step:
                sql, params = sql + " AND step >= ?", params + [since_step]
            rows = conn.execute(sql + " ORDER BY rowid", params).fetchall()
            if t.rowid and rows:
                marks[t.name] = max(r[-1] for r in rows)
            out[t.name] = {"columns": cols, "rows": [list(r[:len(cols)]) for r in rows]}
    finally:
        if own:
            conn.execute("COMMIT")
    return out, marks


def _names(cols) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def dumps(conn: sqlite3.Connection, run_id: str) -> bytes:
    run_tables, _ = collect(conn, run_id)
    if not run_tables.get("runs", {}).get("rows"):
        raise UserError(f"no run {run_id} to export")
    try:
        migrations = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    except sqlite3.OperationalError:
        migrations = []
    doc = {"format": FORMAT, "version": VERSION, "run_id": run_id, "exported_at": time.time(),
           "migrations": migrations, "tables": run_tables}
    return gzip.compress(json.dumps(doc, ensure_ascii=False).encode("utf-8"), mtime=0)


def loads(data: bytes, origin: str = "bundle") -> dict[str, Any]:
    """Parse and check a bundle; one-line UserError on anything that is not one."""
    try:
        raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if len(raw) > MAX_BYTES:
            raise UserError(f"{origin}: bundle is over {MAX_BYTES // 2**20} MB uncompressed")
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{origin}: not a SkillOpt run bundle ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UserError(f"{origin}: not a SkillOpt run bundle")
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise UserError(f"{origin}: bundle format version {version!r}; this SkillOpt reads versions up to {VERSION}")
    _check(doc, origin)
    return doc


def _check(doc: dict, origin: str) -> None:
    run_id, run_tables = doc.get("run_id"), doc.get("tables")
    if not isinstance(run_id, str) or not run_id or not isinstance(run_tables, dict):
        raise UserError(f"{origin}: bundle has no run id or no tables")
    for name, data in run_tables.items():
        cols = data.get("columns") if isinstance(data, dict) else None
        rows = data.get("rows") if isinstance(data, dict) else None
        if not isinstance(cols, list) or not isinstance(rows, list) or not all(isinstance(c, str) for c in cols):
            raise UserError(f"{origin}: table {name!r} is malformed")
        key = "id" if name == "runs" else "run_id"
        if key not in cols:
            raise UserError(f"{origin}: table {name!r} has no {key} column")
        at = cols.index(key)
        for row in rows:
            if not isinstance(row, list) or len(row) != len(cols) or row[at] != run_id or not all(
                    v is None or isinstance(v, (str, int, float)) for v in row):
                raise UserError(f"{origin}: table {name!r} holds a row that is not of run {run_id}")
    if len(run_tables.get("runs", {}).get("rows", [])) != 1:
        raise UserError(f"{origin}: bundle must hold exactly one runs row")


def write(conn: sqlite3.Connection, doc: dict, *, replace: bool = False, overrides: Mapping[str, Any] | None = None,
          live_as_stopped: bool = True) -> list[str]:
    """Insert the bundle's rows (inside the caller's transaction). Returns what was left out:
    tables or columns this store does not have."""
    run_id, target = doc["run_id"], tables(conn)
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
        if not replace:
            raise UserError(f"run {run_id} already exists in this store (import --replace overwrites it)")
        for t in target.values():
            conn.execute(f'DELETE FROM "{t.name}" WHERE "{t.key}" = ?', (run_id,))
    left_out = []
    for name, data in doc["tables"].items():
        t = target.get(name)
        if t is None:
            left_out.append(f"table {name}")
            continue
        left_out += [f"column {name}.{c}" for c in data["columns"] if c not in t.columns]
        cols = [c for c in data["columns"] if c in t.columns and c != t.rowid]
        rows = [[row[data["columns"].index(c)] for c in cols] for row in data["rows"]]
        if name == "runs":
            known = {k: v for k, v in (overrides or {}).items() if k in t.columns}
            cols, rows = _run_row(cols, rows[0], known, live_as_stopped)
        conn.executemany(f'INSERT INTO "{name}" ({_names(cols)}) VALUES ({", ".join("?" * len(cols))})', rows)
    return left_out


def _run_row(cols: list[str], row: list, overrides: Mapping[str, Any],
             live_as_stopped: bool) -> tuple[list[str], list[list]]:
    values = dict(zip(cols, row))
    if live_as_stopped and values.get("status") in LIVE_STATUSES:
        # Its trainer ran elsewhere and is not running here: resumable, not live.
        values.update(status="stopped", reason="imported while it was running", pid=None)
    values.update(overrides)
    return list(values), [list(values.values())]


def upsert(conn: sqlite3.Connection, run_tables: Mapping[str, Any], run_id: str,
           overrides: Mapping[str, Any] | None = None) -> None:
    """Merge a progress report (collect(since_step=..., after=...)) into the store, inside the
    caller's transaction. A stop requested here meanwhile is kept."""
    target = tables(conn)
    row = conn.execute("SELECT stop_requested FROM runs WHERE id = ?", (run_id,)).fetchone()
    stop = bool(row and row[0])
    for name, data in run_tables.items():
        t = target.get(name)
        if t is None or not data["rows"]:
            continue
        cols = [c for c in data["columns"] if c in t.columns and c != t.rowid]
        rows = [[r[data["columns"].index(c)] for c in cols] for r in data["rows"]]
        if name == "runs":
            values = dict(zip(cols, rows[0])) | dict(overrides or {})
            if stop:
                values["stop_requested"] = 1
                if values.get("status") in ("running", "waiting_approval"):
                    values["status"] = "stopping"
            cols, rows = list(values), [list(values.values())]
        verb = "INSERT" if t.rowid else "INSERT OR REPLACE"
        conn.executemany(f'{verb} INTO "{name}" ({_names(cols)}) VALUES ({", ".join("?" * len(cols))})', rows)


def forget(conn: sqlite3.Connection, run_id: str) -> None:
    """Delete every row of the run (a trial re-run from its start replaces its progress)."""
    for t in tables(conn).values():
        conn.execute(f'DELETE FROM "{t.name}" WHERE "{t.key}" = ?', (run_id,))


# ---- files ------------------------------------------------------------------------------

def export_bundle(conn: sqlite3.Connection, run_id: str, path: str | os.PathLike) -> Path:
    data = dumps(conn, run_id)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)  # never a half-written bundle
    return out


def import_bundle(store: Store, data: bytes, *, origin: str = "bundle", replace: bool = False,
                  overrides: Mapping[str, Any] | None = None, live_as_stopped: bool = True) -> tuple[str, list[str]]:
    """Import a bundle into the store in one transaction: (run id, what was left out)."""
    doc = loads(data, origin)
    with store.tx() as c:
        left_out = write(c, doc, replace=replace, overrides=overrides, live_as_stopped=live_as_stopped)
    return doc["run_id"], left_out


def read_file(path: str | os.PathLike) -> bytes:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: bundle file not found")
    if p.stat().st_size > MAX_BYTES:
        raise UserError(f"{path}: bundle file is over {MAX_BYTES // 2**20} MB")
    return p.read_bytes()

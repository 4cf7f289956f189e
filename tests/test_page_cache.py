"""The dashboard's read cache (skillopt/ui/common.py): keyed by the store's version, so a page
opened again on an unchanged store reads nothing, and any commit makes the next read fresh."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from skillopt.store.writer import Store
from skillopt.ui import common


@pytest.fixture
def store_copy(sim_run, tmp_path, monkeypatch) -> tuple[Path, str]:
    """A private copy of the fixture store (this test writes to it), as the dashboard's store."""
    src, run_id = sim_run
    db = tmp_path / "skillopt.db"
    with sqlite3.connect(src) as a, sqlite3.connect(db) as b:
        a.backup(b)
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    return db, run_id


def queries(seen: list[str], table: str) -> int:
    """Reads of `table` (not the readiness probe every call makes: SELECT 1 FROM runs LIMIT 1)."""
    return sum(f"FROM {table} " in sql and not sql.startswith("SELECT 1 ") for sql in seen)


def test_a_read_is_cached_until_any_commit(store_copy):
    db, run_id = store_copy
    seen: list[str] = []
    common.reader().conn.set_trace_callback(seen.append)
    first = common.cached("run", run_id)
    assert first["stop_requested"] == 0 and queries(seen, "runs") == 1
    assert common.cached("run", run_id) == first and queries(seen, "runs") == 1  # unchanged store: no query
    store = Store(db)
    try:
        store.request_stop(run_id)  # another connection commits, as a live trainer or Approvals does
    finally:
        store.close()
    assert common.cached("run", run_id)["stop_requested"] == 1 and queries(seen, "runs") == 2


def test_the_version_changes_with_every_commit_and_tells_readers_apart(store_copy):
    db, run_id = store_copy
    before = common.store_version()
    assert common.store_version() == before
    store = Store(db)
    try:
        store.request_stop(run_id)
        after = common.store_version()
        store.clear_stop(run_id)
        assert len({before, after, common.store_version()}) == 3
    finally:
        store.close()
    common.st.cache_resource.clear()  # a new reader (connection) counts data_version anew
    assert common.store_version()[0] != before[0]


def test_no_store_yet_has_no_version(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOPT_DB", str(tmp_path / "none.db"))
    assert common.store_version() is None and common.cached("runs") is None


def test_a_view_is_built_once_per_version_and_shared(store_copy):
    db, run_id = store_copy
    built: list[str] = []

    def steps_of(run: str) -> tuple:
        built.append(run)
        return tuple(s["step"] for s in common.reader().steps(run))

    first = common.view(steps_of, run_id)
    assert common.view(steps_of, run_id) is first and built == [run_id]  # the same object, not a copy
    store = Store(db)
    try:
        store.request_stop(run_id)
    finally:
        store.close()
    assert common.view(steps_of, run_id) == first and built == [run_id, run_id]


def test_views_of_same_named_builders_in_different_files_stay_apart(store_copy):
    """Pages run as __main__: two pages' builders of one name must not share a view."""
    _, run_id = store_copy
    namespace_a: dict = {}
    namespace_b: dict = {}
    exec(compile("def figure(run):\n    return 'a'\n", "pages/a.py", "exec"), namespace_a)
    exec(compile("def figure(run):\n    return 'b'\n", "pages/b.py", "exec"), namespace_b)
    assert (common.view(namespace_a["figure"], run_id), common.view(namespace_b["figure"], run_id)) == ("a", "b")

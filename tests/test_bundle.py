"""Run bundles: `export RUN --bundle FILE` then `import FILE` into an empty store gives the same
run (every row, and every page renders it identically); hostile or broken files are refused in
one line; a live run arrives stopped; a bundle holds no planted key."""
from __future__ import annotations

import difflib
import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt.errors import UserError
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.sweep import bundle

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = ("app.py", "pages/2_Monitor.py", "pages/3_Skill_evolution.py", "pages/4_Gate_timeline.py",
         "pages/5_Slow_updates.py", "pages/6_Approvals.py", "pages/7_Rollouts.py", "pages/8_Compare_runs.py")


def cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SKILLOPT_DB"}
    return subprocess.run([sys.executable, "-m", "skillopt", *args, "--db", str(db)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def round_trip(sim_run, tmp_path_factory):
    """(original db, imported db, run id, bundle file): exported and imported through the CLI."""
    src, run_id = sim_run
    folder = tmp_path_factory.mktemp("bundle")
    out = cli("export", run_id, "--bundle", str(folder / "run.bundle"), db=src)
    assert out.returncode == 0, out.stderr
    dst = folder / "imported.db"
    out = cli("import", str(folder / "run.bundle"), db=dst)
    assert out.returncode == 0 and out.stdout.strip() == f"imported run {run_id}", out.stdout + out.stderr
    return src, dst, run_id, folder / "run.bundle"


def table_rows(db: Path, run_id: str) -> dict[str, list]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {name: sorted(map(repr, data["rows"])) for name, data in bundle.collect(conn, run_id)[0].items()}
    finally:
        conn.close()


def test_every_row_of_the_run_survives_the_round_trip(round_trip):
    src, dst, run_id, _ = round_trip
    before, after = table_rows(src, run_id), table_rows(dst, run_id)
    assert before == after
    assert len(before["rollouts"]) > 100 and len(before["llm_calls"]) > 100 and before["steps"]


def page_text(at: AppTest) -> str:
    """Everything a rendered page holds: every element's protobuf, dataframes as CSV."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if type(node).__name__ == "Dataframe":  # its Arrow bytes vary run to run; its values must not
            out.append(node.value.to_csv())
        elif proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)
    walk(at._tree)
    return "\n".join(out)


def render(db: Path, page: str, run_id: str, monkeypatch) -> str:
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=120)
    if page != "app.py":
        at.switch_page(page)
    at.query_params["run"] = run_id
    at.query_params["runs"] = run_id
    at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    # Volatile by design: a download button's file id and a styled table's uuid are random per
    # render; the path is the store's own.
    text = page_text(at).replace(str(db), "<db>")
    return re.sub(r'(file_id|uuid): "[0-9a-f]+"', r"\1", text)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_the_imported_run_identically(round_trip, page, monkeypatch):
    src, dst, run_id, _ = round_trip
    original = render(src, page, run_id, monkeypatch)
    imported = render(dst, page, run_id, monkeypatch)
    assert run_id in original or page == "app.py"
    assert imported == original, "\n".join(difflib.unified_diff(original.splitlines(), imported.splitlines(),
                                                                 "original", "imported", n=2, lineterm=""))[:4000]


def test_import_refuses_a_run_it_already_holds_unless_replace(round_trip):
    _, dst, run_id, path = round_trip
    out = cli("import", str(path), db=dst)
    assert out.returncode == 2 and "already exists" in out.stderr and "--replace" in out.stderr
    out = cli("import", str(path), "--replace", db=dst)
    assert out.returncode == 0
    assert Reader(dst).q("SELECT COUNT(*) AS n FROM runs")[0]["n"] == 1
    assert table_rows(dst, run_id) == table_rows(round_trip[0], run_id)  # replaced, not doubled


def doc_of(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def write(path: Path, doc: dict) -> Path:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_broken_and_hostile_bundles_are_refused_in_one_line(round_trip, tmp_path):
    _, _, run_id, path = round_trip
    doc = doc_of(path)
    other = json.loads(json.dumps(doc))
    steps = other["tables"]["steps"]
    steps["rows"][0][steps["columns"].index("run_id")] = "someone-else"
    injected = json.loads(json.dumps(doc))
    injected["tables"]["runs"]["columns"][0] = 'id" TEXT); DROP TABLE runs; --'
    cases = {
        "not gzip or json": b"\x00\x01 garbage",
        "wrong format": gzip.compress(json.dumps({"format": "other"}).encode()),
        "newer version": gzip.compress(json.dumps(doc | {"version": 99}).encode()),
        "truncated": path.read_bytes()[:200],
    }
    messages = {}
    for name, data in cases.items():
        messages[name] = cli("import", str(write_bytes(tmp_path / f"{name}.bundle", data)), db=tmp_path / "x.db")
    messages["row of another run"] = cli("import", str(write(tmp_path / "other.bundle", other)), db=tmp_path / "x.db")
    messages["column name injection"] = cli("import", str(write(tmp_path / "inj.bundle", injected)),
                                            db=tmp_path / "x.db")
    for name, out in messages.items():
        assert out.returncode == 2, (name, out.stdout, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, name
    assert "versions up to 1" in messages["newer version"].stderr
    assert "not of run" in messages["row of another run"].stderr
    assert Reader(tmp_path / "x.db").q("SELECT COUNT(*) AS n FROM runs")[0]["n"] == 0


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_unknown_tables_and_columns_are_left_out_and_named(round_trip, tmp_path):
    _, _, run_id, path = round_trip
    doc = doc_of(path)
    doc["tables"]["future_table"] = {"columns": ["run_id", "x"], "rows": [[run_id, 1]]}
    doc["tables"]["steps"]["columns"].append("future_column")
    for row in doc["tables"]["steps"]["rows"]:
        row.append(0.5)
    out = cli("import", str(write(tmp_path / "f.bundle", doc)), db=tmp_path / "f.db")
    assert out.returncode == 0, out.stderr
    assert "table future_table" in out.stdout and "column steps.future_column" in out.stdout
    assert len(Reader(tmp_path / "f.db").steps(run_id)) == len(doc["tables"]["steps"]["rows"])


def test_a_live_run_arrives_stopped_and_resumable(round_trip, tmp_path):
    _, _, run_id, path = round_trip
    doc = doc_of(path)
    runs = doc["tables"]["runs"]
    runs["rows"][0][runs["columns"].index("status")] = "running"
    store = Store(tmp_path / "l.db")
    try:
        imported, left_out = bundle.import_bundle(store, gzip.compress(json.dumps(doc).encode()))
        row = store.run(imported)
    finally:
        store.close()
    assert left_out == [] and row["status"] == "stopped" and row["pid"] is None
    assert "imported while it was running" in row["reason"]


def test_export_needs_a_target_and_names_a_missing_run(round_trip, tmp_path):
    src, _, _, _ = round_trip
    out = cli("export", "nope", "--bundle", str(tmp_path / "n.bundle"), db=src)
    assert out.returncode == 2 and "no run nope" in out.stderr
    out = cli("export", "nope", db=src)
    assert out.returncode == 2 and "--out DIR" in out.stderr and "--bundle FILE" in out.stderr
    with pytest.raises(UserError, match="not found"):
        bundle.read_file(tmp_path / "missing.bundle")


def test_a_bundle_holds_the_key_variable_name_never_the_key(tmp_path, monkeypatch):
    from tests.helpers import run_sim

    secret = "sk-planted-bundle-0123456789abcdef"
    monkeypatch.setenv("SKILLOPT_BUNDLE_TEST_KEY", secret)
    db = tmp_path / "k.db"
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1", "target_api_key_env=SKILLOPT_BUNDLE_TEST_KEY")
    out = cli("export", run_id, "--bundle", str(tmp_path / "k.bundle"), db=db)
    assert out.returncode == 0, out.stderr
    data = gzip.decompress((tmp_path / "k.bundle").read_bytes()).decode()
    assert "SKILLOPT_BUNDLE_TEST_KEY" in data and secret not in data

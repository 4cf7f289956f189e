"""Security: the dashboard listens on 127.0.0.1 only; a planted API key never reaches the
database file, the run log, the exports or a page; model output and skill text never
render as raw HTML; Python evaluators and plug-ins load only from the folder the user named.
(Upload size limits and validation: tests/test_bad_input.py.)
"""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from browser_util import start_dashboard, stop_process
from tests.helpers import sim_config
from skillopt.store import export
from skillopt import runner
from skillopt.models import sim
from skillopt.models.jsonreply import extract_json
from skillopt.models.providers import register_provider
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.tasks.loader import validate_task

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))
SMALL = ("num_epochs=2", "max_steps_per_epoch=2", "batch_size=16", "slow_update_samples=8",
         "selection_size=20", "test_size=20")
OPENAI_KEY = "sk-planted-" + secrets.token_hex(16)  # matches the sk- pattern
CREDENTIAL = "cred-planted-" + secrets.token_hex(16)  # only known as the value of the configured api_key_env
CREDENTIAL_ENV = "SKILLOPT_TEST_CREDENTIAL"  # no secret-looking suffix: redacted because it is api_key_env


def page_text(at: AppTest) -> str:
    """Everything a rendered page holds: every element's protobuf, dataframes as CSV."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
            if type(node).__name__ == "Dataframe":
                out.append(node.value.to_csv())
        for child in getattr(node, "children", {}).values():
            walk(child)
    walk(at._tree)
    return "\n".join(out)


def render(page: str, run_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    return at


# ---- a run whose model sees and echoes the planted keys ---------------------------------------------

LEAKY = """
import os, sys, threading
from collections import Counter
sys.path.insert(0, sys.argv[1])
from skillopt import cli
from skillopt.models import llm, sim, simworld
from skillopt.models.providers import ProviderError, register_provider

seen, lock = Counter(), threading.Lock()

def leaky(name, messages, settings, response_format):
    # A provider that quotes the credentials in its errors, as some real ones do.
    quote = f"key {os.environ['SKILLOPT_TEST_CREDENTIAL']} / Authorization: Bearer {os.environ['OPENAI_API_KEY']}"
    if name == "fatal":
        raise ProviderError("auth", f"Incorrect API key provided: {quote}")
    text = str(messages)
    with lock:
        seen[text] += 1
        attempt = seen[text]
    u = simworld.unit("leak", text)
    if u < 0.03 or (u < 0.25 and attempt == 1):  # some always fail, more fail once
        raise ProviderError("rate_limit", f"Rate limit reached for {quote}", 0.01)
    return sim.handle("target", messages, settings, response_format)

register_provider("leaky", leaky, via_litellm=True)
llm._sleep = lambda s: None
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.fixture(scope="module")
def leaky_runs(tmp_path_factory):
    """Two CLI runs with planted keys: one completes through faults, one dies on a bad key."""
    tmp = tmp_path_factory.mktemp("leak")
    db, log = tmp / "leak.db", tmp / "run.log"
    env = dict(os.environ, OPENAI_API_KEY=OPENAI_KEY, **{CREDENTIAL_ENV: CREDENTIAL}, SKILLOPT_DB=str(db))
    ids = []
    for model, run_id in (("leaky/target", "leak-ok"), ("leaky/fatal", "leak-fatal")):
        sets = [*SMALL, f"target_model={model}", "optimizer_model=sim/optimizer",
                f"target_api_key_env={CREDENTIAL_ENV}", f"optimizer_api_key_env={CREDENTIAL_ENV}"]
        argv = ["train", "--task", "sim-rulebook", "--run-id", run_id, "--db", str(db)]
        for s in sets:
            argv += ["--set", s]
        with open(log, "ab") as fh:  # what the launcher does: the trainer's output is the run log
            subprocess.run([sys.executable, "-c", LEAKY, str(ROOT), *argv], cwd=ROOT, env=env, stdout=fh,
                           stderr=subprocess.STDOUT, timeout=300)
        ids.append(run_id)
    out = tmp / "export"
    for run_id in ids:
        export.export_run(Reader(db), run_id, out / run_id)
    return db, log, out, ids


def planted_in(data: bytes) -> list[str]:
    return [name for name, key in (("OPENAI_API_KEY", OPENAI_KEY), (CREDENTIAL_ENV, CREDENTIAL))
            if key.encode() in data]


def test_the_provider_really_quoted_the_keys(leaky_runs):
    db, log, _, (ok, fatal) = leaky_runs
    reader = Reader(db)
    assert reader.run(ok)["status"] == "completed"
    assert reader.run(fatal)["status"] == "failed" and "***" in reader.run(fatal)["reason"]
    faults = reader.call_faults(ok, 1000)  # retried attempts are notes, failed calls errors: both redacted
    quoted = [text for c in faults for text in (c["error"], c["note"]) if "Rate limit" in text]
    assert any(c["note"] for c in faults) and quoted and all("***" in text for text in quoted)
    assert "Incorrect API key provided" in log.read_text(errors="replace")


def test_no_planted_key_in_the_database_file(leaky_runs):
    db = leaky_runs[0]
    files = [p for p in db.parent.iterdir() if p.name.startswith(db.name)]  # the db, its -wal and -shm
    assert len(files) >= 1
    for path in files:
        assert planted_in(path.read_bytes()) == [], path.name


def test_no_planted_key_in_the_log_or_the_exports(leaky_runs):
    _, log, out, ids = leaky_runs
    assert planted_in(log.read_bytes()) == []
    exported = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(exported) == 3 * len(ids)
    for path in exported:
        assert planted_in(path.read_bytes()) == [], path


def test_no_planted_key_on_any_page(leaky_runs, monkeypatch):
    db, _, _, ids = leaky_runs
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv(CREDENTIAL_ENV, CREDENTIAL)
    for run_id in ids:
        for page in PAGES:
            assert planted_in(page_text(render(page, run_id)).encode()) == [], (page, run_id)


# ---- the server binds localhost ---------------------------------------------------------------------

def listeners(port: int) -> list[tuple[str, str]]:
    """(table, hex local address) of every socket listening on `port`, from /proc/net/tcp{,6}."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                found.append((table, address))
    return found


def outward_address() -> str | None:
    """This machine's non-loopback IPv4 address, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.fixture(scope="module")
def dashboard(leaky_runs, tmp_path_factory):
    db = leaky_runs[0]
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    saved = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", CREDENTIAL_ENV)}
    os.environ.update({"OPENAI_API_KEY": OPENAI_KEY, CREDENTIAL_ENV: CREDENTIAL})  # the server's environment
    try:
        dash = start_dashboard(db, log)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield dash
    stop_process(dash.proc)


def test_dashboard_listens_on_127_0_0_1_only(dashboard):
    port = int(dashboard.url.rsplit(":", 1)[1])
    assert listeners(port) == [("/proc/net/tcp", "0100007F")]  # 127.0.0.1, and no IPv6 / 0.0.0.0 socket
    address = outward_address()
    if address is not None:
        with pytest.raises(OSError):
            socket.create_connection((address, port), timeout=5).close()
    with urllib.request.urlopen(f"{dashboard.url}/_stcore/health", timeout=10) as resp:
        assert resp.read() == b"ok"


def test_served_html_holds_no_planted_key(dashboard, leaky_runs):
    for path in ("/", f"/Monitor?run={leaky_runs[3][0]}", f"/Rollouts?run={leaky_runs[3][0]}"):
        with urllib.request.urlopen(dashboard.url + path, timeout=10) as resp:
            html = resp.read()
        assert b"<html" in html.lower() and planted_in(html) == []


# ---- untrusted text is never rendered as HTML --------------------------------------------------------

PAYLOADS = ("<script>alert('skillopt')</script>", "<img src=x onerror=alert('skillopt')>")


def hostile(name, messages, settings, response_format):
    """The simulated world, with HTML in every target answer and in every proposed edit."""
    role = name.split("?")[0]
    answer = sim.handle(name, messages, settings, response_format)
    if role == "target":
        return dataclasses.replace(answer, text=f"{answer.text} {PAYLOADS[0]} {PAYLOADS[1]}")
    try:
        obj = extract_json(answer.text)
    except ValueError:
        return answer
    for edit in obj.get("edits") or []:
        if isinstance(edit, dict) and isinstance(edit.get("content"), str) and edit["content"]:
            edit["content"] += f" {PAYLOADS[1]}"
    return dataclasses.replace(answer, text=json.dumps(obj))


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    register_provider("hostile", hostile)
    db = tmp_path_factory.mktemp("xss") / "x.db"
    seed = ("# Order routing\n\nReply with the route only.\n\n" + PAYLOADS[0] + "\n\n- Bold <b>claims</b> and "
            + PAYLOADS[1] + "\n")
    store = Store(db)
    try:
        run_id, _ = runner.start(store, "sim-rulebook", sim_config(
            *SMALL, "target_model=hostile/target", "optimizer_model=hostile/optimizer?faults=0"), seed_skill=seed)
    finally:
        store.close()
    return db, run_id


def test_model_output_and_skill_text_never_render_as_html(hostile_run, monkeypatch):
    db, run_id = hostile_run
    reader = Reader(db)
    assert PAYLOADS[1] in reader.best_skill(run_id), "the hostile edits should have been accepted"
    monkeypatch.setenv("SKILLOPT_DB", str(db))
    shown_somewhere = False
    for page in PAGES:
        at = render(page, run_id)
        for m in at.markdown:
            if m.proto.allow_html:  # only the diff view may render HTML, and it escapes the text
                assert "<script" not in m.value and "<img" not in m.value, page
        assert not at.get("html") or all("<script" not in str(h.proto) for h in at.get("html")), page
        shown_somewhere |= any(PAYLOADS[0] in c.value for c in at.code)
    assert shown_somewhere, "the payload must be on some page, as text"


# ---- user code loads only from the folder the user named --------------------------------------------

EVIL = "import os, pathlib\npathlib.Path(os.environ['SKILLOPT_TEST_MARKER']).write_text('ran')\n" \
       "def score(item, output):\n    return 1.0\ndef make(task):\n    return task\n"


def task_with(tmp: Path, **toml_lines: str) -> Path:
    """A copy of a small valid fixture task with its evaluator / plugin replaced."""
    folder = tmp / "task"
    shutil.copytree(Path(__file__).parent / "fixtures" / "bad" / "tasks" / "python-function-missing", folder)
    (folder / "scorer.py").unlink()
    text = (folder / "task.toml").read_text(encoding="utf-8")
    text = text.replace('function = "scorer:nope"', f'function = "{toml_lines.get("function", "inside:score")}"')
    if "plugin" in toml_lines:
        text = f'plugin = "{toml_lines["plugin"]}"\n' + text
    (folder / "task.toml").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("spec", [
    {"function": "evil:score"},  # a module beside the task folder, not in it
    {"function": "../evil:score"},
    {"function": "/tmp/evil:score"},
    {"function": "evil.py:score"},
    {"plugin": "evil:make"},
    {"plugin": "../evil:make"},
], ids=lambda s: "=".join(next(iter(s.items()))))
def test_user_code_outside_the_task_folder_never_runs(tmp_path, monkeypatch, spec):
    marker = tmp_path / "marker"
    monkeypatch.setenv("SKILLOPT_TEST_MARKER", str(marker))
    (tmp_path / "evil.py").write_text(EVIL, encoding="utf-8")
    folder = task_with(tmp_path, **spec)
    (folder / "inside.py").write_text(EVIL.replace("'ran'", "'inside'"), encoding="utf-8")
    problems = validate_task(folder)
    assert problems and all("\n" not in p for p in problems)
    assert not marker.exists() or marker.read_text() == "inside"  # only the task's own module may run


def test_user_code_inside_the_task_folder_runs(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("SKILLOPT_TEST_MARKER", str(marker))
    folder = task_with(tmp_path, function="inside:score")
    (folder / "inside.py").write_text(EVIL, encoding="utf-8")
    assert validate_task(folder) == []
    assert marker.read_text() == "ran"  # the check above is meaningful: named code does load

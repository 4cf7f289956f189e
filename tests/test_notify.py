"""Notifications: real simulated runs notify a local HTTP receiver on 127.0.0.1 through Apprise's
JSON target; secrets are ${ENV} placeholders expanded only when sending; a failing notifier is
a warning, never a failed run."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from skillopt.config import load_config
from skillopt.errors import ConfigError
from skillopt.integrations import notify
from skillopt.store.export import export_run
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from tests.helpers import run_sim

SECRET = "hook-s3cret-7f1d9a"
ROOT = Path(__file__).resolve().parent.parent


class Receiver:
    """What the local HTTP endpoint received: (path, JSON body) per POST."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.got.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "hook/${HOOK_TOKEN}") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def titles(self) -> list[str]:
        return [body["title"] for _, body in self.got]


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", SECRET)


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events(db: Path, run_id: str, kind: str) -> list[str]:
    return [e["message"] for e in Reader(db).events(run_id, 1000) if e["type"] == kind]


def test_a_run_notifies_each_new_best_and_its_end(tmp_path, receiver, secret_env):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "num_epochs=2", f"notify={receiver.url()}")
    r = Reader(db)
    new_best = [s["step"] for s in r.steps(run_id) if s["decision"] == "accept_new_best"]
    new_best += [g["step"] for g in r.gate_decisions(run_id) if g["kind"] == "slow_update"
                 and g["decision"] == "accept_new_best"]
    assert new_best, "the simulated run finds new best skills"
    assert receiver.titles() == ["SkillOpt: new best skill"] * len(new_best) + ["SkillOpt: run completed"]
    assert {path for path, _ in receiver.got} == {f"/hook/{SECRET}"}  # the placeholder was expanded to send
    end = receiver.got[-1][1]
    tests = r.tests(run_id)
    assert run_id in end["message"] and f"best {tests['best']['score']:.3f}" in end["message"]
    assert end["type"] == "success"
    assert len(events(db, run_id, "notify")) == len(receiver.got)
    assert not events(db, run_id, "warning")
    # the secret is in none of the run's records: database (with its WAL), exports, events
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert SECRET.encode() not in stored and b"${HOOK_TOKEN}" in stored
    out = tmp_path / "export"
    export_run(r, run_id, out)
    for f in out.iterdir():
        assert SECRET not in f.read_text()
    assert json.loads((out / "run.json").read_text())["run"]["config"]["notify"] == receiver.url()


def test_approval_needed_is_sent_while_the_run_waits(tmp_path, receiver, secret_env):
    db = tmp_path / "a.db"
    worker = threading.Thread(target=run_sim, args=(db, "num_epochs=1", "max_steps_per_epoch=1", "approval_mode=true",
                                                    "approval_poll_s=0.05", f"notify={receiver.url()}"))
    worker.start()
    deadline = time.time() + 60
    while time.time() < deadline and "SkillOpt: approval needed" not in receiver.titles():
        time.sleep(0.05)
    body = receiver.got[0][1]
    assert body["title"] == "SkillOpt: approval needed" and body["type"] == "warning"
    store = Store(db)
    pending = store.query("SELECT * FROM approvals WHERE status = 'pending'")
    run_id = pending[0]["run_id"]
    assert f"decision on {len(pending)} edit(s) of step 1" in body["message"] and run_id in body["message"]
    for p in pending:
        store.decide(run_id, 1, p["idx"], "approved")
    worker.join(60)
    assert not worker.is_alive()
    assert receiver.titles()[-1] == "SkillOpt: run completed"
    store.close()


def test_budget_80_percent_is_sent_once_even_across_a_resume(tmp_path, receiver, secret_env):
    from skillopt import runner

    db = tmp_path / "b.db"
    run_id = run_sim(db, "num_epochs=2", "max_calls=400", f"notify={receiver.url()}")
    r = Reader(db)
    assert r.run(run_id)["status"] == "budget_exhausted"
    assert receiver.titles().count(notify.BUDGET_TITLE) == 1
    sent = receiver.got[receiver.titles().index(notify.BUDGET_TITLE)][1]["message"]
    used = int(sent.split(" has used ")[1].split(" of ")[0])
    assert 320 <= used <= 400
    assert receiver.titles()[-1] == "SkillOpt: run budget_exhausted"
    store = Store(db)  # resumed with the same budget: it ends at once, without a second budget message
    runner.resume(store, run_id)
    store.close()
    assert receiver.titles().count(notify.BUDGET_TITLE) == 1


def test_a_stopped_run_says_so(tmp_path, receiver, secret_env):
    from skillopt import runner

    db = tmp_path / "s.db"
    store = Store(db)

    def stop_after_first_step(event):
        if type(event).__name__ == "StepCompleted":
            store.request_stop(event.run_id)

    config = load_config(None, ["target_model=sim/target", "optimizer_model=sim/optimizer", "num_epochs=1",
                                f"notify={receiver.url()}"])
    run_id, status = runner.start(store, "sim-rulebook", config, callbacks=(stop_after_first_step,))
    store.close()
    assert status == "stopped"
    assert receiver.titles()[-1] == "SkillOpt: run stopped"
    assert "stop requested" in receiver.got[-1][1]["message"]


def test_an_unreachable_notifier_is_a_warning_and_the_run_completes(tmp_path, secret_env, capsys):
    db = tmp_path / "u.db"
    port = closed_port()
    run_id = run_sim(db, "num_epochs=1", f"notify=json://127.0.0.1:{port}/hook/${{HOOK_TOKEN}}")
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed" and r.tests(run_id)["best"]["score"] is not None
    warnings = events(db, run_id, "warning")
    assert warnings and all(w.startswith("notify target 1 (json://) failed:") for w in warnings)
    assert all("\n" not in w and SECRET not in w for w in warnings)
    assert not events(db, run_id, "notify")
    err = capsys.readouterr().err
    assert "warning: notify target 1 (json://) failed" in err and SECRET not in err


def test_an_unset_placeholder_is_a_warning_and_nothing_is_sent(tmp_path, receiver, monkeypatch):
    monkeypatch.delenv("HOOK_TOKEN", raising=False)
    db = tmp_path / "m.db"
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1", f"notify={receiver.url()}")
    assert receiver.got == []
    warnings = events(db, run_id, "warning")
    assert warnings and all("${HOOK_TOKEN} is not set in the environment; not sent" in w for w in warnings)
    assert Reader(db).run(run_id)["status"] == "completed"


def test_every_target_gets_the_message_and_one_failing_target_spares_the_others(receiver, secret_env):
    warned: list[str] = []
    urls = f"json://127.0.0.1:{closed_port()}/x/${{HOOK_TOKEN}}, {receiver.url('a')} {receiver.url('b')}"
    assert notify.send(urls, "T", "B", warned.append) == 2
    assert sorted(p for p, _ in receiver.got) == ["/a", "/b"]
    assert len(warned) == 1 and warned[0].startswith("notify target 1 (json://) failed") and SECRET not in warned[0]


def test_a_finished_sweep_is_sent_after_its_trials(tmp_path, receiver, secret_env):
    db = tmp_path / "sw.db"
    done = subprocess.run([sys.executable, "-m", "skillopt", "sweep", "start", "--task", "sim-rulebook", "--grid",
                           "learning_rate=2,4", "--set", "target_model=sim/target", "--set",
                           "optimizer_model=sim/optimizer", "--set", "num_epochs=1", "--set", "max_steps_per_epoch=1",
                           "--set", f"notify={receiver.url()}", "--workers", "2", "--name", "lr grid", "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert receiver.titles().count("SkillOpt: run completed") == 2  # each trial is an ordinary run
    assert receiver.titles()[-1] == "SkillOpt: sweep completed"
    body = receiver.got[-1][1]
    assert "Sweep lr grid (sim-rulebook" in body["message"] and body["type"] == "success"
    assert receiver.got[-1][0] == f"/hook/{SECRET}"


def test_notify_accepts_a_list_and_refuses_what_is_not_a_url_or_holds_a_secret(tmp_path, monkeypatch):
    toml = tmp_path / "c.toml"
    toml.write_text('notify = ["json://127.0.0.1:1/a", "json://127.0.0.1:1/b/${HOOK_TOKEN}"]\n')
    assert load_config(toml).notify == "json://127.0.0.1:1/a json://127.0.0.1:1/b/${HOOK_TOKEN}"
    with pytest.raises(ConfigError, match="must hold Apprise URLs"):
        load_config(None, ["notify=127.0.0.1:1/a"])
    with pytest.raises(ConfigError, match="not an environment variable name"):
        load_config(None, ["notify=json://h/${1-BAD}"])
    monkeypatch.setenv("HOOK_TOKEN", SECRET)
    with pytest.raises(ConfigError) as info:
        load_config(None, [f"notify=json://127.0.0.1:1/b/{SECRET}"])
    assert "write ${HOOK_TOKEN} instead" in str(info.value) and SECRET not in str(info.value)


def test_the_expanded_secret_never_reaches_the_applications_logs(receiver, secret_env, caplog):
    import logging

    caplog.set_level(logging.DEBUG)  # an application logging everything, Apprise's debug lines included
    assert notify.send(receiver.url(), "T", "B", lambda m: None) == 1
    assert receiver.got[0][0] == f"/hook/{SECRET}"
    assert SECRET not in caplog.text

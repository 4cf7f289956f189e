"""MLflow: live logging, `export --mlflow` and the Prompt Registry, against real MLflow tracking
stores (a SQLite backend in tmp, and `mlflow server` on 127.0.0.1), read back through MLflow's
own client. The expected values come from the SkillOpt store, read independently of the code
under test."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from skillopt import cli
from skillopt.config import load_config
from skillopt.errors import ConfigError
from skillopt.store.export import steps_csv, run_document
from skillopt.store.reader import Reader
from tests.helpers import run_sim
from tests.killer import run_killer

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no network beyond 127.0.0.1
from mlflow import MlflowClient  # noqa: E402

RUN = ("num_epochs=2",)


def client(uri: str) -> MlflowClient:
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def mlflow_runs(c: MlflowClient, run_id: str) -> list:
    exps = [e.experiment_id for e in c.search_experiments()]
    return c.search_runs(exps, filter_string=f"tags.`skillopt.run_id` = '{run_id}'")


def history(c: MlflowClient, mid: str, key: str) -> list[tuple[int, float]]:
    return sorted((int(m.step), m.value) for m in c.get_metric_history(mid, key))


def artifact_paths(c: MlflowClient, mid: str, folder: str) -> list[str]:
    return sorted(a.path for a in c.list_artifacts(mid, folder))


def read_artifact(c: MlflowClient, mid: str, path: str, tmp: Path) -> str:
    return Path(c.download_artifacts(mid, path, str(tmp))).read_text(encoding="utf-8")


def expected_steps(reader: Reader, run_id: str) -> list[tuple[int, float]]:
    """(step, best selection score) of the seed and every step, straight from the store."""
    return [(0, reader.seed_score(run_id))] + [(s["step"], s["best_score"]) for s in reader.steps(run_id)]


def check_logged_run(c: MlflowClient, db: Path, run_id: str, tmp: Path) -> str:
    """Everything the store holds is in the MLflow run, each step exactly once; returns its id."""
    r = Reader(db)
    run = r.run(run_id)
    [mrun] = mlflow_runs(c, run_id)
    mid = mrun.info.run_id
    assert run["mlflow_run_id"] == mid
    assert mrun.data.params == {k: str(v) for k, v in run["config"].items()}
    assert history(c, mid, "selection_best") == expected_steps(r, run_id)
    steps = r.steps(run_id)
    assert history(c, mid, "train_hard") == [(s["step"], s["train_hard"]) for s in steps]
    assert history(c, mid, "edit_budget") == [(s["step"], float(s["edit_budget"])) for s in steps]
    assert history(c, mid, "selection_candidate") == [(s["step"], s["candidate_score"]) for s in steps
                                                      if s["candidate_score"] is not None]
    # usage is what the run had spent when the step completed (the final tests come later)
    for s in (steps[0], steps[-1]):
        calls = r.q("SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND cached = 0 AND created_at <= ?",
                    (run_id, s["finished_at"]))[0]["n"]
        assert (s["step"], float(calls)) in history(c, mid, "calls")
    assert len(history(c, mid, "calls")) == len(steps) + 1
    tests = r.tests(run_id)
    for which in ("seed", "best", "final"):
        assert [v for _, v in history(c, mid, f"test_{which}")] == [tests[which]["score"]]
    versions = r.versions(run_id)
    assert artifact_paths(c, mid, "skills") == sorted(f"skills/step_{v['step']:04d}_{v['kind']}.md" for v in versions)
    candidates = [v for v in versions if v["kind"] == "candidate"]
    assert {f"diffs/step_{v['step']:04d}_candidate.diff" for v in candidates} <= set(artifact_paths(c, mid, "diffs"))
    assert read_artifact(c, mid, "best_skill.md", tmp) == r.best_skill(run_id)
    assert read_artifact(c, mid, "steps.csv", tmp) == steps_csv(run_document(r, run_id))
    assert json.loads(read_artifact(c, mid, "run.json", tmp))["run"]["id"] == run_id
    assert mrun.info.status == "FINISHED"
    return mid


def check_prompt(c: MlflowClient, db: Path, run_id: str) -> None:
    """One prompt version, the best skill, its commit message listing each accepted step's evidence."""
    r = Reader(db)
    run = r.run(run_id)
    versions = c.search_prompt_versions(f"skillopt-{run['task']}")
    mine = [v for v in versions if v.tags.get("skillopt.run_id") == run_id]
    assert len(mine) == 1
    pv = mine[0]
    assert pv.template == r.best_skill(run_id)
    assert pv.tags["skillopt.task"] == run["task"]
    accepted = [g for g in r.gate_decisions(run_id) if g["kind"] == "step" and g["decision"].startswith("accept")
                and g["step"] <= run["best_step"]]
    assert accepted, "the simulated run accepts edits"
    for g in accepted:
        flips = json.loads(g["flipped_json"])
        fixed = sum(1 for _, a, b in flips if b > a)
        line = (f"step {g['step']}: selection {g['current_score']:.3f} → {g['candidate_score']:.3f}, "
                f"{len(flips)} items flipped (+{fixed} fixed / −{len(flips) - fixed} broken)")
        assert line in pv.commit_message
    for e in r.edits(run_id):
        if e["gate"] == "accepted" and e["step"] <= run["best_step"] and e["op"] == "add":
            assert " ".join(e["content"].split())[:40] in pv.commit_message


# ---- a local SQLite tracking store ---------------------------------------------------------

def test_live_run_logs_everything_and_registers_the_best_skill(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    db = tmp_path / "runs.db"
    run_id = run_sim(db, *RUN, f"mlflow_tracking_uri={uri}")
    c = client(uri)
    mid = check_logged_run(c, db, run_id, tmp_path / "dl")
    check_prompt(c, db, run_id)
    exp = c.get_experiment(c.get_run(mid).info.experiment_id)
    assert exp.name == "skillopt/sim-rulebook"
    # artifacts sit beside the MLflow database, not in the folder the trainer ran from
    assert Path(exp.artifact_location.removeprefix("file://")) == tmp_path / "mlartifacts"
    assert not [e for e in Reader(db).events(run_id, 500) if e["type"] == "warning"]


def test_export_logs_a_stored_run_and_a_second_export_adds_nothing(tmp_path, capsys):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, *RUN)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["export", run_id, "--db", str(db), "--mlflow", "--tracking-uri", uri, "--experiment", "ci"]
    assert cli.main(args) == 0
    assert "prompt version skillopt-sim-rulebook/1" in capsys.readouterr().out
    c = client(uri)
    mid = check_logged_run(c, db, run_id, tmp_path / "dl")
    check_prompt(c, db, run_id)
    assert c.get_experiment(c.get_run(mid).info.experiment_id).name == "ci"
    before = {k: history(c, mid, k) for k in ("selection_best", "calls", "test_best")}
    assert cli.main(args) == 0
    assert "0 step(s) logged" in capsys.readouterr().out
    assert {k: history(c, mid, k) for k in before} == before
    assert len(mlflow_runs(c, run_id)) == 1
    assert len(c.search_prompt_versions("skillopt-sim-rulebook")) == 1


def test_an_export_into_another_experiment_is_another_mlflow_run_but_not_another_version(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    db = tmp_path / "runs.db"
    run_id = run_sim(db, *RUN, f"mlflow_tracking_uri={uri}")
    live = Reader(db).run(run_id)["mlflow_run_id"]
    assert cli.main(["export", run_id, "--db", str(db), "--mlflow", "--experiment", "review"]) == 0
    assert "prompt version skillopt-sim-rulebook/1" in capsys.readouterr().out
    c = client(uri)
    runs = {r.info.run_id: c.get_experiment(r.info.experiment_id).name for r in mlflow_runs(c, run_id)}
    assert runs[live] == "skillopt/sim-rulebook" and sorted(runs.values()) == ["review", "skillopt/sim-rulebook"]
    assert len(c.search_prompt_versions("skillopt-sim-rulebook")) == 1
    exported = next(i for i, name in runs.items() if name == "review")
    assert history(c, exported, "selection_best") == history(c, live, "selection_best")


def test_a_killed_run_resumes_the_same_mlflow_run_without_duplicate_steps(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    db, run_id = tmp_path / "runs.db", "killed-mlflow"
    # Killed right after the store committed step 2, before the MLflow callback saw it.
    assert run_killer(db, run_id, "StepCompleted@2", "start", *RUN, f"mlflow_tracking_uri={uri}") == -9
    c = client(uri)
    [mrun] = mlflow_runs(c, run_id)
    assert mrun.info.status == "RUNNING"
    assert [s for s, _ in history(c, mrun.info.run_id, "selection_best")] == [0, 1]
    assert Reader(db).steps(run_id)[-1]["step"] == 2
    assert run_killer(db, run_id, 0, "resume") == 0
    mid = check_logged_run(c, db, run_id, tmp_path / "dl")
    assert mid == mrun.info.run_id
    check_prompt(c, db, run_id)


def test_an_unreachable_tracking_server_is_one_warning_and_the_run_completes(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    db = tmp_path / "runs.db"
    started = time.time()
    run_id = run_sim(db, *RUN, f"mlflow_tracking_uri=http://127.0.0.1:{port}")
    assert time.time() - started < 60
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    assert r.steps(run_id) and r.tests(run_id)["best"]["score"] > r.tests(run_id)["seed"]["score"]
    warnings = [e["message"] for e in r.events(run_id, 500) if e["type"] == "warning"]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert f"127.0.0.1:{port}" in warnings[0] and f"export {run_id} --mlflow" in warnings[0]


def test_export_to_an_unreachable_server_is_a_one_line_error(tmp_path, capsys):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert cli.main(["export", run_id, "--db", str(db), "--mlflow", "--tracking-uri", f"http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: MLflow export to") and "\n" not in err
    assert cli.main(["export", run_id, "--db", str(db), "--mlflow"]) == 2
    assert "no MLflow tracking URI" in capsys.readouterr().err


def test_the_skillopt_store_itself_is_refused_as_tracking_store(tmp_path):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1", f"mlflow_tracking_uri=sqlite:///{db}")
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    [warning] = [e["message"] for e in r.events(run_id, 500) if e["type"] == "warning"]
    assert "names the SkillOpt store itself" in warning
    tables = {row["name"] for row in r.q("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "experiments" not in tables


def test_params_hold_placeholders_never_secret_values(tmp_path, monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", "s3cret-hook-value-42")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    db = tmp_path / "runs.db"
    # a notifier nobody listens on: the run must still log its params
    run_id = run_sim(db, "num_epochs=1", "max_steps_per_epoch=1", f"mlflow_tracking_uri={uri}",
                     "notify=json://127.0.0.1:9/hook/${HOOK_TOKEN}")
    c = client(uri)
    [mrun] = mlflow_runs(c, run_id)
    assert mrun.data.params["notify"] == "json://127.0.0.1:9/hook/${HOOK_TOKEN}"
    mlflow_bytes = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "runs.db" not in p.name)
    assert b"s3cret-hook-value-42" not in mlflow_bytes


@pytest.mark.parametrize("override,message", [
    ("mlflow_tracking_uri=localhost:5000/x", "must be a URI"),
    ("mlflow_tracking_uri=http://bob:hunter2@127.0.0.1:5000", "must not hold credentials"),
])
def test_malformed_tracking_uris_are_one_line_config_errors(override, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_config(None, [override])
    assert "\n" not in str(info.value)


# ---- `mlflow server` on 127.0.0.1 ---------------------------------------------------------

@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """A real `mlflow server` (SQLite backend, local artifact store) on a free port of 127.0.0.1."""
    root = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1", "--backend-store-uri",
                             f"sqlite:///{root / 'server.db'}", "--artifacts-destination", str(root / "artifacts")],
                            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            assert proc.poll() is None, (root / "server.log").read_text()[-2000:]
            time.sleep(0.5)
    else:
        pytest.fail("mlflow server did not start: " + (root / "server.log").read_text()[-2000:])
    yield url
    os.killpg(proc.pid, signal.SIGTERM)  # the server and the workers it started, nothing else
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    log.close()


def test_live_run_and_export_against_mlflow_server(mlflow_server, tmp_path, capsys):
    db = tmp_path / "runs.db"
    run_id = run_sim(db, *RUN, f"mlflow_tracking_uri={mlflow_server}")
    c = client(mlflow_server)
    mid = check_logged_run(c, db, run_id, tmp_path / "dl")
    check_prompt(c, db, run_id)
    assert not [e for e in Reader(db).events(run_id, 500) if e["type"] == "warning"]
    before = history(c, mid, "selection_best")
    assert cli.main(["export", run_id, "--db", str(db), "--mlflow"]) == 0  # the run's own URI
    assert f"mlflow run {mid}" in capsys.readouterr().out
    assert history(c, mid, "selection_best") == before
    assert len([v for v in c.search_prompt_versions("skillopt-sim-rulebook")
                if v.tags.get("skillopt.run_id") == run_id]) == 1

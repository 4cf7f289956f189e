"""MLflow live: a trainer callback that logs a run as it trains, and `export --mlflow`.

The callback comes after the store among the trainer's callbacks, so each event's unit of work
is committed when it runs; it reads what to log from the store (mlflow_log.py), exactly as the
export does, so a live run and an export of it log the same thing. On a resume it first logs
whatever the store committed that MLflow missed (a kill between the two, a server that was
down), and never a step twice. If MLflow fails, one warning is recorded and logging stops for
the rest of the process; the run goes on, and `export --mlflow` catches up later.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import events as ev
from ..config import RunConfig
from ..errors import UserError
from ..store.reader import Reader
from ..vocabulary import FINAL_STATUSES
from . import mlflow_log as ml
from .mlflow_prompt import register_best

REGISTER_ON = ("completed", "incomplete", "budget_exhausted")  # a stopped or failed run will be resumed first


def brief(exc: Exception) -> str:
    """An exception in a few words: MLflow's messages repeat the whole URL and a retry history."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first if len(first) <= 160 else first[:159] + '…'}"


def save_id(store: Any, run_id: str, mlflow_run_id: str) -> None:
    with store.tx() as c:
        c.execute("UPDATE runs SET mlflow_run_id = ? WHERE id = ?", (mlflow_run_id, run_id))


def check_uri(uri: str, store_path: Any) -> None:
    db = ml.sqlite_path(uri)
    if db is not None and store_path is not None and db == Path(store_path).resolve():
        raise ValueError("mlflow_tracking_uri names the SkillOpt store itself; MLflow's tables (runs, metrics...) "
                         "would collide with the store's: use another file")


class MlflowSink:
    def __init__(self, store: Any, run_id: str, config: RunConfig, warn: Callable[[str], None]):
        self.store, self.run_id, self.warn = store, run_id, warn
        self.uri, self.experiment = config.mlflow_tracking_uri.strip(), config.mlflow_experiment
        self.target: ml.Target | None = None
        self.reader: Reader | None = None
        self.off = False

    def __call__(self, event: ev.Event) -> None:
        handler = _HANDLERS.get(type(event))
        if self.off or handler is None or (self.target is None and not isinstance(event, ev.RunStarted)):
            return
        try:
            handler(self, event)
        except Exception as exc:  # any MLflow or network failure: never the run's
            self.off = True
            self.warn(f"MLflow logging to {self.uri} stopped, the run goes on (`python -m skillopt export "
                      f"{self.run_id} --mlflow` catches up later): {brief(exc)}")

    def started(self, e: ev.RunStarted) -> None:
        check_uri(self.uri, getattr(self.store, "path", None))
        self.reader = self.reader or Reader(self.store.path)
        run = self.reader.run(self.run_id)
        client = ml.client_for(self.uri)
        self.target = ml.open_run(client, self.uri, self.experiment, run, run.get("mlflow_run_id") or "")
        if self.target.id != run.get("mlflow_run_id"):
            save_id(self.store, self.run_id, self.target.id)
        self.target.client.update_run(self.target.id, status="RUNNING")
        if e.resumed:
            ml.log_steps(self.target, self.reader, self.run_id)

    def step(self, e: ev.SeedScored | ev.StepCompleted) -> None:
        ml.log_steps(self.target, self.reader, self.run_id, [getattr(e, "step", 0)])

    def epoch(self, e: ev.EpochCompleted) -> None:
        ml.log_step_artifacts(self.target, self.reader, self.run_id, e.step)  # slow-update and epoch-end versions

    def test(self, e: ev.TestEvaluated) -> None:
        ml.log_tests(self.target, self.reader, self.run_id, e.state.step)

    def finished(self, e: ev.RunFinished) -> None:
        t, reader = self.target, self.reader
        ml.log_steps(t, reader, self.run_id)
        ml.log_documents(t, reader, self.run_id)
        if e.status in REGISTER_ON:
            register_best(t, reader, self.run_id)
        ml.finish(t, e.status)
        reader.close()
        self.target = self.reader = None


_HANDLERS = {
    ev.RunStarted: MlflowSink.started,
    ev.SeedScored: MlflowSink.step,
    ev.StepCompleted: MlflowSink.step,
    ev.EpochCompleted: MlflowSink.epoch,
    ev.TestEvaluated: MlflowSink.test,
    ev.RunFinished: MlflowSink.finished,
}


def export_mlflow(store: Any, run_id: str, uri: str = "", experiment: str = "", prompt: str = "") -> dict[str, Any]:
    """Log a stored run to MLflow (or bring its MLflow run up to date); returns what it did.
    The tracking URI and experiment default to the run's own config."""
    reader = Reader(store.path)
    try:
        run = reader.run(run_id)
        if run is None:
            raise UserError(f"no run {run_id} in {store.path}")
        uri = (uri or run["config"].get("mlflow_tracking_uri") or "").strip()
        if not uri:
            raise UserError("no MLflow tracking URI: pass --tracking-uri or set mlflow_tracking_uri in the run's "
                            "config")
        experiment = experiment or run["config"].get("mlflow_experiment") or ""
        try:
            check_uri(uri, store.path)
            return _export(store, reader, run, uri, experiment, prompt)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"MLflow export to {uri} failed: {brief(exc)}") from None
    finally:
        reader.close()


def _export(store: Any, reader: Reader, run: dict, uri: str, experiment: str, prompt: str) -> dict[str, Any]:
    run_id = run["id"]
    t = ml.open_run(ml.client_for(uri), uri, experiment, run, run.get("mlflow_run_id") or "")
    if t.id != run.get("mlflow_run_id"):
        save_id(store, run_id, t.id)
    steps = ml.log_steps(t, reader, run_id)
    ml.log_tests(t, reader, run_id, run["step"] or 0)
    ml.log_documents(t, reader, run_id)
    version = register_best(t, reader, run_id, prompt)
    if run["status"] in FINAL_STATUSES:
        ml.finish(t, run["status"])
    return {"mlflow_run_id": t.id, "experiment": ml.experiment_name(experiment, run["task"]),
            "steps_logged": steps, "prompt_version": version}

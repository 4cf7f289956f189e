"""What a SkillOpt run looks like in MLflow, read from the store.

One MLflow run per SkillOpt run, found again by its tag `skillopt.run_id` (and by the id kept in
runs.mlflow_run_id), so a resumed run, a second export, or a live run and then an export all
continue the same MLflow run. Every write is idempotent: a param is logged once (MLflow refuses
to change one), a step's metrics only when that step is not in MLflow yet, an artifact
overwrites its path, and the best skill is registered only when its sha is not the version the
run registered last. So `export --mlflow` also catches up whatever a live run could not log.

    params     the whole config (secrets are ${ENV_VAR} placeholders there, never values)
    metrics    per step, step 0 being the seed: train_hard, train_soft, selection_current,
               selection_candidate, selection_best, edit_budget, edits_proposed, edits_applied,
               accepted, and cumulative calls, prompt_tokens, completion_tokens, cost_usd;
               at the end test_seed, test_best, test_final
    artifacts  skills/step_NNNN_<kind>.md (every stored skill version), diffs/step_NNNN_<kind>.diff
               (each candidate against the skill it would replace), best_skill.md, steps.csv, run.json
    prompt     the best skill as a new Prompt Registry version; its commit message lists the
               accepted edits with their gate evidence, its tags name the run, task and sha
"""
from __future__ import annotations

import difflib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..models.redaction import redact
from ..store.export import run_document, steps_csv
from ..store.reader import Reader
from ..vocabulary import ACCEPTED

SENTINEL = "selection_best"  # logged with every step, in the same batch: its history says which steps are in
MAX_MESSAGE = 4000  # MLflow keeps a version's description in a 5,000-character column
METRICS_PER_BATCH = 900  # MLflow accepts at most 1,000 metrics in one log_batch
RUN_TAG = "skillopt.run_id"


def client_for(uri: str):
    """An MLflow client bound to `uri` for tracking and the Prompt Registry (no global state)."""
    # Runs promise no network beyond what the user configured: no usage telemetry. An unreachable
    # server must cost seconds, not MLflow's default minutes of retries, before the warning.
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def sqlite_path(uri: str) -> Path | None:
    """The database file of a sqlite:/// tracking URI, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):]).expanduser().resolve()


def experiment_name(configured: str, task: str) -> str:
    return configured.strip() or f"skillopt/{task}"


def prompt_name(task: str) -> str:
    """Prompt names allow letters, digits, '-', '_' and '.' only."""
    return "skillopt-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", task).strip("-") or "task")


def experiment_id(client: Any, name: str, uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    db = sqlite_path(uri)
    # Beside the SQLite file, not in whatever folder the trainer happens to run from.
    location = (db.parent / "mlartifacts").as_uri() if db else None
    try:
        return client.create_experiment(name, artifact_location=location)
    except Exception:  # another trainer created it a moment ago
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


@dataclass
class Target:
    """The MLflow run a SkillOpt run logs to, and the steps it already holds."""
    client: Any
    id: str
    steps: set[int] = field(default_factory=set)


def open_run(client: Any, uri: str, experiment: str, run: dict[str, Any], known_id: str = "") -> Target:
    """The SkillOpt run's MLflow run (found by id or tag, else created), with its params logged."""
    exp = experiment_id(client, experiment_name(experiment, run["task"]), uri)
    mid = _find(client, exp, run["id"], known_id)
    if mid is None:
        mid = client.create_run(exp, run_name=run["name"] or run["id"], tags={
            RUN_TAG: run["id"], "skillopt.task": run["task"], "skillopt.simulated": str(bool(run["simulated"]))}
        ).info.run_id
    target = Target(client, mid, {int(m.step) for m in client.get_metric_history(mid, SENTINEL)})
    log_params(target, run["config"])
    return target


def _find(client: Any, exp: str, run_id: str, known_id: str) -> str | None:
    if known_id:
        try:
            found = client.get_run(known_id)
            if found.data.tags.get(RUN_TAG) == run_id and found.info.experiment_id == exp:
                return known_id
        except Exception:  # not on this tracking server (another URI, or deleted)
            pass
    hits = client.search_runs([exp], filter_string=f"tags.`{RUN_TAG}` = '{run_id}'", max_results=1)
    return hits[0].info.run_id if hits else None


def log_params(t: Target, config: dict[str, Any]) -> None:
    from mlflow.entities import Param

    have = t.client.get_run(t.id).data.params
    params = [Param(k, redact(str(v))) for k, v in sorted(config.items()) if k not in have]
    for i in range(0, len(params), 100):  # MLflow's limit of params per batch
        t.client.log_batch(t.id, params=params[i:i + 100])


USAGE = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


def usage_at(reader: Reader, run_id: str, moments: Iterable[float]) -> dict[float, dict[str, float]]:
    """Cumulative model usage at each moment: the calls recorded before it. A call row carries the
    time it ended, so this is what the run had spent when a step completed, the same for a live
    run, a resumed one and an export (test calls after the last step are not that step's)."""
    rows = reader.q("SELECT created_at, cached, prompt_tokens, completion_tokens, cost_usd FROM llm_calls "
                    "WHERE run_id = ? ORDER BY created_at", (run_id,))
    out, total, i = {}, [0.0, 0.0, 0.0, 0.0], 0
    for moment in sorted(set(moments)):
        while i < len(rows) and rows[i]["created_at"] <= moment:
            r = rows[i]
            total = [a + float(b or 0) for a, b in zip(total, (not r["cached"], r["prompt_tokens"],
                                                              r["completion_tokens"], r["cost_usd"]))]
            i += 1
        out[moment] = dict(zip(USAGE, total))
    return out


def step_metrics(reader: Reader, run_id: str) -> dict[int, tuple[int, dict[str, float]]]:
    """step -> (timestamp in ms, metrics) for the seed (step 0) and every completed step."""
    rows: dict[int, tuple[float, dict[str, Any]]] = {}
    seed = reader.one("SELECT score, created_at FROM skill_versions WHERE run_id = ? AND step = 0 AND kind = 'seed'",
                      (run_id,))
    if seed and seed["score"] is not None:
        rows[0] = (seed["created_at"], {"selection_current": seed["score"], SENTINEL: seed["score"]})
    for s in reader.steps(run_id):
        rows[s["step"]] = (s["finished_at"] or 0.0, {
            "train_hard": s["train_hard"], "train_soft": s["train_soft"], "selection_current": s["current_score"],
            "selection_candidate": s["candidate_score"], "edit_budget": s["edit_budget"],
            "edits_proposed": s["n_proposed"], "edits_applied": s["n_applied"],
            "accepted": float(s["decision"] in ACCEPTED), SENTINEL: s["best_score"]})
    usage = usage_at(reader, run_id, [moment for moment, _ in rows.values()])
    return {step: (int(moment * 1000), {k: float(v) for k, v in {**values, **usage[moment]}.items() if v is not None})
            for step, (moment, values) in rows.items()}


def log_steps(t: Target, reader: Reader, run_id: str, only: Iterable[int] | None = None) -> list[int]:
    """Log the metrics and artifacts of the steps MLflow does not hold yet; returns those steps."""
    from mlflow.entities import Metric

    wanted = None if only is None else set(only)
    todo = {s: m for s, m in step_metrics(reader, run_id).items()
            if s not in t.steps and (wanted is None or s in wanted)}
    batch: list[Any] = []
    for step in sorted(todo):
        ts, values = todo[step]
        # The sentinel goes last and a step never spans two batches: its presence means the step is in.
        batch += [Metric(k, v, ts, step) for k, v in values.items() if k != SENTINEL]
        batch.append(Metric(SENTINEL, values[SENTINEL], ts, step))
        if len(batch) >= METRICS_PER_BATCH:
            t.client.log_batch(t.id, metrics=batch)
            batch = []
    if batch:
        t.client.log_batch(t.id, metrics=batch)
    for step in sorted(todo):
        log_step_artifacts(t, reader, run_id, step)
        t.steps.add(step)
    return sorted(todo)


def log_step_artifacts(t: Target, reader: Reader, run_id: str, step: int) -> None:
    """Every skill version stored at `step`, and each candidate's diff against what it would replace."""
    versions = {v["kind"]: v["content"] for v in reader.q(
        "SELECT kind, content FROM skill_versions WHERE run_id = ? AND step = ?", (run_id, step))}
    for kind, text in versions.items():
        t.client.log_text(t.id, text or "", f"skills/step_{step:04d}_{kind}.md")
    before = {"candidate": reader.skill_at(run_id, step - 1) if step else None,
              "slow_update": versions.get("current")}
    for kind, old in before.items():
        if kind in versions and old is not None:
            diff = difflib.unified_diff(old.splitlines(keepends=True), versions[kind].splitlines(keepends=True),
                                        fromfile="incumbent", tofile=f"step {step} {kind}")
            t.client.log_text(t.id, "".join(diff), f"diffs/step_{step:04d}_{kind}.diff")


def log_tests(t: Target, reader: Reader, run_id: str, step: int) -> None:
    """test_seed, test_best, test_final, each logged again only when its value changed (a resumed
    run retries the errored items of an incomplete score)."""
    from mlflow.entities import Metric

    metrics = []
    for which, row in reader.tests(run_id).items():
        key, value = f"test_{which}", float(row["score"])
        if not any(m.value == value for m in t.client.get_metric_history(t.id, key)):
            metrics.append(Metric(key, value, int(time.time() * 1000), step))
    if metrics:
        t.client.log_batch(t.id, metrics=metrics)


def log_documents(t: Target, reader: Reader, run_id: str) -> None:
    """best_skill.md, steps.csv and run.json, as `export` writes them."""
    doc = run_document(reader, run_id)
    t.client.log_text(t.id, reader.best_skill(run_id) or "", "best_skill.md")
    t.client.log_text(t.id, steps_csv(doc), "steps.csv")
    t.client.log_text(t.id, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", "run.json")


def finish(t: Target, status: str) -> None:
    """End the MLflow run with the SkillOpt run's final status."""
    mlflow_status = {"completed": "FINISHED", "incomplete": "FINISHED", "budget_exhausted": "FINISHED",
                     "failed": "FAILED", "stopped": "KILLED"}.get(status)
    t.client.set_tag(t.id, "skillopt.status", status)
    if mlflow_status:
        t.client.set_terminated(t.id, mlflow_status)

"""Views of a run's progress shared by Home, Monitor and Compare: tables, ETA, charts.

Builders take rows as the Reader returns them and give back pandas frames or plotly
figures; the pages only lay them out. No streamlit here, so the numbers are testable.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt import schedules
from skillopt.launcher import process_alive
from skillopt.store import export
from skillopt.vocabulary import ACCEPTED, LIVE_STATUSES, ROLES, STAGES, TEST_SKILLS

# How the stage strip names each stage (the vocabulary gives the trainer's order).
STAGE_LABELS: dict[str, str] = {
    "rollout": "Rollout", "reflect": "Reflect", "aggregate": "Aggregate", "select": "Select",
    "approval": "Approval", "gate": "Gate", "slow_update": "Slow update", "meta": "Meta skill", "test": "Test",
    "done": "Done"}
# The dashboard's own status: a live-looking run whose trainer process is gone.
INTERRUPTED = "interrupted"
RESUMABLE = ("stopped", "failed", "incomplete", INTERRUPTED)  # incomplete: resuming retries the errored test items
SHOWS_LOG = ("failed", INTERRUPTED, "stopped", "budget_exhausted")  # the trainer's log explains these ends


def stage_label(stage: str) -> str:
    return STAGE_LABELS.get(stage, stage or "starting")


def stage_strip(stage: str) -> str:
    """The step's stages as one markdown line, the current one in bold (fixed labels only)."""
    return " → ".join(f"**:blue[{stage_label(key)}]**" if key == stage else stage_label(key) for key in STAGES)


# ---- status and timing ------------------------------------------------------------------

def effective_status(run: Mapping[str, Any]) -> str:
    """The stored status, or "interrupted" when a live-looking run's process is gone.

    A trainer killed hard (power loss, kill -9) never writes its final status; without this
    the dashboard would show it running forever and never offer Resume.
    """
    status = run.get("status") or ""
    if status in LIVE_STATUSES and run.get("pid") and not process_alive(run["pid"]):
        return INTERRUPTED
    return status


def can_resume(run: Mapping[str, Any]) -> bool:
    return effective_status(run) in RESUMABLE


def eta_seconds(steps: Sequence[Mapping[str, Any]], total_steps: int) -> float | None:
    """Mean step duration × steps left; None before the first step (nothing to average)."""
    durations = [s["duration_s"] for s in steps if s.get("duration_s") is not None]
    if not durations or not total_steps:
        return None
    done = max(s["step"] for s in steps)
    return max(0, total_steps - done) * (sum(durations) / len(durations))


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


def clock(ts: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else ""


def incumbent_after(step: Mapping[str, Any]) -> float | None:
    """The incumbent's selection score after a step (the candidate's when it was accepted)."""
    if step.get("decision") in ACCEPTED and step.get("candidate_score") is not None:
        return step["candidate_score"]
    return step.get("current_score")


def export_files(reader: Any, run_id: str) -> dict[str, tuple[str, Callable[[], str]]]:
    """file name -> (mime type, producer): what `skillopt export` writes, built only when downloaded."""
    return {
        "run.json": ("application/json",
                     lambda: json.dumps(export.run_document(reader, run_id), indent=2, ensure_ascii=False) + "\n"),
        "best_skill.md": ("text/markdown", lambda: reader.best_skill(run_id) or ""),
        "steps.csv": ("text/csv", lambda: export.steps_csv(export.run_document(reader, run_id))),
    }


# ---- Home: the runs table ---------------------------------------------------------------

def models_of(config: Mapping[str, Any]) -> str:
    target, optimizer = config.get("target_model", ""), config.get("optimizer_model", "")
    return target if target == optimizer else f"{target} → {optimizer}"


def runs_frame(runs: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in runs:
        config = json.loads(r.get("config_json") or "{}")
        lift = (r["best_test"] - r["seed_test"]) if r.get("best_test") is not None \
            and r.get("seed_test") is not None else None
        rows.append({
            "monitor": f"Monitor?run={r['id']}", "name": r.get("name") or r["id"], "task": r["task"],
            "models": models_of(config), "status": effective_status(r),
            "step": f"{r.get('step') or 0}/{r.get('total_steps') or 0}",
            "best selection": r.get("best_score"), "test lift": lift, "calls": r.get("calls") or 0,
            "cost $": r.get("cost_usd") or 0.0, "started": when(r.get("started_at") or r.get("created_at")),
            "simulated": "yes" if r.get("simulated") else "no", "id": r["id"],
        })
    columns = ["monitor", "name", "task", "simulated", "models", "status", "step", "best selection", "test lift",
               "calls", "cost $", "started", "id"]
    return pd.DataFrame(rows, columns=columns)


def filter_runs(frame: pd.DataFrame, statuses: Sequence[str], tasks: Sequence[str], simulated: str) -> pd.DataFrame:
    out = frame
    if statuses:
        out = out[out["status"].isin(statuses)]
    if tasks:
        out = out[out["task"].isin(tasks)]
    if simulated in ("yes", "no"):
        out = out[out["simulated"] == simulated]
    return out


# ---- Monitor: charts --------------------------------------------------------------------

def step_curves(steps: Sequence[Mapping[str, Any]], seed_score: float | None,
                tests: Mapping[str, Mapping[str, Any]], total_steps: int) -> go.Figure:
    """Train batch hard/soft, selection score of incumbent and candidate, best so far, test markers."""
    xs = [s["step"] for s in steps]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=[s["train_hard"] for s in steps], name="train batch (hard)",
                             mode="lines+markers", line={"dash": "dot"}))
    fig.add_trace(go.Scatter(x=xs, y=[s["train_soft"] for s in steps], name="train batch (soft)",
                             mode="lines", line={"dash": "dot"}, opacity=0.6))
    sel_x = ([0] if seed_score is not None else []) + xs
    sel_y = ([seed_score] if seed_score is not None else []) + [incumbent_after(s) for s in steps]
    fig.add_trace(go.Scatter(x=sel_x, y=sel_y, name="selection: current skill", mode="lines+markers",
                             line={"shape": "hv", "width": 3}))
    cand = [s for s in steps if s.get("candidate_score") is not None]
    fig.add_trace(go.Scatter(
        x=[s["step"] for s in cand], y=[s["candidate_score"] for s in cand], name="selection: candidate",
        mode="markers", marker={"symbol": ["circle" if s["decision"] in ACCEPTED else "x" for s in cand], "size": 9},
        text=[s["decision"] for s in cand], hovertemplate="step %{x}: candidate %{y:.3f} (%{text})<extra></extra>"))
    best_y = ([seed_score] if seed_score is not None else []) + [s["best_score"] for s in steps]
    fig.add_trace(go.Scatter(x=sel_x, y=best_y, name="best so far", mode="lines", line={"shape": "hv", "dash": "dash"}))
    end = max([total_steps, *xs]) if (xs or total_steps) else 0
    # Test scores sit just right of the last step, side by side, so equal scores stay visible.
    markers = dict(zip(TEST_SKILLS, (("triangle-down", 0.3), ("star", 0.5), ("diamond", 0.7))))
    for which, (symbol, dx) in markers.items():
        if which in tests:
            fig.add_trace(go.Scatter(x=[end + dx], y=[tests[which]["score"]], name=f"test: {which} skill",
                                     mode="markers", marker={"symbol": symbol, "size": 14},
                                     hovertemplate=f"test, {which} skill: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(xaxis_title="step", yaxis_title="score", yaxis_range=[-0.02, 1.02], height=420,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(dtick=1 if end <= 30 else None, range=[-0.3, end + 1])  # room for the whole run and tests
    return fig


def scheduled_budgets(config: Mapping[str, Any], total_steps: int) -> list[int]:
    """The edit budget the schedule gives each step (autonomous shows its cosine fallback)."""
    name = config.get("lr_scheduler", "cosine")
    lr, min_lr = int(config.get("learning_rate", 4)), int(config.get("min_learning_rate", 2))
    return [schedules.budget(name, i, total_steps, lr, min_lr) for i in range(total_steps)]


def budget_chart(steps: Sequence[Mapping[str, Any]], config: Mapping[str, Any], total_steps: int) -> go.Figure:
    fig = go.Figure()
    xs = [s["step"] for s in steps]
    fig.add_trace(go.Bar(x=xs, y=[s["edit_budget"] for s in steps], name="edit budget used", opacity=0.55))
    fig.add_trace(go.Bar(x=xs, y=[s["n_applied"] for s in steps], name="edits applied"))
    if total_steps:
        fig.add_trace(go.Scatter(x=list(range(1, total_steps + 1)), y=scheduled_budgets(config, total_steps),
                                 name=f"schedule ({config.get('lr_scheduler', 'cosine')})", mode="lines+markers",
                                 line={"shape": "hv"}))
    fig.update_layout(barmode="overlay", xaxis_title="step", yaxis_title="edits", height=320,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def usage_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=["stage", "role", "calls", "cache_hits", "errors", "notes",
                                              "prompt_tokens", "completion_tokens", "cost_usd", "latency_s"])
    return frame.fillna(0).rename(columns={"cache_hits": "cache hits", "prompt_tokens": "prompt tokens",
                                           "completion_tokens": "completion tokens", "cost_usd": "cost $",
                                           "latency_s": "model time s"})


def total_calls(usage: Mapping[str, Any]) -> int:
    """Real (uncached) model calls of all roles."""
    return int(sum(usage.get(f"{role}_calls", 0) for role in ROLES))


def tests_caption(tests: Mapping[str, Mapping[str, Any]]) -> str:
    return "Test split: " + " · ".join(f"{w} skill {tests[w]['score']:.3f}" for w in TEST_SKILLS if w in tests)


def tokens_caption(usage: Mapping[str, Any]) -> str:
    return (f"{usage.get('prompt_tokens', 0):,} prompt + {usage.get('completion_tokens', 0):,} completion "
            f"tokens · {usage.get('cache_hits', 0):,} response-cache hits · "
            f"{usage.get('eval_cache_hits', 0):,} evaluation-cache hits")


def events_table(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"time": clock(e["created_at"]), "step": e["step"], "type": e["type"], "message": e["message"]}
            for e in events]


def faults_heading(usage: Mapping[str, Any]) -> str:
    """Errors (failed calls) and notes (faults of calls that still answered) are counted
    apart: a run whose calls were merely retried has no errors."""
    return (f"**Model call faults** · {usage.get('errors', 0):,} error(s) · "
            f"{usage.get('notes', 0):,} note(s)")


def faults_table(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"step": c["step"], "stage": c["stage"], "role": c["role"], "model": c["model"],
             "attempts": c["attempts"], "error": c["error"] or "", "note": c["note"] or ""} for c in calls]


# ---- Compare ----------------------------------------------------------------------------

def compare_label(run: Mapping[str, Any]) -> str:
    """The run's name and the end of its id (names repeat: demo runs share theirs)."""
    return f"{run['name'] or run['id']} ({run['id'][-6:]})"


def selection_curve(steps: Sequence[Mapping[str, Any]], seed_score: float | None) -> tuple[list[int], list]:
    xs = ([0] if seed_score is not None else []) + [s["step"] for s in steps]
    ys = ([seed_score] if seed_score is not None else []) + [incumbent_after(s) for s in steps]
    return xs, ys


def compare_chart(curves: Mapping[str, tuple[list[int], list]]) -> go.Figure:
    fig = go.Figure()
    for label, (xs, ys) in curves.items():
        fig.add_trace(go.Scatter(x=xs, y=ys, name=label, mode="lines+markers", line={"shape": "hv"}))
    fig.update_layout(xaxis_title="step", yaxis_title="selection score (current skill)", yaxis_range=[-0.02, 1.02],
                      height=420, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def params_frame(runs: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Keys × runs (config plus task and results); returns the frame and the keys that differ."""
    table: dict[str, dict[str, Any]] = {}
    for run, label in zip(runs, labels):
        config = run.get("config") or json.loads(run.get("config_json") or "{}")
        column = {"task": run.get("task"), "status": run.get("status"), "simulated": bool(run.get("simulated")),
                  "best selection score": run.get("best_score"), "test: seed": run.get("seed_test"),
                  "test: best": run.get("best_test"), "test: final": run.get("final_test")}
        column |= {k: config[k] for k in sorted(config)}
        table[label] = column
    keys = list(dict.fromkeys(k for column in table.values() for k in column))
    differing = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True, default=str)
                                         for c in table.values()}) > 1]
    frame = pd.DataFrame({label: [_cell(column.get(k)) for k in keys] for label, column in table.items()},
                         index=keys)
    return frame, differing


def _cell(value: Any) -> str:
    """One display type per column (strings), so mixed config values never confuse the table."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{round(value, 4):g}"
    return str(value)

"""Views of a run's progress shared by Home, Monitor and Compare: status, timing, the test
headline, tables and charts.

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
from skillopt.models.providers import prompt_fault
from skillopt.process import runs_elsewhere, trainer_alive
from skillopt.store import export
from skillopt.ui.labels import TEST_LABELS, call_stage_label
from skillopt.ui.plotting import line_mode, marked
from skillopt.window import FITTED
from skillopt.vocabulary import ACCEPTED, FINAL_STATUSES, LIVE_STATUSES, ROLES, SIM_PREFIX, STAGES

# How the stage strip names each stage (the vocabulary gives the trainer's order).
STAGE_LABELS: dict[str, str] = {
    "rollout": "Rollout", "reflect": "Reflect", "aggregate": "Aggregate", "select": "Select",
    "approval": "Approval", "gate": "Gate", "slow_update": "Slow update", "meta": "Meta skill", "test": "Test",
    "done": "Done"}
# The dashboard's own status: a live-looking run whose trainer process is gone.
INTERRUPTED = "interrupted"
RESUMABLE = ("stopped", "failed", "incomplete", INTERRUPTED)  # incomplete: resuming retries the errored test items
SHOWS_LOG = ("failed", INTERRUPTED, "stopped", "budget_exhausted")  # the trainer's log explains these ends
# Ends before the last stage: the stage strip highlights none of its stages.
ENDED_EARLY = tuple(s for s in FINAL_STATUSES if s not in ("completed", "incomplete")) + (INTERRUPTED,)


def stage_label(stage: str) -> str:
    return STAGE_LABELS.get(stage, stage or "starting")


def stage_strip(stage: str, status: str = "") -> str:
    """The step's stages as one markdown line, the current one in bold (fixed labels only).

    A run that ended without completing highlights no stage: its stored stage says "done"
    though it stopped in the middle of a step, and "Done" in bold would read as finished.
    """
    if status in ENDED_EARLY:
        strip = " → ".join(stage_label(key) for key in STAGES if key != "done")
        return f"{strip} · **:red[ended early: {status.replace('_', ' ')}]**"
    return " → ".join(f"**:blue[{stage_label(key)}]**" if key == stage else stage_label(key) for key in STAGES)


# ---- status and timing ------------------------------------------------------------------

def effective_status(run: Mapping[str, Any]) -> str:
    """The stored status, or "interrupted" when a live-looking run's trainer is gone.

    A trainer killed hard (power loss, kill -9) never writes its final status; without this
    the dashboard would show it running forever and never offer Resume. The trainer counts
    as gone only when this machine can tell: same host, and its pid no longer names the
    process that started the run (process.trainer_alive). A run started on another host
    keeps its stored status.
    """
    status = run.get("status") or ""
    if status in LIVE_STATUSES and run.get("pid") and not runs_elsewhere(run) and not trainer_alive(run):
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


def run_seconds(run: Mapping[str, Any], now: float | None = None) -> float | None:
    """How long the run has trained: start to finish, or to now while it has not finished."""
    start = run.get("started_at")
    if not start:
        return None
    end = run.get("finished_at") or (now if now is not None else time.time())
    return max(0.0, end - start)


def test_headline(run: Mapping[str, Any], tests: Mapping[str, Mapping[str, Any]],
                  lift: Mapping[str, Any] | None) -> tuple[str, str]:
    """(headline, detail) of a run's result on the test split: no skill / seed -> best, the
    lift with its interval, and how long the run took. Fixed words and numbers only."""
    took = human_duration(run_seconds(run))
    took = f"{'running for' if run.get('status') in LIVE_STATUSES else 'took'} {took}"
    if "best" not in tests:
        return ("**Test split:** not scored yet", "The seed, best and final skills, and no skill at all, are scored "
                f"on the test split when training ends · {took}")
    scores = {w: tests[w]["score"] for w in TEST_LABELS if w in tests and tests[w]["score"] is not None}
    before = " / ".join(f"{TEST_LABELS[w]} {scores[w]:.3f}" for w in ("none", "seed") if w in scores)
    # A run gated on partial credit scores its tests on that metric: say so, and give the share
    # of items wholly right beside it, which is what "accuracy" means to a reader.
    metric = (run.get("config") or {}).get("gate_metric", "hard")
    named = "" if metric == "hard" else f" ({metric} score)"
    head = f"**Test split{named}:** {before} → **best {scores.get('best', 0):.3f}**"
    if "final" in scores and scores["final"] != scores.get("best"):
        head += f" · final {scores['final']:.3f}"
    hard = {w: tests[w].get("hard") for w in ("none", "seed", "best") if w in tests}
    accuracy = "" if metric == "hard" or None in hard.values() else " · hard accuracy " + " / ".join(
        f"{TEST_LABELS[w]} {hard[w]:.3f}" for w in ("none", "seed") if w in hard) + f" → best {hard['best']:.3f}"
    return head, f"{lift_text(lift, scores)}{accuracy} · {took}"


def lift_text(lift: Mapping[str, Any] | None, scores: Mapping[str, float]) -> str:
    if lift and lift.get("lift") is not None:
        base = TEST_LABELS.get(lift.get("baseline") or "", lift.get("baseline") or "")
        interval = ("" if lift.get("ci_low") is None else
                    f", 95% interval {lift['ci_low']:+.3f} to {lift['ci_high']:+.3f}")
        return f"lift {lift['lift']:+.3f} over {base}{interval} ({lift.get('n_items') or 0} test items)"
    if "seed" in scores and "best" in scores:
        return f"best − seed {scores['best'] - scores['seed']:+.3f} (no lift interval recorded)"
    return "no lift recorded"


def breakdown_rows(lift: Mapping[str, Any] | None) -> tuple[str, list[dict[str, Any]]]:
    """(a title, one row per field or expected answer with its items and the share right, or
    the mean score, of no skill, the seed and the best skill on the test split, and best minus
    the lift's baseline); ("", []) for a run with no breakdown."""
    groups = (lift or {}).get("breakdown") or {}
    if not groups:
        return "", []
    by_field = lift.get("breakdown_by") == "field"
    base = lift.get("baseline") or "none"
    title = ("Test split by field: the share of items with each field right" if by_field
             else "Test split by expected answer: the mean score of each skill")
    name = "field" if by_field else "expected answer"
    return title, [{name: key, "items": int(g["n"]), "no skill": g["none"], "seed": g["seed"], "best": g["best"],
                    f"best − {TEST_LABELS.get(base, base)}": g["best"] - g[base]} for key, g in groups.items()]


def lift_cell(lift: Mapping[str, Any] | None) -> str:
    """A run's lift for a table cell: "+0.217 [+0.08, +0.35]"."""
    if not lift or lift.get("lift") is None:
        return ""
    if lift.get("ci_low") is None:
        return f"{lift['lift']:+.3f}"
    return f"{lift['lift']:+.3f} [{lift['ci_low']:+.2f}, {lift['ci_high']:+.2f}]"


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


# ---- Monitor: charts --------------------------------------------------------------------

def step_curves(steps: Sequence[Mapping[str, Any]], seed_score: float | None,
                tests: Mapping[str, Mapping[str, Any]], total_steps: int) -> go.Figure:
    """Train batch hard/soft, selection score of incumbent and candidate, best so far, test markers;
    sampled scores' 95% intervals as bands (train, selection) and error bars (candidates, tests)."""
    xs = [s["step"] for s in steps]
    fig = go.Figure()

    def band(rows: list, lo: Callable, hi: Callable, name: str, shape: str) -> None:
        if rows:  # a shaded interval: its upper edge, then its lower edge filled up to it
            x, edge = [r["step"] for r in rows], {"width": 0, "shape": shape}
            fig.add_trace(go.Scatter(x=x, y=[hi(r) for r in rows], mode="lines", line=edge, showlegend=False,
                                     name=f"{name} (upper edge)", hoverinfo="skip"))
            fig.add_trace(go.Scatter(x=x, y=[lo(r) for r in rows], mode="lines", line=edge, fill="tonexty",
                                     fillcolor="rgba(99, 110, 250, 0.15)", name=name, hoverinfo="skip"))

    def bars(rows: Sequence[Mapping[str, Any]], y: str, lo: str, hi: str) -> dict | None:
        if not any(r.get(lo) is not None for r in rows):
            return None  # one sample per item: no interval, the figure as it always was
        edge = {k: [r[y] if r.get(k) is None else r[k] for r in rows] for k in (lo, hi)}
        return {"type": "data", "symmetric": False, "array": [h - r[y] for h, r in zip(edge[hi], rows)],
                "arrayminus": [r[y] - v for v, r in zip(edge[lo], rows)]}

    fig.add_trace(go.Scatter(x=xs, y=[s["train_hard"] for s in steps], name="train batch (hard)",
                             mode="lines+markers", line={"dash": "dot"}))
    band([s for s in steps if s.get("train_lo") is not None], lambda s: s["train_lo"], lambda s: s["train_hi"],
         "train batch (hard): 95% sampling interval", "linear")
    fig.add_trace(go.Scatter(x=xs, y=[s["train_soft"] for s in steps], name="train batch (soft)",
                             mode="lines", line={"dash": "dot"}, opacity=0.6))
    sel_x = ([0] if seed_score is not None else []) + xs
    sel_y = ([seed_score] if seed_score is not None else []) + [incumbent_after(s) for s in steps]
    fig.add_trace(go.Scatter(x=sel_x, y=sel_y, name="selection: current skill", mode="lines+markers",
                             line={"shape": "hv", "width": 3}))
    side = {s["step"]: "candidate" if s.get("decision") in ACCEPTED and s.get("candidate_score") is not None
            else "current" for s in steps}  # whose score the curve shows after the step (incumbent_after)
    band([s for s in steps if s.get(f"{side[s['step']]}_lo") is not None], lambda s: s[f"{side[s['step']]}_lo"],
         lambda s: s[f"{side[s['step']]}_hi"], "selection: 95% sampling interval", "hv")
    cand = [s for s in steps if s.get("candidate_score") is not None]
    fig.add_trace(go.Scatter(
        x=[s["step"] for s in cand], y=[s["candidate_score"] for s in cand], name="selection: candidate",
        mode="markers", marker={"symbol": ["circle" if s["decision"] in ACCEPTED else "x" for s in cand], "size": 9},
        error_y=bars(cand, "candidate_score", "candidate_lo", "candidate_hi"),
        text=[s["decision"] for s in cand], hovertemplate="step %{x}: candidate %{y:.3f} (%{text})<extra></extra>"))
    best_y = ([seed_score] if seed_score is not None else []) + [s["best_score"] for s in steps]
    fig.add_trace(go.Scatter(x=sel_x, y=best_y, name="best so far", mode="lines", line={"shape": "hv", "dash": "dash"}))
    end = max([total_steps, *xs]) if (xs or total_steps) else 0
    # Test scores sit just right of the last step, side by side, so equal scores stay visible.
    markers = {"none": ("circle-open", 0.2), "seed": ("triangle-down", 0.4), "best": ("star", 0.6),
               "final": ("diamond", 0.8)}
    for which, (symbol, dx) in markers.items():
        if which in tests and tests[which]["score"] is not None:
            name = "no skill" if which == "none" else f"{which} skill"
            fig.add_trace(go.Scatter(x=[end + dx], y=[tests[which]["score"]], name=f"test: {name}",
                                     mode="markers", marker={"symbol": symbol, "size": 14},
                                     error_y=bars([tests[which]], "score", "score_lo", "score_hi"),
                                     hovertemplate=f"test, {name}: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(xaxis_title="step", yaxis_title="score", yaxis_range=[-0.02, 1.02], height=420,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(dtick=1 if end <= 30 else None, range=[-0.3, end + 1])  # room for the whole run and tests
    return fig


def scheduled_budgets(config: Mapping[str, Any], total_steps: int) -> list[int]:
    """The edit budget the schedule gives each step (autonomous shows its cosine fallback)."""
    name = config.get("lr_scheduler", "cosine")
    lr, min_lr = int(config.get("learning_rate", 4)), int(config.get("min_learning_rate", 2))
    return [schedules.budget(name, i, total_steps, lr, min_lr) for i in range(total_steps)]


def per_step(xs: list, ys: list, name: str, opacity: float) -> go.Bar | go.Scatter:
    """One value per step: bars on a short run; on a long one a filled step line, every value
    kept (500 steps' 1,000 bars took the browser ~0.4 s to draw, the two paths nothing)."""
    if marked(len(xs)):
        return go.Bar(x=xs, y=ys, name=name, opacity=opacity)
    return go.Scatter(x=xs, y=ys, name=name, mode="lines", line={"shape": "hvh", "width": 1}, fill="tozeroy",
                      opacity=opacity)


def budget_chart(steps: Sequence[Mapping[str, Any]], config: Mapping[str, Any], total_steps: int) -> go.Figure:
    fig = go.Figure()
    xs = [s["step"] for s in steps]
    fig.add_trace(per_step(xs, [s["edit_budget"] for s in steps], "edit budget used", 0.55))
    fig.add_trace(per_step(xs, [s["n_applied"] for s in steps], "edits applied", 1.0))
    if total_steps:
        fig.add_trace(go.Scatter(x=list(range(1, total_steps + 1)), y=scheduled_budgets(config, total_steps),
                                 name=f"schedule ({config.get('lr_scheduler', 'cosine')})",
                                 mode=line_mode(total_steps), line={"shape": "hv"}))
    fig.update_layout(barmode="overlay", xaxis_title="step", yaxis_title="edits", height=320,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def usage_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=["stage", "role", "calls", "cache_hits", "errors", "notes",
                                              "prompt_tokens", "completion_tokens", "cost_usd", "latency_s"])
    frame["stage"] = [call_stage_label(x) for x in frame["stage"]]
    return frame.fillna(0).rename(columns={"cache_hits": "cache hits", "prompt_tokens": "prompt tokens",
                                           "completion_tokens": "completion tokens", "cost_usd": "cost $",
                                           "latency_s": "model time s"})


def total_calls(usage: Mapping[str, Any]) -> int:
    """Real (uncached) model calls of all roles."""
    return int(sum(usage.get(f"{role}_calls", 0) for role in ROLES))


def tests_caption(tests: Mapping[str, Mapping[str, Any]]) -> str:
    return "Test split: " + " · ".join(f"{TEST_LABELS[w]}{'' if w == 'none' else ' skill'} {tests[w]['score']:.3f}"
                                       for w in TEST_LABELS if w in tests and tests[w]["score"] is not None)


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


def injected(model: str | None) -> bool:
    """Whether a call's fault was made on purpose: the simulated models inject faults."""
    return (model or "").startswith(SIM_PREFIX)


def cause(call: Mapping[str, Any]) -> str:
    """Who a fault is on: a prompt longer than the model's context (refused, or fitted before
    it was sent) is the prompt's, not the model's; the simulated models make theirs on purpose."""
    if prompt_fault(call["error"] or "") or (call["note"] or "").startswith(FITTED):
        return "prompt longer than the model's context"
    return "injected by the simulated model" if injected(call["model"]) else "model or network"


def faults_table(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"step": c["step"], "stage": call_stage_label(c["stage"]), "role": c["role"], "model": c["model"],
             "attempts": c["attempts"], "error": c["error"] or "", "note": c["note"] or "", "cause": cause(c)}
            for c in calls]

"""The Gate timeline page's views: every gate decision on one chart, the decisions table,
the flipped items of a step and the rejected-edit buffer.

Builders take rows as the Reader returns them and give back plotly figures, pandas
frames and caption text; the page only reads, calls and lays them out.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt.ui.labels import edit_number
from skillopt.ui.plotting import line_mode, marked
from skillopt.ui.rollouts import one_line
from skillopt.vocabulary import ACCEPTED, DECISIONS, TRIAL_NAMES

Row = Mapping[str, Any]

# A step's decision -> (marker symbol, colour, legend label). Symbols differ too, not only
# colours. A step's gate never fails (only a slow update's optimizer call can).
STEP_STYLE: dict[str, tuple[str, str, str]] = {
    "accept_new_best": ("star", "#f5b700", "accept (new best)"),
    "accept": ("circle", "#00cc96", "accept"),
    "reject": ("x", "#ef553b", "reject"),
    "skip": ("circle-open", "#9e9e9e", "skip (no applicable edit)"),
}
OTHER_COLOUR = "#7f7f7f"
# A slow update's decision -> colour: a step's, or grey for a failed optimizer call.
SLOW_STYLE: dict[str, str] = {d: STEP_STYLE[d][1] if d in STEP_STYLE else OTHER_COLOUR for d in DECISIONS}
SLOW_OFFSET = 0.5  # a slow update runs after its epoch's last step: drawn between that step and the next
EXAMPLES_OFFSET = 0.25  # a worked-examples trial runs right after its step's gate: drawn just after it
# Each model-free trial's marker, by its edit's source, in legend order; every TRIAL_NAMES key has one.
TRIAL_MARKERS = {"example": "triangle-up", "rule": "triangle-right", "template": "triangle-down",
                 "ablation": "triangle-left"}
GREY_LINE = "rgba(128,128,128,.5)"
# The browser draws every label as an SVG element (skillopt.ui.plotting): on a long run the
# epoch labels thin out to at most this many (they overlapped beyond ~12 anyway); every epoch
# keeps its dotted line, and the incumbent's line its markers only on a short run.
EPOCH_LABELS = 12


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def flipped_of(gate_row: Row | None) -> list[list]:
    """[item id, incumbent's value, candidate's value] of each selection item the candidate changed."""
    return json.loads(gate_row["flipped_json"] or "[]") if gate_row else []


def step_gates(gates: Sequence[Row]) -> dict[int, Row]:
    return {g["step"]: g for g in gates if g["kind"] == "step"}


def slow_gates(gates: Sequence[Row]) -> list[Row]:
    return [g for g in gates if g["kind"] == "slow_update"]


def examples_gates(gates: Sequence[Row]) -> list[Row]:
    """The worked-examples trials: each gated alone after its step's candidate was not kept."""
    return [g for g in gates if g["kind"] == "examples"]


def hover(step_row: Row | None, g: Row | None, title: str) -> str:
    lines = [f"<b>{title}</b>"]
    if g is not None:
        flips = flipped_of(g)
        fixed = sum(1 for _, a, b in flips if b > a)
        lines += [f"{g['decision']} · {g['mode']} gate on {g['metric']}",
                  f"before {fmt(g['current_score'])} → after {fmt(g['candidate_score'])}",
                  f"margin {fmt(g['margin'], '+.3f')}",
                  f"p-value {fmt(g['p_value'])}" if g["p_value"] is not None else "p-value — (strict gate)",
                  f"items {g['n_evaluated']}/{g['n_items']}" + (" (stopped early)" if g["early_stop"] else ""),
                  f"flipped {len(flips)}: {fixed} fixed, {len(flips) - fixed} broken"]
        if flips:
            names = ", ".join(str(f[0]) for f in flips[:8]) + (" …" if len(flips) > 8 else "")
            lines.append(f"  {names}")
        lines.append(g["reason"] or "")
    elif step_row is not None:
        lines += [f"{step_row['decision']}: no candidate to gate",
                  f"incumbent {fmt(step_row['current_score'])}"]
    # Hover text is plotly HTML; item ids and reasons are engine-made, still escape '<'.
    return "<br>".join(line.replace("<", "&lt;") if not line.startswith("<b>") else line for line in lines)


def _incumbent_traces(steps: Sequence[Row]) -> list[go.Scatter]:
    """The incumbent's score before each step, and on a short run a thin segment to each gated
    candidate's (on a long one the segments merged into a band; each step's marker and hover
    keep its before and after)."""
    line = go.Scatter(x=[s["step"] for s in steps], y=[s["current_score"] for s in steps],
                      mode=line_mode(len(steps)), name="incumbent before the step",
                      line={"color": "rgba(128,128,128,.6)", "shape": "hv"},
                      marker={"size": 5, "color": "rgba(128,128,128,.8)"}, hoverinfo="skip")
    seg_x: list = []
    seg_y: list = []
    for s in steps if marked(len(steps)) else ():
        if s["candidate_score"] is not None and s["current_score"] is not None:
            seg_x += [s["step"], s["step"], None]
            seg_y += [s["current_score"], s["candidate_score"], None]
    segments = go.Scatter(x=seg_x, y=seg_y, mode="lines", name="change", showlegend=False,
                          line={"color": "rgba(128,128,128,.45)", "width": 1}, hoverinfo="skip")
    return [line, segments]


def _step_traces(steps: Sequence[Row], by_step: Mapping[int, Row]) -> list[go.Scatter]:
    traces = []
    for decision, (symbol, colour, label) in STEP_STYLE.items():
        rows = [s for s in steps if s["decision"] == decision]
        if not rows:
            continue
        traces.append(go.Scatter(
            x=[s["step"] for s in rows],
            y=[s["candidate_score"] if s["candidate_score"] is not None else s["current_score"] for s in rows],
            mode="markers", name=f"step: {label}",
            marker={"symbol": symbol, "color": colour, "size": 14 if decision == "accept_new_best" else 11,
                    "line": {"width": 2, "color": colour}},
            hovertext=[hover(s, by_step.get(s["step"]), f"step {s['step']} (epoch {s['epoch']})") for s in rows],
            hoverinfo="text"))
    return traces


def _gate_traces(gates: Sequence[Row], name: str, offset: float, symbol: str, size: int,
                 title: Callable[[Row], str]) -> list[go.Scatter]:
    """A gate that runs after its step (a slow update, a worked-examples trial): one trace per
    decision, `offset` after the step, coloured as a step's decision is."""
    traces = []
    for decision in sorted({g["decision"] for g in gates}):
        rows = [g for g in gates if g["decision"] == decision]
        colour = SLOW_STYLE.get(decision, OTHER_COLOUR)
        traces.append(go.Scatter(
            x=[g["step"] + offset for g in rows], y=[g["candidate_score"] for g in rows], mode="markers",
            name=f"{name}: {decision}",
            marker={"symbol": symbol, "color": colour, "size": size, "line": {"width": 1, "color": "#333"}},
            hovertext=[hover(None, g, title(g)) for g in rows], hoverinfo="text"))
    return traces


def _slow_traces(slow: Sequence[Row]) -> list[go.Scatter]:
    return _gate_traces(slow, "slow update", SLOW_OFFSET, "diamond", 12,
                        lambda g: f"slow update after step {g['step']}")


def trial_name(g: Row) -> str:
    """What a model-free trial tried: the scorer's reply template, a step's clue rules, a seed
    block removed or its worked examples (a trial whose edit is not stored reads as worked examples)."""
    return TRIAL_NAMES.get(g.get("trial") or "example", TRIAL_NAMES["example"])


def _examples_traces(trials: Sequence[Row]) -> list[go.Scatter]:
    traces = []
    for source, symbol in TRIAL_MARKERS.items():
        name = TRIAL_NAMES[source]
        traces += _gate_traces([g for g in trials if trial_name(g) == name], name, EXAMPLES_OFFSET, symbol, 11,
                               lambda g: f"{trial_name(g)} after step {g['step']}, gated alone")
    return traces


def _epoch_lines(steps: Sequence[Row]) -> dict[str, list[dict]]:
    """A dotted line before the first step of every epoch after the first, and a label on
    each (on every n-th of many epochs, at most EPOCH_LABELS)."""
    first_step: dict[int, int] = {}
    for s in steps:
        first_step.setdefault(s["epoch"], s["step"])
    starts = [(epoch, first) for epoch, first in first_step.items() if first > 1]
    every = max(1, -(-len(starts) // EPOCH_LABELS))  # label every n-th epoch boundary
    return {"shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": first - 0.5, "x1": first - 0.5,
                        "y0": 0, "y1": 1, "line": {"dash": "dot", "color": GREY_LINE}} for _, first in starts],
            "annotations": [{"xref": "x", "yref": "paper", "x": first - 0.5, "y": 1, "text": f"epoch {epoch}",
                             "showarrow": False, "xanchor": "right", "yanchor": "bottom"}
                            for epoch, first in starts[::every]]}


def timeline_figure(steps: Sequence[Row], gates: Sequence[Row], gate_metric: str) -> go.Figure:
    """Each step at its candidate's score (the incumbent's when nothing was gated), its
    worked-examples trial a quarter step after it, each slow update half a step after its
    epoch's last step, epochs separated by dotted lines."""
    fig = go.Figure(_incumbent_traces(steps) + _step_traces(steps, step_gates(gates))
                    + _examples_traces(examples_gates(gates)) + _slow_traces(slow_gates(gates)))
    # One layout update with every epoch line: fig.add_vline re-validates the whole figure on
    # each call, which took seconds on runs with hundreds of epochs' worth of steps.
    fig.update_layout(**_epoch_lines(steps))
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="step",
                      yaxis_title=f"selection score ({gate_metric})",
                      legend={"orientation": "h", "y": -0.2}, hovermode="closest")
    return fig


def counts_caption(steps: Sequence[Row], gates: Sequence[Row], gate_mode: str) -> str:
    counts = {d: sum(s["decision"] == d for s in steps) for d in STEP_STYLE}
    trials = examples_gates(gates)
    tried = ""
    for name in (TRIAL_NAMES[source] for source in TRIAL_MARKERS if source != "template"):  # the template: once
        shown = [g for g in trials if trial_name(g) == name]
        tried += f" · {name} tried {len(shown)}, kept {sum(g['decision'] in ACCEPTED for g in shown)}" if shown else ""
    tried += "".join(f" · reply template {'kept' if g['decision'] in ACCEPTED else 'rejected'}"
                     for g in trials if trial_name(g) == "reply template")
    return (f"{len(steps)} steps · " + " · ".join(f"{STEP_STYLE[d][2]}: {n}" for d, n in counts.items())
            + tried + f" · {len(slow_gates(gates))} gated slow update(s) · {gate_mode} gate")


def _row(step: int, epoch: int | None, kind: str, decision: str, before: float | None, after: float | None,
         g: Row | None) -> dict[str, Any]:
    flips = flipped_of(g)
    return {"step": step, "epoch": epoch, "kind": kind, "decision": decision, "before": before, "after": after,
            "margin": g["margin"] if g else None, "p-value": g["p_value"] if g else None,
            "items evaluated": f"{g['n_evaluated']}/{g['n_items']}" if g else "",
            "wins/losses": f"{g['wins']}/{g['losses']}" if g and g["mode"] == "paired" else "",
            "early stop": bool(g["early_stop"]) if g else False, "flipped": len(flips),
            "reason": g["reason"] if g else "no applicable edit: nothing to gate"}


def decisions_frame(steps: Sequence[Row], gates: Sequence[Row]) -> pd.DataFrame:
    """One row per step, per worked-examples trial and per gated slow update, each after its step."""
    by_step = step_gates(gates)
    table = [_row(s["step"], s["epoch"], "step", s["decision"], s["current_score"], s["candidate_score"],
                  by_step.get(s["step"])) for s in steps]
    epoch_of = {s["step"]: s["epoch"] for s in steps}
    table += [_row(g["step"], epoch_of.get(g["step"]), f"{trial_name(g)}, gated alone", g["decision"],
                   g["current_score"], g["candidate_score"], g) for g in examples_gates(gates)]
    table += [_row(g["step"], epoch_of.get(g["step"]), "slow update after the step", g["decision"],
                   g["current_score"], g["candidate_score"], g) for g in slow_gates(gates)]
    return pd.DataFrame(table).sort_values("step", kind="stable")  # stable: a step's slow update follows it


def default_flip_step(by_step: Mapping[int, Row]) -> int:
    """The index of the step to open: the last one that flipped items, else the last one."""
    with_flips = [n for n, g in enumerate(by_step.values()) if flipped_of(g)]
    return (with_flips or [len(by_step) - 1])[-1]


def flips_frame(flips: Sequence[Sequence], items: Sequence[Row]) -> pd.DataFrame:
    """The flipped items with their input and expected answer."""
    by_id = {i["item_id"]: i for i in items}
    return pd.DataFrame([{
        "item": item_id, "incumbent": a, "candidate": b, "change": "fixed" if b > a else "broken",
        "input": one_line((by_id.get(item_id) or {}).get("input_json")),
        "expected": (by_id.get(item_id) or {}).get("expected", "")} for item_id, a, b in flips])


def buffer_caption(scope: str, epoch: int | None) -> str:
    return f"Scope **{scope}**: " + (f"rejections of earlier steps of epoch {epoch} (the buffer is cleared at each "
                                     "epoch end)." if scope == "epoch" else
                                     "rejections of all earlier steps of the run.")


def rejected_with(r: Row) -> str:
    """Whether a buffered edit was rejected alone (its repeat is blocked) or with others (it is
    only context for the optimizer: any one edit of a rejected candidate may be fine alone)."""
    n = len(json.loads(r.get("companions_json") or "[]"))
    return "rejected alone" if not n else f"rejected together with {n} other{'s' if n > 1 else ''}"


def buffer_frame(buffer: Sequence[Row]) -> pd.DataFrame:
    rows = []
    for r in buffer:
        e = json.loads(r["edit_json"] or "{}")
        rows.append({"step": r["step"], "epoch": r["epoch"], "why": r["reason"], "rejected": rejected_with(r),
                     "op": e.get("op", ""), "target": e.get("target", ""), "content": e.get("content", ""),
                     "together with": " | ".join(c.get("content") or c.get("target", "")
                                                 for c in json.loads(r.get("companions_json") or "[]")),
                     "rationale": e.get("rationale", ""), "score before": r["score_before"],
                     "score after": r["score_after"]})
    return pd.DataFrame(rows)


def default_edit_step(steps: Sequence[Row]) -> int:
    """The index of the step whose edits to open: the last one with proposed edits, else the last."""
    with_edits = [n for n, s in enumerate(steps) if s["n_proposed"]]
    return (with_edits or [len(steps) - 1])[-1]


def edits_frame(edits: Sequence[Row], step: Row | None = None,
                approvals: Mapping[tuple[int, int], Row] | None = None) -> pd.DataFrame:
    """Every edit proposed at a step, dropped ones included, with what happened to it, why,
    the evidence the engine stored, and what the gate measured of it."""
    from skillopt.ui import evolution as evo  # the edit's provenance and evidence, shared with Skill evolution

    rows = []
    for e in edits:
        edited = evo.provenance((approvals or {}).get((e["step"], e["idx"])))
        rows.append({"edit": edit_number(e["idx"]), "op": e["op"], "content": e["content"] or e["target"] or "",
                     "fate": e["fate"], "patch": e["status"] or "", "approval": e["approval"] or "",
                     "proposed by the optimizer": edited[0] if edited else "", "gate": e["gate"] or "",
                     "effect": evo.edit_effect(e, step) if e["gate"] else "", "why": e.get("note") or "",
                     "evidence": "; ".join(f"{k}: {v}" for k, v in evo.evidence(e))})
    return pd.DataFrame(rows)

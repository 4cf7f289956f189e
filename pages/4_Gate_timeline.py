"""Gate timeline: every gate decision on one chart, the decisions table, flipped items, the rejected buffer."""
from skillopt.ui.common import setup

setup("Gate timeline")

import json  # noqa: E402

import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.ui.common import cached, is_live, pick_run, simulated_banner  # noqa: E402

# Decision -> (marker symbol, colour, legend label). Symbols differ too, not only colours.
STEP_STYLE = {
    "accept_new_best": ("star", "#f5b700", "accept (new best)"),
    "accept": ("circle", "#00cc96", "accept"),
    "reject": ("x", "#ef553b", "reject"),
    "skip": ("circle-open", "#9e9e9e", "skip (no applicable edit)"),
}
SLOW_STYLE = {"accept_new_best": "#f5b700", "accept": "#00cc96", "reject": "#ef553b", "skip": "#9e9e9e",
              "failed": "#7f7f7f"}
SLOW_OFFSET = 0.5  # a slow update runs after its epoch's last step: drawn between that step and the next


def fmt(value, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def flipped_of(gate_row: dict | None) -> list[list]:
    return json.loads(gate_row["flipped_json"] or "[]") if gate_row else []


def hover(step_row: dict | None, g: dict | None, title: str) -> str:
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


st.title("Gate timeline")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)
config = (cached("run", run_id) or {}).get("config", {})


def timeline() -> None:
    steps = cached("steps", run_id) or []
    gates = cached("gate_decisions", run_id) or []
    if not steps:
        st.info("No step has completed yet: the first gate decision appears after step 1.")
        return
    step_gate = {g["step"]: g for g in gates if g["kind"] == "step"}
    slow_gate = [g for g in gates if g["kind"] == "slow_update"]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[s["step"] for s in steps], y=[s["current_score"] for s in steps],
                             mode="lines+markers", name="incumbent before the step",
                             line={"color": "rgba(128,128,128,.6)", "shape": "hv"},
                             marker={"size": 5, "color": "rgba(128,128,128,.8)"}, hoverinfo="skip"))
    # A thin segment from the score before to the candidate's score, per gated step.
    seg_x, seg_y = [], []
    for s in steps:
        if s["candidate_score"] is not None and s["current_score"] is not None:
            seg_x += [s["step"], s["step"], None]
            seg_y += [s["current_score"], s["candidate_score"], None]
    fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines", name="change", showlegend=False,
                             line={"color": "rgba(128,128,128,.45)", "width": 1}, hoverinfo="skip"))
    for decision, (symbol, colour, label) in STEP_STYLE.items():
        rows = [s for s in steps if s["decision"] == decision]
        if not rows:
            continue
        fig.add_trace(go.Scatter(
            x=[s["step"] for s in rows],
            y=[s["candidate_score"] if s["candidate_score"] is not None else s["current_score"] for s in rows],
            mode="markers", name=f"step: {label}",
            marker={"symbol": symbol, "color": colour, "size": 14 if decision == "accept_new_best" else 11,
                    "line": {"width": 2, "color": colour}},
            hovertext=[hover(s, step_gate.get(s["step"]), f"step {s['step']} (epoch {s['epoch']})") for s in rows],
            hoverinfo="text"))
    for decision in sorted({g["decision"] for g in slow_gate}):
        rows = [g for g in slow_gate if g["decision"] == decision]
        colour = SLOW_STYLE.get(decision, "#7f7f7f")
        fig.add_trace(go.Scatter(
            x=[g["step"] + SLOW_OFFSET for g in rows], y=[g["candidate_score"] for g in rows], mode="markers",
            name=f"slow update: {decision}",
            marker={"symbol": "diamond", "color": colour, "size": 12, "line": {"width": 1, "color": "#333"}},
            hovertext=[hover(None, g, f"slow update after step {g['step']}") for g in rows], hoverinfo="text"))
    per_epoch = {}
    for s in steps:
        per_epoch.setdefault(s["epoch"], s["step"])
    # One layout update with every epoch line: fig.add_vline re-validates the whole figure on
    # each call, which took seconds on runs with hundreds of epochs' worth of steps.
    starts = [(epoch, first) for epoch, first in per_epoch.items() if first > 1]
    fig.update_layout(
        shapes=[{"type": "line", "xref": "x", "yref": "paper", "x0": first - 0.5, "x1": first - 0.5, "y0": 0,
                 "y1": 1, "line": {"dash": "dot", "color": "rgba(128,128,128,.5)"}} for _, first in starts],
        annotations=[{"xref": "x", "yref": "paper", "x": first - 0.5, "y": 1, "text": f"epoch {epoch}",
                      "showarrow": False, "xanchor": "right", "yanchor": "bottom"} for epoch, first in starts])
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="step",
                      yaxis_title=f"selection score ({config.get('gate_metric', 'hard')})",
                      legend={"orientation": "h", "y": -0.2}, hovermode="closest")
    st.plotly_chart(fig, width="stretch")

    counts = {d: sum(s["decision"] == d for s in steps) for d in STEP_STYLE}
    st.caption(f"{len(steps)} steps · " + " · ".join(f"{STEP_STYLE[d][2]}: {n}" for d, n in counts.items())
               + f" · {len(slow_gate)} gated slow update(s) · {config.get('gate_mode', '?')} gate")

    table = []
    for s in steps:
        g = step_gate.get(s["step"])
        table.append(_row(s["step"], s["epoch"], "step", s["decision"], s["current_score"], s["candidate_score"], g))
    epoch_of = {s["step"]: s["epoch"] for s in steps}
    for g in slow_gate:
        table.append(_row(g["step"], epoch_of.get(g["step"]), "slow update after the step", g["decision"],
                          g["current_score"], g["candidate_score"], g))
    frame = pd.DataFrame(table).sort_values("step", kind="stable")  # stable: a step's slow update follows it
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={"margin": st.column_config.NumberColumn(format="%+.3f"),
                                "p-value": st.column_config.NumberColumn(format="%.3f")})


def _row(step, epoch, kind, decision, before, after, g: dict | None) -> dict:
    flips = flipped_of(g)
    return {"step": step, "epoch": epoch, "kind": kind, "decision": decision, "before": before, "after": after,
            "margin": g["margin"] if g else None, "p-value": g["p_value"] if g else None,
            "items evaluated": f"{g['n_evaluated']}/{g['n_items']}" if g else "",
            "wins/losses": f"{g['wins']}/{g['losses']}" if g and g["mode"] == "paired" else "",
            "early stop": bool(g["early_stop"]) if g else False, "flipped": len(flips),
            "reason": g["reason"] if g else "no applicable edit: nothing to gate"}


st.fragment(run_every=3 if is_live(run) else None)(timeline)()

steps = cached("steps", run_id) or []
gates = cached("gate_decisions", run_id) or []
gated = [g for g in gates if g["kind"] == "step"]

st.subheader("Flipped items of a step")
if not gated:
    st.info("No step has been gated yet (a step with no applicable edit is skipped).")
else:
    by_step = {g["step"]: g for g in gated}
    with_flips = [n for n, g in enumerate(by_step.values()) if flipped_of(g)]
    flip_step = st.selectbox("Gated step", list(by_step), index=(with_flips or [len(by_step) - 1])[-1],
                             key="flip_step")
    flips = flipped_of(by_step[flip_step])
    if not flips:
        st.caption("No selection item changed its result at this step.")
    else:
        items = {i["item_id"]: i for i in cached("items_by_ids", run_id, [f[0] for f in flips]) or []}
        st.dataframe(pd.DataFrame([{
            "item": item_id, "incumbent": a, "candidate": b, "change": "fixed" if b > a else "broken",
            "input": (items.get(item_id) or {}).get("input_json", ""),
            "expected": (items.get(item_id) or {}).get("expected", "")} for item_id, a, b in flips]),
            hide_index=True, width="stretch")

st.subheader("Rejected-edit buffer")
scope = config.get("rejected_buffer_scope", "epoch")
if not steps:
    st.info("The buffer fills when the gate rejects a step's edits.")
else:
    nos = [s["step"] for s in steps]
    epoch_of = {s["step"]: s["epoch"] for s in steps}
    at = st.select_slider("As the reflection of step … saw it", options=nos, value=nos[-1], key="buffer_step")
    epoch = epoch_of[at] if scope == "epoch" else None
    buffer = cached("rejected_buffer_at", run_id, at, epoch) or []
    st.caption(f"Scope **{scope}**: " + (f"rejections of earlier steps of epoch {epoch} (the buffer is cleared "
                                          "at each epoch end)." if scope == "epoch" else
                                          "rejections of all earlier steps of the run."))
    if not buffer:
        st.info(f"The buffer was empty at step {at}.")
    else:
        rows = []
        for r in buffer:
            e = json.loads(r["edit_json"] or "{}")
            rows.append({"step": r["step"], "epoch": r["epoch"], "why": r["reason"], "op": e.get("op", ""),
                         "target": e.get("target", ""), "content": e.get("content", ""),
                         "rationale": e.get("rationale", ""), "score before": r["score_before"],
                         "score after": r["score_after"]})
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

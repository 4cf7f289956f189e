"""The Skill evolution page's views: the version timeline, version labels, edit badges and
the blame table of the best skill.

Builders take rows as the Reader returns them and give back plotly figures, pandas
frames and text; the page only reads, calls and lays them out.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from skillopt.skill import sha
from skillopt.ui import blame
from skillopt.vocabulary import DROP_REASONS, FATES

Row = Mapping[str, Any]

# Stored version kinds, in the order they arise within a step.
KIND_ORDER = {"seed": 0, "candidate": 1, "current": 2, "slow_update": 3, "epoch_end": 4}
KIND_LABEL = {"seed": "seed", "candidate": "candidate", "current": "incumbent after step",
              "slow_update": "slow-update candidate", "epoch_end": "after epoch end"}
KIND_STYLE = {  # marker symbol and colour per version kind
    "seed": ("square", "#636efa"), "candidate": ("circle-open", "#ab63fa"), "current": ("circle", "#00cc96"),
    "slow_update": ("diamond-open", "#ffa15a"), "epoch_end": ("diamond", "#ef553b")}
BEST = "best"  # the picker's key of the best skill (every other key is "<step>:<kind>")
# The edit list's fate filter offers every stored fate, not only the chosen step's: a choice
# made at one step then still means the same at the next ("pending" is never stored).
FATE_FILTER = tuple(f for f in FATES if f != "pending")


def ordered(versions: Sequence[Row]) -> list[Row]:
    return sorted(versions, key=lambda v: (v["step"], KIND_ORDER.get(v["kind"], 9)))


def key_of(v: Row) -> str:
    return f"{v['step']}:{v['kind']}"


def parse_key(key: str) -> tuple[int, str]:
    step, kind = key.split(":", 1)
    return int(step), kind


def label_of(key: str, by_key: Mapping[str, Row], best_step: int) -> str:
    if key == BEST:
        return f"best skill (step {best_step})"
    step, kind = parse_key(key)
    score = by_key[key]["score"]
    score_txt = "" if score is None else f" · {score:.3f}"
    return f"step {step} · {KIND_LABEL.get(kind, kind)}{score_txt} · {by_key[key]['sha'][:8]}"


def file_part(key: str) -> str:
    """The version's part of a download's file name."""
    return "best" if key == BEST else key.replace(":", "_")


def timeline_figure(versions: Sequence[Row], best_step: int) -> go.Figure:
    """Scores of every stored version; the line follows the incumbent."""
    fig = go.Figure()
    chain = ordered([v for v in versions if v["kind"] in blame.CHAIN_KINDS])
    fig.add_trace(go.Scatter(x=[v["step"] for v in chain], y=[v["score"] for v in chain], mode="lines",
                             line={"color": "rgba(128,128,128,.5)", "shape": "hv"}, name="incumbent",
                             hoverinfo="skip"))
    for kind, (symbol, colour) in KIND_STYLE.items():
        vs = [v for v in versions if v["kind"] == kind]
        if not vs:
            continue
        fig.add_trace(go.Scatter(
            x=[v["step"] for v in vs], y=[v["score"] for v in vs], mode="markers", name=KIND_LABEL[kind],
            marker={"symbol": symbol, "color": colour, "size": 11, "line": {"width": 2, "color": colour}},
            customdata=[[v["sha"][:8]] for v in vs],
            hovertemplate=f"step %{{x}} · {KIND_LABEL[kind]}<br>score %{{y:.3f}}<br>sha %{{customdata[0]}}"
                          "<extra></extra>"))
    fig.add_vline(x=best_step, line_dash="dot", line_color="#ffd700", annotation_text="best")
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="step",
                      yaxis_title="selection score", legend={"orientation": "h", "y": -0.25})
    return fig


def versions_frame(versions: Sequence[Row]) -> pd.DataFrame:
    return pd.DataFrame([{"step": v["step"], "kind": KIND_LABEL.get(v["kind"], v["kind"]), "score": v["score"],
                          "sha": v["sha"][:12]} for v in versions])


def step_caption(s: Row) -> str:
    return (f"Epoch {s['epoch']} · decision **{s['decision']}** · proposed {s['n_proposed']} · "
            f"selected {s['n_selected']} · applied {s['n_applied']} · budget {s['edit_budget']}")


def drop_reason(e: Row) -> tuple[str, str]:
    """(reason, detail) of a dropped edit, from its note "<reason>: <detail>"; ("", note) otherwise."""
    note = e.get("note") or ""
    reason, _, detail = note.partition(": ")
    if e["fate"] == "dropped" and reason in DROP_REASONS:
        return reason, detail
    return "", note


def edit_badges(e: Row) -> str:
    """An edit's pipeline record as a line of code spans."""
    badges = [f"#{e['idx']}", e["op"], f"source: {e['source']}", f"support: {e['support']}", f"fate: {e['fate']}"]
    badges += [f"dropped: {drop_reason(e)[0]}"] if drop_reason(e)[0] else []
    badges += [f"patch: {e['status']}"] if e["status"] else []
    badges += [f"approval: {e['approval']}"] if e["approval"] else []
    badges += [f"gate: {e['gate']}"] if e["gate"] else []
    # Badges are code spans; a backtick in a model-written value could close one early.
    return " · ".join(f"`{str(b).replace('`', chr(39))}`" for b in badges)


def score_deltas(steps: Sequence[Row], slow_updates: Sequence[Row]) -> dict[tuple[int, str], float]:
    """(step, version kind) -> how much the change that made that incumbent moved the score."""
    deltas = {(s["step"], "current"): s["candidate_score"] - s["current_score"] for s in steps
              if s["candidate_score"] is not None and s["current_score"] is not None}
    deltas |= {(u["step"], "epoch_end"): u["score_after"] - u["score_before"] for u in slow_updates
               if u["score_after"] is not None and u["score_before"] is not None}
    return deltas


def blame_best(versions: Sequence[Row], best_step: int, best_text: str, text_at: Callable[[int, str], str],
               applied: Sequence[Row], deltas: Mapping[tuple[int, str], float]) -> list[blame.BlameLine]:
    """The best skill's lines, each with the version (and edit) that introduced it."""
    refs = [blame.VersionRef(v["step"], v["kind"], v["sha"]) for v in versions]
    chain_refs = blame.incumbent_chain(refs, upto_step=best_step, final_sha=sha(best_text))
    chain = [blame.Version(r.step, r.kind, text_at(r.step, r.kind)) for r in chain_refs]
    edits = [blame.EditRef(e["step"], e["idx"], e["op"], e["content"] or "", e["target"] or "") for e in applied]
    return blame.blame(chain, best_text, edits, deltas)


def origin(line: blame.BlameLine) -> str:
    if line.kind == "seed":
        return "seed"
    if line.kind == "epoch_end":
        return f"slow update after step {line.step}"
    if line.kind == "unknown":
        return "unrecorded change"
    return f"step {line.step}" + (f" · edit #{line.edit_idx} ({line.edit_op})" if line.edit_idx is not None else "")


def blame_caption(lines: Sequence[blame.BlameLine], best_step: int) -> str:
    parts = ", ".join(f"{'seed' if k == 'seed' else f'step {s}'}: {n}" for s, k, n in blame.summary(lines))
    return f"Best skill (step {best_step}), {len(lines)} lines. Non-blank lines by origin: {parts}"


def blame_frame(lines: Sequence[blame.BlameLine]) -> pd.DataFrame:
    return pd.DataFrame([{"line": ln.number, "text": ln.text, "origin": origin(ln), "step": ln.step,
                          "Δ score of step": ln.score_delta} for ln in lines])

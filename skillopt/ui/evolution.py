"""The Skill evolution page's views: the version timeline, version labels, edit badges, an
edit's provenance (the optimizer's proposal, a person's rewrite) and evidence, and the
blame table of the best skill.

Builders take rows as the Reader returns them and give back plotly figures, pandas
frames and text; the page only reads, calls and lays them out.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import json

import pandas as pd
import plotly.graph_objects as go

from skillopt.skill import sha
from skillopt.ui import blame
from skillopt.ui.labels import edit_name, edit_number
from skillopt.ui.plotting import marked
from skillopt.vocabulary import ACCEPTED, DROP_REASONS, FATES

Row = Mapping[str, Any]

# Stored version kinds, in the order they arise within a step.
KIND_ORDER = {"seed": 0, "candidate": 1, "examples": 2, "current": 3, "slow_update": 4, "epoch_end": 5}
KIND_LABEL = {"seed": "seed", "candidate": "candidate", "examples": "worked-examples / reply-template candidate",
              "current": "incumbent after step", "slow_update": "slow-update candidate",
              "epoch_end": "after epoch end"}
KIND_STYLE = {  # marker symbol and colour per version kind
    "seed": ("square", "#636efa"), "candidate": ("circle-open", "#ab63fa"),
    "examples": ("triangle-up-open", "#19d3f3"), "current": ("circle", "#00cc96"),
    "slow_update": ("diamond-open", "#ffa15a"), "epoch_end": ("diamond", "#ef553b")}
BEST = "best"  # the picker's key of the best skill (every other key is "<step>:<kind>")
TABS = ("Diff two versions", "Edits of a step", "Blame of the best skill")
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


def unchanged_incumbents(versions: Sequence[Row]) -> set[int]:
    """Steps whose stored incumbent ("current") is the text it already was (a rejected step)."""
    chain = ordered([v for v in versions if v["kind"] in blame.CHAIN_KINDS])
    return {v["step"] for before, v in zip(chain, chain[1:]) if v["kind"] == "current" and v["sha"] == before["sha"]}


def timeline_figure(versions: Sequence[Row], best_step: int) -> go.Figure:
    """Scores of every stored version; the line follows the incumbent. On a long run an
    incumbent a rejected step left unchanged is the line, not a marker of its own (the
    browser draws each marker: 500 of them repeated the line); every candidate and every
    text the incumbent became keeps its marker."""
    fig = go.Figure()
    chain = ordered([v for v in versions if v["kind"] in blame.CHAIN_KINDS])
    fig.add_trace(go.Scatter(x=[v["step"] for v in chain], y=[v["score"] for v in chain], mode="lines",
                             line={"color": "rgba(128,128,128,.5)", "shape": "hv"}, name="incumbent",
                             hoverinfo="skip"))
    same = set() if marked(sum(v["kind"] == "current" for v in versions)) else unchanged_incumbents(versions)
    for kind, (symbol, colour) in KIND_STYLE.items():
        vs = [v for v in versions if v["kind"] == kind and not (kind == "current" and v["step"] in same)]
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
    badges = [edit_name(e["idx"]), e["op"], f"source: {e['source']}", f"support: {e['support']}",
              f"fate: {e['fate']}"]
    badges += [f"dropped: {drop_reason(e)[0]}"] if drop_reason(e)[0] else []
    badges += [f"patch: {e['status']}"] if e["status"] else []
    badges += [f"approval: {e['approval']}"] if e["approval"] else []
    badges += ["edited by a person"] if e["approval"] == "edited" else []
    badges += [f"gate: {e['gate']}"] if e["gate"] else []
    # Badges are code spans; a backtick in a model-written value could close one early.
    return " · ".join(f"`{str(b).replace('`', chr(39))}`" for b in badges)


def approvals_by_edit(approvals: Sequence[Row], edits: Sequence[Row]) -> dict[tuple[int, int], Row]:
    """(step, edit idx) -> the approval row of that edit: the optimizer's proposal, the
    person's decision and, when edited, the person's text. The trainer records the edit's
    number with its approval; older rows are matched on the edit's unchanged fields."""
    out: dict[tuple[int, int], Row] = {}
    by_step: dict[int, list[Row]] = {}
    for e in edits:
        by_step.setdefault(e["step"], []).append(e)
    for a in approvals:
        proposed = json.loads(a["edit_json"] or "{}")
        number = proposed.get("number")
        if isinstance(number, int):
            out[(a["step"], number)] = a
            continue
        same = [e for e in by_step.get(a["step"], []) if all(
            (e.get(k) or "") == (proposed.get(k) or "") for k in ("op", "target", "section", "rationale"))]
        if len(same) == 1:
            out[(a["step"], same[0]["idx"])] = a
    return out


def provenance(approval: Row | None) -> tuple[str, str] | None:
    """(the optimizer's proposed content, the person's rewrite) of an edit a person edited."""
    if approval is None or approval["status"] != "edited":
        return None
    return json.loads(approval["edit_json"] or "{}").get("content") or "", approval["content"] or ""


# The edits table's own columns; any other column an engine feature adds (an attribution,
# the evidence behind a drop) is shown as evidence under its name.
EDIT_COLUMNS = ("run_id", "step", "idx", "op", "target", "content", "section", "rationale", "source", "support",
                "minibatches", "fate", "status", "approval", "gate", "note")
ATTRIBUTION_KEYS = ("attribution", "effect", "loo_delta", "delta")


def evidence(e: Row) -> list[tuple[str, str]]:
    """(label, text) of what the engine stored about an edit beyond its record."""
    out = []
    for key, value in e.items():
        if key in EDIT_COLUMNS or value in (None, "", "{}", "[]"):
            continue
        if isinstance(value, str) and value[:1] in "[{":
            try:
                value = json.dumps(json.loads(value), indent=1, ensure_ascii=False)
            except ValueError:
                pass
        out.append((key.removesuffix("_json").replace("_", " "), str(value)))
    return out


def edit_effect(e: Row, step: Row | None) -> str:
    """What the gate measured of this one edit; "not attributed" when the step's edits
    were judged together and the engine stored no per-edit attribution."""
    for key in ATTRIBUTION_KEYS:
        value = e.get(key)
        if isinstance(value, (int, float)):
            return f"{value:+.3f} (attributed to this edit)"
    if step is None or step.get("candidate_score") is None or step.get("current_score") is None:
        return "not gated"
    margin = step["candidate_score"] - step["current_score"]
    if (step.get("n_applied") or 0) == 1:
        return f"{margin:+.3f} (the step's only edit)"
    return f"not attributed: {step.get('n_applied') or 0} edits judged together ({margin:+.3f} for all)"


def score_deltas(steps: Sequence[Row], slow_updates: Sequence[Row],
                 gates: Sequence[Row] = ()) -> dict[tuple[int, str], float]:
    """(step, version kind) -> how much the change that made that incumbent moved the score
    (worked examples kept after a step's own candidate was not: their gate's)."""
    deltas = {(s["step"], "current"): s["candidate_score"] - s["current_score"] for s in steps
              if s["candidate_score"] is not None and s["current_score"] is not None}
    deltas |= {(g["step"], "current"): g["candidate_score"] - g["current_score"] for g in gates
               if g["kind"] == "examples" and g["decision"] in ACCEPTED}
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


def origin(line: blame.BlameLine, edited: frozenset = frozenset()) -> str:
    """Where a line came from; `edited` holds the (step, idx) of edits a person rewrote."""
    if line.kind == "seed":
        return "seed"
    if line.kind == "epoch_end":
        return f"slow update after step {line.step}"
    if line.kind == "unknown":
        return "unrecorded change"
    if line.edit_idx is None:
        return f"step {line.step} · edit not identified"
    by = ", edited by a person" if (line.step, line.edit_idx) in edited else ""
    return f"step {line.step} · {edit_name(line.edit_idx)} ({line.edit_op}{by})"


def blame_caption(lines: Sequence[blame.BlameLine], best_step: int) -> str:
    parts = ", ".join(f"{'seed' if k == 'seed' else f'step {s}'}: {n}" for s, k, n in blame.summary(lines))
    return f"Best skill (step {best_step}), {len(lines)} lines. Non-blank lines by origin: {parts}"


def edited_caption(lines: Sequence[blame.BlameLine], edited: frozenset) -> str:
    """Which lines of the best skill come from an edit a person rewrote during approval."""
    by_edit: dict[tuple[int, int], int] = {}
    for ln in lines:
        if ln.kind == "current" and (ln.step, ln.edit_idx) in edited and ln.text.strip():
            by_edit[(ln.step, ln.edit_idx)] = by_edit.get((ln.step, ln.edit_idx), 0) + 1
    if not by_edit:
        return ""
    parts = ", ".join(f"step {step} · {edit_name(idx)} ({n} line{'s' * (n != 1)})"
                      for (step, idx), n in sorted(by_edit.items()))
    return f"Rewritten by a person during approval: {parts}."


def blame_frame(lines: Sequence[blame.BlameLine], edits: Sequence[Row] = (), steps: Sequence[Row] = (),
                edited: frozenset = frozenset()) -> pd.DataFrame:
    """One row per line of the best skill: where it came from and what its edit did."""
    by_edit = {(e["step"], e["idx"]): e for e in edits}
    by_step = {s["step"]: s for s in steps}
    rows = []
    for ln in lines:
        edit = by_edit.get((ln.step, ln.edit_idx)) if ln.edit_idx is not None else None
        rows.append({"line": ln.number, "text": ln.text, "origin": origin(ln, edited), "step": ln.step,
                     "edit": edit_number(ln.edit_idx) if ln.edit_idx is not None else None,
                     "effect": _line_effect(ln, edit, by_step.get(ln.step))})
    return pd.DataFrame(rows)


def _line_effect(ln: blame.BlameLine, edit: Row | None, step: Row | None) -> str:
    if edit is not None:
        return edit_effect(edit, step)
    if ln.kind == "seed":
        return ""
    if ln.kind == "epoch_end":
        return "not gated" if ln.score_delta is None else f"{ln.score_delta:+.3f} (the slow update as a whole)"
    return "no single edit wrote this line"

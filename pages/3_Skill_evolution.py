"""Skill evolution: version timeline, diff of any two versions, per-edit cards, blame of the best skill."""
from skillopt.ui.common import setup

setup("Skill evolution")

import pandas as pd  # noqa: E402  (setup() must be the first Streamlit call of the page)
import plotly.graph_objects as go  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.skill import sha  # noqa: E402
from skillopt.ui import blame, diffview  # noqa: E402
from skillopt.ui.common import cached, is_live, pick_run, show_text, simulated_banner  # noqa: E402

KIND_ORDER = {"seed": 0, "candidate": 1, "current": 2, "slow_update": 3, "epoch_end": 4}
KIND_LABEL = {"seed": "seed", "candidate": "candidate", "current": "incumbent after step",
              "slow_update": "slow-update candidate", "epoch_end": "after epoch end"}
KIND_STYLE = {  # marker symbol and colour per version kind
    "seed": ("square", "#636efa"), "candidate": ("circle-open", "#ab63fa"), "current": ("circle", "#00cc96"),
    "slow_update": ("diamond-open", "#ffa15a"), "epoch_end": ("diamond", "#ef553b")}
BEST = "best"

st.title("Skill evolution")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)

versions = cached("versions", run_id) or []
if not versions:
    st.info("No skill version yet: the seed skill is stored once it has been scored on the selection split.")
    st.stop()
versions.sort(key=lambda v: (v["step"], KIND_ORDER.get(v["kind"], 9)))
detail = cached("run", run_id) or {}
best_step = detail.get("best_step") or 0


def key_of(v: dict) -> str:
    return f"{v['step']}:{v['kind']}"


def label_of(key: str) -> str:
    if key == BEST:
        return f"best skill (step {best_step})"
    step, kind = key.split(":", 1)
    score = by_key[key]["score"]
    score_txt = "" if score is None else f" · {score:.3f}"
    return f"step {step} · {KIND_LABEL.get(kind, kind)}{score_txt} · {by_key[key]['sha'][:8]}"


def text_of(key: str) -> str:
    if key == BEST:
        return cached("best_skill", run_id) or ""
    step, kind = key.split(":", 1)
    return cached("version", run_id, int(step), kind) or ""


by_key = {key_of(v): v for v in versions}
keys = [BEST, *by_key]


def timeline() -> None:
    """Scores of every stored version; the line follows the incumbent."""
    fresh = cached("versions", run_id) or versions
    fig = go.Figure()
    chain = [v for v in fresh if v["kind"] in ("seed", "current", "epoch_end")]
    chain.sort(key=lambda v: (v["step"], KIND_ORDER[v["kind"]]))
    fig.add_trace(go.Scatter(x=[v["step"] for v in chain], y=[v["score"] for v in chain], mode="lines",
                             line={"color": "rgba(128,128,128,.5)", "shape": "hv"}, name="incumbent",
                             hoverinfo="skip"))
    for kind, (symbol, colour) in KIND_STYLE.items():
        vs = [v for v in fresh if v["kind"] == kind]
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
    st.plotly_chart(fig, width="stretch")
    table = pd.DataFrame([{"step": v["step"], "kind": KIND_LABEL.get(v["kind"], v["kind"]), "score": v["score"],
                           "sha": v["sha"][:12]} for v in fresh])
    with st.expander(f"All {len(fresh)} stored versions"):
        st.dataframe(table, hide_index=True, width="stretch")


st.subheader("Version timeline")
st.fragment(run_every=3 if is_live(run) else None)(timeline)()

tab_diff, tab_edits, tab_blame = st.tabs(["Diff two versions", "Edits of a step", "Blame of the best skill"])

with tab_diff:
    c1, c2 = st.columns(2)
    seed_key = next((k for k in keys if k.endswith(":seed")), keys[1])
    a = c1.selectbox("From version", keys, index=keys.index(seed_key), format_func=label_of, key="diff_a")
    b = c2.selectbox("To version", keys, index=0, format_func=label_of, key="diff_b")
    m1, m2 = st.columns([2, 1])
    mode = m1.radio("View", ["inline", "side by side"], horizontal=True, key="diff_mode")
    only_changes = m2.toggle("Fold unchanged lines", value=False, key="diff_fold",
                             disabled=mode == "inline", help="Side by side: keep 3 lines of context around changes.")
    old, new = text_of(a), text_of(b)
    diffview.show(old, new, mode="inline" if mode == "inline" else "side-by-side",
                  context=3 if only_changes else None, left_title=label_of(a), right_title=label_of(b))
    d1, d2 = st.columns(2)
    for col, key, text in ((d1, a, old), (d2, b, new)):
        step_part = "best" if key == BEST else key.replace(":", "_")
        col.download_button(f"Download {label_of(key)}", data=text, file_name=f"skill_{run_id}_{step_part}.md",
                            mime="text/markdown", key=f"dl_{key}_{col is d1}")

with tab_edits:
    steps = cached("steps", run_id) or []
    if not steps:
        st.info("No step has completed yet.")
    else:
        step_nos = [s["step"] for s in steps]
        by_step = {s["step"]: s for s in steps}
        with_edits = [s["step"] for s in steps if s["n_proposed"]]
        chosen = st.select_slider("Step", options=step_nos, value=(with_edits or step_nos)[-1], key="edit_step")
        s = by_step[chosen]
        st.caption(f"Epoch {s['epoch']} · decision **{s['decision']}** · proposed {s['n_proposed']} · "
                   f"selected {s['n_selected']} · applied {s['n_applied']} · budget {s['edit_budget']}")
        edits = cached("edits", run_id, chosen) or []
        fates = sorted({e["fate"] for e in edits})
        keep = st.multiselect("Pipeline fate", fates, default=fates, key="edit_fates")
        shown = [e for e in edits if e["fate"] in keep]
        if not edits:
            st.info("No edit was proposed at this step.")
        for e in shown:
            with st.container(border=True):
                badges = [f"#{e['idx']}", e["op"], f"source: {e['source']}", f"support: {e['support']}",
                          f"fate: {e['fate']}"]
                badges += [f"patch: {e['status']}"] if e["status"] else []
                badges += [f"approval: {e['approval']}"] if e["approval"] else []
                badges += [f"gate: {e['gate']}"] if e["gate"] else []
                # Badges are code spans; a backtick in a model-written value could close one early.
                st.markdown(" · ".join(f"`{str(b).replace('`', chr(39))}`" for b in badges))
                if e["section"]:
                    st.caption("section")
                    st.text(e["section"])
                if e["target"]:
                    st.caption("target")
                    show_text(e["target"])
                if e["content"]:
                    st.caption("content")
                    show_text(e["content"])
                if e["rationale"]:
                    st.caption("rationale")
                    st.text(e["rationale"])

with tab_blame:
    best_text = cached("best_skill", run_id) or ""
    refs = [blame.VersionRef(v["step"], v["kind"], v["sha"]) for v in versions]
    chain_refs = blame.incumbent_chain(refs, upto_step=best_step, final_sha=sha(best_text))
    chain = [blame.Version(r.step, r.kind, cached("version", run_id, r.step, r.kind) or "") for r in chain_refs]
    edits_ref = [blame.EditRef(e["step"], e["idx"], e["op"], e["content"] or "", e["target"] or "")
                 for e in cached("applied_edits", run_id) or []]
    deltas = {(s["step"], "current"): s["candidate_score"] - s["current_score"]
              for s in cached("steps", run_id) or []
              if s["candidate_score"] is not None and s["current_score"] is not None}
    deltas |= {(u["step"], "epoch_end"): u["score_after"] - u["score_before"]
               for u in cached("slow_updates", run_id) or []
               if u["score_after"] is not None and u["score_before"] is not None}
    lines = blame.blame(chain, best_text, edits_ref, deltas)

    def origin(line: blame.BlameLine) -> str:
        if line.kind == "seed":
            return "seed"
        if line.kind == "epoch_end":
            return f"slow update after step {line.step}"
        if line.kind == "unknown":
            return "unrecorded change"
        return f"step {line.step}" + (f" · edit #{line.edit_idx} ({line.edit_op})" if line.edit_idx is not None else "")

    parts = ", ".join(f"{'seed' if k == 'seed' else f'step {s}'}: {n}" for s, k, n in blame.summary(lines))
    st.caption(f"Best skill (step {best_step}), {len(lines)} lines. Non-blank lines by origin: {parts}")
    frame = pd.DataFrame([{"line": ln.number, "text": ln.text, "origin": origin(ln), "step": ln.step,
                           "Δ score of step": ln.score_delta} for ln in lines])
    st.dataframe(frame, hide_index=True, width="stretch", height=min(800, 38 + 35 * len(lines)),
                 column_config={"text": st.column_config.TextColumn(width="large"),
                                "Δ score of step": st.column_config.NumberColumn(format="%+.3f")})
    st.download_button("Download the best skill", data=best_text, file_name=f"best_skill_{run_id}.md",
                       mime="text/markdown", key="dl_best")

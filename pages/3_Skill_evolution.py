"""Skill evolution: version timeline, diff of any two versions, per-edit cards, blame of the best skill."""
from skillopt.ui.common import setup

setup("Skill evolution")

import streamlit as st  # noqa: E402  (setup() must be the first Streamlit call of the page)

from skillopt.ui import diffview  # noqa: E402
from skillopt.ui import evolution as evo  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.common import cached, is_live, lazy_expander, pick_run, show_text, simulated_banner  # noqa: E402
from skillopt.ui.common import view, windowed  # noqa: E402

st.title("Skill evolution")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)

versions = evo.ordered(cached("versions", run_id) or [])
if not versions:
    st.info("No skill version yet: the seed skill is stored once it has been scored on the selection split.")
    st.stop()
best_step = (cached("run", run_id) or {}).get("best_step") or 0
by_key = {evo.key_of(v): v for v in versions}
keys = [evo.BEST, *by_key]


def label_of(key: str) -> str:
    return evo.label_of(key, by_key, best_step)


def version_text(step: int, kind: str) -> str:
    return cached("version", run_id, step, kind) or ""


def text_of(key: str) -> str:
    return (cached("best_skill", run_id) or "") if key == evo.BEST else version_text(*evo.parse_key(key))


def timeline_figure(run: str, best: int):
    """Built once per store version: 1,000 versions' markers take plotly ~0.2 s to validate."""
    return evo.timeline_figure(cached("versions", run) or [], best)


def timeline() -> None:
    fresh = cached("versions", run_id) or versions
    st.plotly_chart(view(timeline_figure, run_id, best_step), width="stretch")
    with (box := lazy_expander(f"All {len(fresh)} stored versions", "evo_versions")):
        if box.open:  # a 500-step run stores 1,000 versions: a table sent only when asked for
            shown = windowed(evo.versions_frame(fresh), "evo_all_versions")
            table.show(shown, height=table.scrolled(len(shown)))


def edit_card(e: dict, approval: dict | None, step_row: dict | None) -> None:
    with st.container(border=True):
        st.markdown(evo.edit_badges(e))
        if e["section"]:
            st.caption("section")
            st.text(e["section"])
        if e["target"]:
            st.caption("target")
            show_text(e["target"])
        edited = evo.provenance(approval)
        if edited is not None:  # a person rewrote it: their text is what was applied, the proposal stays visible
            st.caption("content, as a person rewrote it during approval (this text was applied)")
            show_text(edited[1])
            st.caption("content as the optimizer proposed it")
            show_text(edited[0])
        elif e["content"]:
            st.caption("content")
            show_text(e["content"])
        if e["rationale"]:
            st.caption("rationale")
            st.text(e["rationale"])
        reason, note = evo.drop_reason(e)
        if note:  # why it was dropped, or why it got its fate or patch status
            st.caption(f"why dropped ({reason})" if reason else "note")
            st.text(note)
        for label, text in evo.evidence(e):
            st.caption(label)
            st.text(text)
        if e["gate"]:
            st.caption(f"effect at the gate: {evo.edit_effect(e, step_row)}")


st.subheader("Version timeline")
st.fragment(run_every=3 if is_live(run) else None)(timeline)()


def diff_tab() -> None:
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
        col.download_button(f"Download {label_of(key)}", data=text, file_name=f"skill_{run_id}_{evo.file_part(key)}.md",
                            mime="text/markdown", key=f"dl_{key}_{col is d1}")


def edits_tab() -> None:
    steps = cached("steps", run_id) or []
    if not steps:
        st.info("No step has completed yet.")
    else:
        step_nos = [s["step"] for s in steps]
        by_step = {s["step"]: s for s in steps}
        with_edits = [s["step"] for s in steps if s["n_proposed"]]
        chosen = st.select_slider("Step", options=step_nos, value=(with_edits or step_nos)[-1], key="edit_step")
        st.caption(evo.step_caption(by_step[chosen]))
        edits = cached("edits", run_id, chosen) or []
        by_edit = evo.approvals_by_edit(cached("approvals", run_id, chosen) or [], edits)
        keep = st.multiselect("Pipeline fate", evo.FATE_FILTER, default=evo.FATE_FILTER, key="edit_fates")
        if not edits:
            st.info("No edit was proposed at this step.")
        for e in edits:
            if e["fate"] in keep:
                edit_card(e, by_edit.get((chosen, e["idx"])), by_step[chosen])


def blame_tab() -> None:
    best_text = cached("best_skill", run_id) or ""
    all_steps = cached("steps", run_id) or []
    deltas = evo.score_deltas(all_steps, cached("slow_updates", run_id) or [], cached("gate_decisions", run_id) or [])
    applied = [e for e in cached("edits", run_id) or [] if e["status"] == "applied" and e["approval"] != "rejected"]
    lines = evo.blame_best(versions, best_step, best_text, version_text, applied, deltas)
    edited = frozenset(k for k, a in evo.approvals_by_edit(cached("approvals", run_id) or [], applied).items()
                       if a["status"] == "edited")
    st.caption(evo.blame_caption(lines, best_step))
    if evo.edited_caption(lines, edited):
        st.caption(evo.edited_caption(lines, edited))
    table.show(evo.blame_frame(lines, applied, all_steps, edited), height=table.scrolled(len(lines)))
    st.caption("A line's **effect** is what the gate measured of the edit that wrote it; a step's edits judged "
               "together are not attributed one by one.")
    st.download_button("Download the best skill", data=best_text, file_name=f"best_skill_{run_id}.md",
                       mime="text/markdown", key="dl_best")


# Only the open tab is built: the edit cards (highlighted code) and the blame (every applied
# edit, the incumbent chain's texts) cost the server and the browser only once asked for.
tabs = st.tabs(evo.TABS, key="evo_tab", on_change="rerun")
for tab, body in zip(tabs, (diff_tab, edits_tab, blame_tab)):
    with tab:
        if tab.open:
            body()

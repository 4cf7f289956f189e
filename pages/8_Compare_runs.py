"""Compare runs: selection curves overlaid, what each run cost (calls, tokens, time, cache
hits), parameters side by side, best skills diffed.

The chosen runs live in the URL (?runs=a,b), so a comparison can be shared as a link;
without one, the page opens on the run being looked at and the newest other run.
"""
from __future__ import annotations

import streamlit as st

from skillopt.ui.common import setup

setup("Compare runs", icon=":material/compare_arrows:")

from skillopt.ui import compare  # noqa: E402
from skillopt.ui import diffview  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui.common import NO_RUNS, cached, current_run_id, run_label  # noqa: E402

runs = cached("runs") or []
if not runs:
    st.info(NO_RUNS)
    st.stop()
by_id = {r["id"]: r for r in runs}
from_url = [i for i in (st.query_params.get("runs") or "").split(",") if i in by_id]
chosen = st.multiselect("Runs to compare", list(by_id),
                        default=compare.default_runs(list(by_id), from_url, current_run_id()),
                        format_func=lambda i: run_label(by_id[i]))
if ",".join(chosen) != st.query_params.get("runs", ""):
    st.query_params["runs"] = ",".join(chosen)
if not chosen:
    st.info("Pick at least one run.")
    st.stop()

full = [cached("run", i) for i in chosen]
labels = [compare.compare_label(r) for r in full]
if any(r["simulated"] for r in full):
    st.info("Simulated runs are marked SIMULATED: their scores show how the engine behaves, not how a real model "
            "performs.", icon=":material/science:")

st.subheader("Selection score of the current skill per step")
curves = {label + (" · SIMULATED" if r["simulated"] else ""):
          compare.selection_curve(cached("steps", r["id"]) or [], cached("seed_score", r["id"]))
          for r, label in zip(full, labels)}
st.plotly_chart(compare.compare_chart(curves), key="compare")

st.subheader("Calls, tokens, time and cache hits")
table.show(compare.costs_frame(full, [cached("usage", r["id"]) or {} for r in full], labels), index=True)

st.subheader("Parameters")
frame, differing = compare.params_frame(full, labels)
only = st.toggle("Only keys that differ", value=len(chosen) > 1 and bool(differing))
shown = frame.loc[differing] if only else frame
st.caption(f"{len(differing)} of {len(frame)} keys differ" + (" (highlighted)" if not only else ""))
table.show(shown, index=True, highlight=differing, height=table.scrolled(len(shown)))

st.subheader("Best skills")
if len(chosen) < 2:
    st.caption("Pick two runs to diff their best skills.")
    st.stop()
a, b, mode = st.columns([2, 2, 1])
left = a.selectbox("From", chosen, index=0, format_func=lambda i: labels[chosen.index(i)])
right = b.selectbox("To", chosen, index=1, format_func=lambda i: labels[chosen.index(i)])
view = mode.radio("View", ["inline", "side-by-side"], horizontal=True)
diffview.show(cached("best_skill", left), cached("best_skill", right), mode=view, context=3,
              left_title=labels[chosen.index(left)], right_title=labels[chosen.index(right)])

"""Rollouts: per-item results of any step and split as readable text (failures first, with
search), the test split item by item (seed vs best, and a confusion table for choice
tasks), the selection split's flip matrix, and the task's pinned must-not-regress items
(control rows; `python -m skillopt check` reads them as the task folder's pinned.txt).

Built for big runs: the table reads only the chosen (step, split) through the
rollouts_by_split index, "changed" looks up only the shown items through
rollouts_by_item, and the flip matrix reads four columns of selection rows.
"""
from skillopt.ui.common import setup

setup("Rollouts")

import pandas as pd  # noqa: E402
import streamlit as st  # noqa: E402

from skillopt.tasks.task import SPLITS  # noqa: E402
from skillopt.ui import flips  # noqa: E402
from skillopt.ui import gate_timeline as gt  # noqa: E402
from skillopt.ui import rollouts as ro  # noqa: E402
from skillopt.ui import table as static  # noqa: E402  (the page names its rows `table`)
from skillopt.ui import testview as tv  # noqa: E402
from skillopt.store.pins import pinned_file  # noqa: E402
from skillopt.ui.common import cached, db, is_live, lazy_expander, pick_run, reader, show_text  # noqa: E402
from skillopt.ui.common import simulated_banner, view  # noqa: E402


def previous_results(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(purpose, item id) -> the item's latest earlier result on the same split and purpose."""
    previous: dict[tuple[str, str], dict] = {}
    for p in sorted({r["purpose"] for r in rows}):
        ids = [r["item_id"] for r in rows if r["purpose"] == p]
        for prev in cached("previous_results", run_id, split, p, step, ids) or []:
            previous[(p, prev["item_id"])] = prev
    return previous


def trajectory(full: dict) -> None:
    d1, d2 = st.columns(2)
    with d1:
        st.markdown("**Input**")
        show_text(ro.readable(full["input_json"]), language="text")
        st.markdown("**Expected**")
        show_text(full["expected"], language="text")
    with d2:
        st.markdown(f"**Output** · hard {full['hard']:.2f} · soft {full['soft']:.2f}")
        show_text(ro.readable(full["output"]), language="text")
        st.markdown("**Evaluator feedback**")
        show_text(full["feedback"], language="text")
        if full["error"]:
            st.markdown("**Error**")
            show_text(full["error"], language="text")


def test_split() -> None:
    """The test split item by item: the seed against the best skill, and for a choice task
    which label each expected label was answered with."""
    test_steps = cached("rollout_steps", run_id, "test") or []
    if not test_steps:
        return
    at = test_steps[-1]
    best = cached("rollouts", run_id, at, "test", "test_best") or []
    seed = cached("rollouts", run_id, at, "test", "test_seed") or []
    if not best:
        return
    st.subheader("Test split: seed skill vs best skill")
    labels = tv.choice_labels((cached("run", run_id) or {}).get("task_path"))
    frame = tv.seed_vs_best(seed, best, labels)
    st.caption(f"{len(frame)} test items · {tv.change_counts(frame)}")
    if labels:
        which = st.radio("Confusion of", ["best", "seed"], horizontal=True, key="confusion_skill",
                         format_func=lambda w: f"{w} skill")
        table = tv.confusion(best if which == "best" else seed, labels)
        c1, c2 = st.columns([3, 2])
        c1.plotly_chart(tv.confusion_figure(table, which), key="confusion")
        with c2:
            static.show(tv.per_label(table), {"accuracy": "%.2f"})
    st.dataframe(frame, hide_index=True, width="stretch", key="seed_vs_best",
                 column_config={"seed": st.column_config.NumberColumn("seed hard", format="%.0f"),
                                "best": st.column_config.NumberColumn("best hard", format="%.0f")})


def flip_matrix(run: str) -> flips.FlipMatrix | None:
    """Built once per store version and shared: a 500-step run has 100,000 selection rollouts,
    whose rows (megabytes) would otherwise be read, copied out of the data cache and rebuilt
    into the matrix on every rerun. Read uncached: only the (frozen) matrix is kept."""
    data = reader().selection_matrix(run)
    if not data:
        return None
    decisions = {s["step"]: s["decision"] for s in cached("steps", run) or []}
    gates = cached("gate_decisions", run) or []
    slow = {g["step"]: g["decision"] for g in gt.slow_gates(gates)}
    return flips.build(data, decisions, slow, {g["step"]: g["decision"] for g in gt.examples_gates(gates)})


def matrix() -> None:
    m = view(flip_matrix, run_id)
    if m is None:
        st.info("No selection rollout yet.")
        return
    grid = st.radio("Show", list(ro.GRIDS), horizontal=True, key="matrix_grid", format_func=ro.GRIDS.get)
    lo, hi = 0, len(m.steps)
    if len(m.steps) > ro.MAX_MATRIX_STEPS:
        first, last = st.select_slider("Steps shown", options=list(m.steps),
                                       value=(m.steps[-ro.MAX_MATRIX_STEPS], m.steps[-1]), key="matrix_range")
        lo, hi = m.steps.index(first), m.steps.index(last) + 1
    st.plotly_chart(ro.matrix_figure(m, grid, lo, hi), width="stretch")
    st.caption(ro.flips_caption(m, flips.flip_counts(m)))


def pin_button(task: str, item_id: str) -> None:
    """Pin the shown item as must-not-regress for its task (or unpin it): a control row."""
    if item_id in ro.pinned_ids(reader(), task):
        if st.button(f"Unpin {item_id}", key="unpin", icon=":material/keep_off:"):
            ro.set_pins(db(), task, remove=[item_id])
            st.rerun()
    elif st.button(f"Pin {item_id} (must not regress)", key="pin", icon=":material/keep:", help=ro.PIN_HELP):
        ro.set_pins(db(), task, add=[item_id])
        st.rerun()


def pinned_section(task: str) -> None:
    """The task's pins: unpin some, or download them as the task folder's pinned.txt."""
    st.subheader("Pinned items")
    ids = ro.pinned_ids(reader(), task)
    if not ids:
        st.caption(f"No item of task {task} is pinned: pin one under a trajectory above. {ro.PIN_HELP}")
        return
    st.caption(ro.pins_caption(task, len(ids)))
    show_text(" ".join(ids), language="text")  # item ids are task data: shown verbatim, never as markdown
    remove = st.multiselect("Unpin", ids, key="pins_remove", placeholder="choose pinned items to unpin")
    c1, c2 = st.columns(2)
    if c1.button("Unpin chosen items", key="pins_unpin", disabled=not remove):
        ro.set_pins(db(), task, remove=remove)
        st.rerun()
    c2.download_button("Download pinned.txt", pinned_file(task, ids), file_name="pinned.txt", mime="text/plain",
                       key="pins_download", icon=":material/download:")


st.title("Rollouts")
run = pick_run()
if run is None:
    st.stop()
run_id = run["id"]
simulated_banner(run)

steps_by_split = {s: cached("rollout_steps", run_id, s) or [] for s in SPLITS}
available = [s for s in SPLITS if steps_by_split[s]]
if not available:
    st.info("No rollout recorded yet: the seed skill is scored on the selection split first.")
    st.stop()

c1, c2, c3 = st.columns([1, 2, 2])
split = c1.radio("Split", available, key="split")
split_steps = steps_by_split[split]
step = c2.select_slider("Step", options=split_steps, value=split_steps[-1], key=f"step_{split}")
purposes = cached("rollout_purposes", run_id, split, step) or []
purpose = c3.selectbox("Purpose", ro.purpose_options(purposes), key=f"purpose_{split}", format_func=ro.purpose_label)

f0, f1, f2, f3 = st.columns([2, 1, 1, 1])
filters = ro.Filters(
    search=f0.text_input("Search", key="search", placeholder="item id, or words of its input, output or answer"),
    failures_only=f1.toggle("Failures only (hard < 1)", value=True, key="failures"),
    changed_only=f2.toggle("Changed since its previous result", key="changed",
                           help="The item's latest earlier result on the same split and purpose."),
    errors_only=f3.toggle("Model errors only", key="errors"))

rows = cached("rollouts", run_id, step, split, None if purpose == ro.ALL else purpose) or []
table = ro.table(rows, previous_results(rows), filters)
st.caption(ro.summary(rows, step, split, len(table)))
if table:
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch",
                 column_config={"hard": st.column_config.NumberColumn(format="%.2f"),
                                "soft": st.column_config.NumberColumn(format="%.2f")})
    keys = {ro.row_key(r["purpose"], r["item_id"]): r for r in rows}
    pick = st.selectbox("Trajectory", [f"{t['purpose']} · {t['item']}" for t in table], key="trajectory")
    pin_button(run["task"], keys[pick]["item_id"])
    trajectory(keys[pick])
else:
    st.info("No rollout matches these filters (failures only is on by default).")

pinned_section(run["task"])
test_split()

# Opened on demand: the matrix reads every selection rollout (100,000 on a 500-step run) and is
# the page's only chart, so closed it spares the first render that read and the browser the
# plotting library (4.7 MB of script to load). Built once per store version when open.
with (box := lazy_expander("Flip matrix (selection split)", "rollouts_matrix")):
    if box.open:
        st.fragment(run_every=3 if is_live(run) else None)(matrix)()

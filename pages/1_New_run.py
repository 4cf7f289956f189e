"""New run: pick or upload a task, edit the seed skill, choose models, set every knob,
check everything (preflight), see what the run will cost, and launch it.

Launching starts `python -m skillopt train` through skillopt.launcher (which also writes
an edited seed skill); this page never trains and does no file I/O. The logic (tasks,
uploads, groups, presets, checks, estimate) lives in skillopt.ui.forms.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from skillopt.ui.common import setup

setup("New run", icon=":material/add:")

from skillopt.tasks import csvimport  # noqa: E402
from skillopt import launcher  # noqa: E402
from skillopt.config import field_help  # noqa: E402
from skillopt.errors import UserError  # noqa: E402
from skillopt.tasks.loader import BUILTIN_DIR, list_tasks, load_task  # noqa: E402
from skillopt.ui import forms  # noqa: E402
from skillopt.ui import table  # noqa: E402
from skillopt.ui import uploads  # noqa: E402
from skillopt.ui.common import db, show_markdown, show_text  # noqa: E402

OK_MARK, FAIL_MARK = ":green[:material/check_circle:]", ":red[:material/cancel:]"


@st.cache_resource(ttl=30, show_spinner=False)
def task_infos(uploads: str) -> list:
    return list_tasks(tasks_dir=uploads)


@st.cache_resource(ttl=30, show_spinner=False)
def loaded(task_ref: str):
    return load_task(task_ref)


st.title("New run", anchor=False)

# ---- 1. task --------------------------------------------------------------------------
st.header("1 · Task", divider=True, anchor=False)
source = st.radio("Task source", ["Built-in or imported task", "Upload JSONL / CSV"], horizontal=True,
                  label_visibility="collapsed")
task_ref: str | None = None
if source == "Upload JSONL / CSV":
    upload = st.file_uploader("Task file (JSONL: one object per line; CSV: a header row)", type=["jsonl", "csv"],
                              help="At most 20 MB. Each row becomes one item; you map columns to fields below.")
    if upload is not None:
        try:
            csv_bytes, columns = uploads.upload_table(upload.name, upload.getvalue())
        except UserError as exc:
            st.error(str(exc))
            st.stop()
        c1, c2, c3 = st.columns(3)
        answer = c1.selectbox("Answer column (expected output)", columns, index=len(columns) - 1)
        id_choice = c2.selectbox("Id column", ["(row number)", *columns])
        evaluator = c3.selectbox("Evaluator", uploads.EVALUATORS,
                                 help="How an answer is scored: normalized ignores case, spacing and punctuation; "
                                      "choice treats the distinct answers as labels.")
        inputs = st.multiselect("Input columns (what the model sees)",
                                [c for c in columns if c not in (answer, id_choice)],
                                default=uploads.default_inputs(columns, answer, id_choice))
        mapping = uploads.mapping_for(inputs)
        id_column = None if id_choice == "(row number)" else id_choice
        rows, problems = csvimport.preview_csv(csv_bytes, mapping, answer_column=answer, id_column=id_column,
                                               source=upload.name)
        if problems:
            st.error(f"{len(problems)} problem(s) in {upload.name}:")
            show_text("\n".join(problems[:50]), language="text")
        else:
            st.success(f"{len(rows)} items ready to import; fields: {', '.join(mapping)}.")
            table.show(rows[:20])
            n1, n2 = st.columns(2)
            name = n1.text_input("Task name", value=Path(upload.name).stem)
            ratio = n2.text_input("Split ratio train:selection:test", value="2:1:7")
            # Each problem beside its field, as it is typed; the import waits until both are fine.
            name_problem = forms.problem_of(uploads.task_name, name)
            ratio_problem = forms.problem_of(uploads.split_ratio, ratio)
            if name_problem:
                n1.error(name_problem)
            if ratio_problem:
                n2.error(ratio_problem)
            if st.button("Import task", icon=":material/download:", disabled=bool(name_problem or ratio_problem)):
                try:
                    folder = uploads.import_upload(csv_bytes, upload.name, name, ratio, mapping=mapping,
                                                 answer_column=answer, id_column=id_column, evaluator=evaluator)
                except UserError as exc:
                    st.error(str(exc))
                else:
                    task_infos.clear()
                    st.session_state["imported"] = str(folder)
    if st.session_state.get("imported"):
        task_ref = st.session_state["imported"]
        st.success(f"Imported into {task_ref}; it is also listed under built-in or imported tasks.")
else:
    infos = task_infos(str(uploads.uploads_dir()))
    if not infos:
        st.error(f"No tasks found in {BUILTIN_DIR}.")
        st.stop()
    names = [i.name for i in infos]
    by_name = {i.name: i for i in infos}
    info = by_name[st.selectbox("Task", names, index=uploads.default_task_index(names), key="task",
                                format_func=lambda n: f"{n} — {by_name[n].description}" if not by_name[n].problem
                                else f"{n} — BROKEN")]
    if info.problem:
        st.error(info.problem)
    else:
        st.caption(" · ".join(f"{n} {split}" for split, n in info.sizes.items()) + f" · {info.path}")
        task_ref = uploads.task_ref(info)

task = None
if task_ref:
    try:
        task = loaded(task_ref)
    except UserError as exc:
        st.error(str(exc))
task_note = st.empty()  # the preflight's verdict on the task, beside it

# ---- 2. seed skill ---------------------------------------------------------------------
st.header("2 · Seed skill", divider=True, anchor=False)
seed_default = task.seed_skill if task is not None else ""
edit_tab, preview_tab = st.tabs(["Edit", "Preview"])
seed_skill = edit_tab.text_area("The skill document training starts from (Markdown)", value=seed_default,
                                height=300, key=f"seed-{task_ref}")
with preview_tab:
    show_markdown(seed_skill)
if task is not None and seed_skill != seed_default:
    st.caption("Edited: the run starts from your version (the task's own seed skill is unchanged).")
seed_note = st.empty()  # the preflight's verdict on the seed skill, beside it

# ---- 3. models -------------------------------------------------------------------------
st.header("3 · Models", divider=True, anchor=False)
preset_key = st.radio("Model preset", list(forms.MODEL_PRESETS), horizontal=True,
                      format_func=lambda k: forms.MODEL_PRESETS[k].label)
preset = forms.MODEL_PRESETS[preset_key]
st.caption(preset.help)
p_in: dict[str, str] = {}
if preset_key == "local":
    p_in["target"] = st.selectbox("Embedded model (target and optimizer)", forms.local_models())
elif preset_key in ("api", "server"):
    m1, m2 = st.columns(2)
    p_in["target"] = m1.text_input("Target model (litellm string)",
                                   placeholder="openai/gpt-4o-mini" if preset_key == "api" else "hosted_vllm/my-model")
    p_in["optimizer"] = m2.text_input("Optimizer model (empty = same as target)")
    k1, k2 = st.columns(2)
    p_in["key_env"] = k1.text_input("Name of the environment variable holding the API key",
                                    placeholder="OPENAI_API_KEY",
                                    help="The NAME only (e.g. OPENAI_API_KEY): the key itself is never typed here, "
                                         "stored or logged.")
    if preset_key == "server":
        p_in["api_base"] = k2.text_input("Server URL (OpenAI-compatible)", placeholder="http://127.0.0.1:8000/v1")
if preset_key == "sim":
    st.info("Simulated models are not real: every page labels such runs as SIMULATED.", icon=":material/science:")
model_values = preset.build(forms.PresetInput(**p_in))
models_note = st.empty()  # the run preflight's verdict on these models, once the whole config is known (below)

# ---- 4. settings -----------------------------------------------------------------------
st.header("4 · Settings", divider=True, anchor=False)
helps = field_help()


slots: dict = {}  # knob -> the place right under its widget, where its problem is shown


def knob(name: str):
    value = _widget(name)
    slots[name] = st.empty()
    return value


def _widget(name: str):
    default = forms.default(name)
    text = f"{helps.get(name, '')} (default: {default!r})"
    key, label = f"knob-{name}", name
    kind = forms.kind(name)
    if kind == "bool":
        return st.toggle(label, value=default, help=text, key=key)
    if kind == "choice":
        options = forms.CHOICES[name]
        return st.selectbox(label, options, index=options.index(default), help=text, key=key)
    if kind == "int":
        return int(st.number_input(label, value=default, step=1, help=text, key=key))
    if kind == "float":
        return float(st.number_input(label, value=float(default), step=0.05 if default <= 1 else 1.0,
                                     format="%.4g", help=text, key=key))
    return st.text_input(label, value=default, help=text, key=key)


values: dict = {}
prominent = ("Approval", "Budgets")
a_col, b_col = st.columns(2)
for group, col in zip(prominent, (a_col, b_col)):
    with col:
        st.markdown(f"**{group}**")
        for name in forms.KNOB_GROUPS[group]:
            values[name] = knob(name)
for group, names in forms.KNOB_GROUPS.items():
    if group in prominent:
        continue
    shown = [n for n in names if n not in forms.PRESET_FIELDS]
    # The group holding the setting with a problem opens (a new label: an expander keeps its state).
    flagged = forms.group_of(st.session_state.get("problem_field")) == group
    with st.expander(f"{group} ({len(shown)})" + (" · has a problem" if flagged else ""), expanded=flagged):
        cols = st.columns(2)
        for k, name in enumerate(shown):
            with cols[k % 2]:
                values[name] = knob(name)
values |= model_values
run_name = st.text_input("Run name (optional)")

# ---- 5. estimate, preflight, launch ----------------------------------------------------
st.header("5 · Check and launch", divider=True, anchor=False)


def show_problem(message: str | None) -> None:
    """A config problem beside the setting it names (its group opened); a problem that names
    no setting here."""
    field = forms.field_of(message) if message else None
    if st.session_state.get("problem_field") != field:
        st.session_state["problem_field"] = field
        st.rerun()  # once: the group holding the setting is drawn open
    if message is None:
        return
    if field in slots:
        slots[field].error(message)
        st.error(f"A setting has a problem: **{field}** ({forms.group_of(field)}), marked above.")
    elif field in forms.PRESET_FIELDS:
        models_note.error(message)
    else:
        st.error(message)


config = None
try:
    config = forms.build_config(values)
except UserError as exc:
    show_problem(str(exc))
if config is not None:
    show_problem(None)
if config is not None and task is not None:
    models_refused = forms.models_problem(task, config)
    if models_refused:
        models_note.error(models_refused, icon=":material/block:")
est = None
if config is not None and task is not None:
    try:
        est = forms.estimate_for(task, config, seed_skill)
    except UserError as exc:
        st.error(str(exc))
if est is not None:
    e1, e2, e3, e4 = st.columns(4)
    e1.metric("Steps", est.steps)
    e2.metric("Target calls ≤", f"{est.target_calls:,}")
    e3.metric("Optimizer calls ≤", f"{est.optimizer_calls:,}")
    e4.metric("Cost ≤", "unknown" if est.cost_usd is None else f"${est.cost_usd:,.2f}",
              help="litellm's cost map × guessed tokens; local and simulated models cost $0")
    st.caption(est.note + ("; local and simulated models cost nothing" if est.cost_usd == 0 else ""))

seed_arg = seed_skill if task is not None and seed_skill != seed_default else None


def show_checks(checks: list) -> bool:
    for c in checks:
        st.markdown(f"{OK_MARK if c.ok else FAIL_MARK} **{c.name}**")
        st.text(f"    {c.detail}")
        if not c.ok:
            mark_beside(c)
    return all(c.ok for c in checks)


def mark_beside(c) -> None:
    """A failed check also where its field is: the task, the seed skill, the models, a setting."""
    if c.name == "task":
        task_note.error(c.detail, icon=":material/block:")
    elif c.name == "seed skill":
        seed_note.error(c.detail, icon=":material/block:")
    elif c.name.endswith(" model") or c.name.startswith("key variable") or c.name == "models for this task":
        models_note.error(c.detail, icon=":material/block:")
    elif forms.field_of(c.detail) in slots:
        slots[forms.field_of(c.detail)].error(c.detail, icon=":material/block:")


p_col, l_col = st.columns(2)
if p_col.button("Preflight", icon=":material/checklist:",
                help="Load the task, validate the config and check the models and keys without calling any model."):
    with st.spinner("Checking…"):
        st.session_state["preflight"] = forms.preflight(task_ref or "", values, seed_arg)
if st.session_state.get("preflight") is not None:
    show_checks(st.session_state["preflight"])
if l_col.button("Launch run", icon=":material/rocket_launch:", type="primary", disabled=task_ref is None):
    checks = forms.preflight(task_ref or "", values, seed_arg)
    if not all(c.ok for c in checks):
        st.error("Preflight failed: each problem is marked beside its field above, and listed below.")
        show_checks(checks)
    else:
        st.session_state["launched"] = launcher.launch(task_ref, forms.overrides(values), db=db(),
                                                       name=run_name.strip(), seed_skill=seed_arg)
if st.session_state.get("launched"):
    rid = st.session_state["launched"]
    st.success(f"Launched run {rid}.", icon=":material/rocket_launch:")
    st.page_link("pages/2_Monitor.py", label=f"Watch run {rid} on the Monitor page", icon=":material/monitoring:",
                 query_params={"run": rid})

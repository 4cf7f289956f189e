"""New run page and skillopt/ui/forms.py: knobs, presets, upload, preflight, estimate, launch."""
from __future__ import annotations

import json
import math
import sqlite3
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from skillopt import launcher
from skillopt.config import FIELD_NAMES, RunConfig, field_help
from skillopt.errors import TaskError
from skillopt.plan import Plan
from skillopt.store.reader import Reader
from skillopt.tasks.csvimport import MAX_UPLOAD_BYTES
from skillopt.tasks.loader import load_task
from skillopt.tasks.task import Item
from skillopt.ui import forms
from skillopt.ui import uploads
from tests.helpers import tables

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/1_New_run.py"
SIM_SEED = load_task("sim-rulebook").seed_skill


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOPT_DB", str(tmp_path / "runs" / "skillopt.db"))
    monkeypatch.setenv(uploads.UPLOADS_ENV, str(tmp_path / "uploads"))
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE)  # app.py stays the entrypoint, so page links resolve as in the browser
    at.run()
    assert not at.exception
    return at


def sim_page(**knobs) -> AppTest:
    at = page()
    at.selectbox(key="task").select("sim-rulebook")
    at.radio[1].set_value("sim")
    for name, value in knobs.items():
        at.number_input(key=f"knob-{name}").set_value(value)
    at.run()
    assert not at.exception
    return at


def checklist(at: AppTest) -> dict[str, bool]:
    """check name -> passed, read from the rendered checklist."""
    marks = {":green[:material/check_circle:]": True, ":red[:material/cancel:]": False}
    return {m.value.split("**")[1]: ok for m in at.markdown for mark, ok in marks.items()
            if m.value.startswith(mark + " **")}


def widget(at: AppTest, name: str):
    kind = forms.kind(name)
    finder = {"bool": at.toggle, "choice": at.selectbox, "int": at.number_input, "float": at.number_input,
              "str": at.text_input}[kind]
    return finder(key=f"knob-{name}")


# ---- the page ---------------------------------------------------------------------------

def test_every_knob_has_a_widget_with_default_and_help():
    at = page()
    helps = field_help()
    for name in FIELD_NAMES:
        if name in forms.PRESET_FIELDS:
            continue
        w = widget(at, name)
        assert w.value == forms.default(name), name
        assert helps[name] in w.help and repr(forms.default(name)) in w.help


def test_sim_preset_estimate_preflight_and_launch(monkeypatch):
    launched = []
    monkeypatch.setattr(launcher, "start", lambda task, overrides, **kw: launched.append((task, overrides, kw))
                        or (kw["run_id"], None))
    at = sim_page(num_epochs=1)
    task = load_task("sim-rulebook")
    config = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", num_epochs=1)
    est = forms.estimate_for(task, config, task.seed_skill)
    forecast = Plan.make(task, config).call_forecast(config)
    assert (est.target_calls, est.optimizer_calls) == (forecast.target_calls, forecast.optimizer_calls)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steps"] == str(est.steps)
    assert metrics["Target calls ≤"] == f"{est.target_calls:,}"
    assert metrics["Optimizer calls ≤"] == f"{est.optimizer_calls:,}"
    assert metrics["Cost ≤"] == "$0.00"

    next(b for b in at.button if b.label == "Preflight").click().run()
    checks = checklist(at)
    assert checks == {"task": True, "config": True, "plan": True, "models for this task": True, "target model": True,
                      "optimizer model": True}

    next(b for b in at.button if b.label == "Launch run").click().run()
    assert not at.exception
    task_ref, overrides, kw = launched[0]
    assert task_ref == "sim-rulebook"
    assert overrides == {"num_epochs": 1, "target_model": "sim/target", "optimizer_model": "sim/optimizer"}
    assert kw["seed_skill_file"] is None
    links = [p for p in at.get("page_link") if kw["run_id"] in p.value]
    assert links and links[0].proto.page.endswith("Monitor")


def test_failed_preflight_blocks_the_launch(monkeypatch):
    monkeypatch.delenv("SKILLOPT_TEST_NO_SUCH_KEY", raising=False)
    launched = []
    monkeypatch.setattr(launcher, "start", lambda *a, **k: launched.append(a))
    at = page()
    at.radio[1].set_value("api").run()
    at.text_input[0].input("openai/gpt-4o-mini")
    at.text_input[2].input("SKILLOPT_TEST_NO_SUCH_KEY").run()
    next(b for b in at.button if b.label == "Launch run").click().run()
    assert not at.exception and not launched
    assert any("Preflight failed" in e.value for e in at.error)
    checks = checklist(at)
    assert checks["key variable SKILLOPT_TEST_NO_SUCH_KEY"] is False and checks["target model"] is False
    assert checks["task"] is True
    assert any("SKILLOPT_TEST_NO_SUCH_KEY" in t.value and "not set" in t.value for t in at.text)


def test_simulated_models_on_a_real_task_are_refused_beside_the_model_fields(monkeypatch):
    launched = []
    monkeypatch.setattr(launcher, "start", lambda *a, **k: launched.append(a) or ("x", None))
    at = page()
    assert at.selectbox(key="task").value == "ticket-routing"
    at.radio[1].set_value("sim").run()
    refusal = ("target model sim/target is simulated, but task ticket-routing is not a simulated task (the simulated "
               "models know only their own world: every score would be 0); use a real model, or set "
               "allow_simulated_models=true to run it anyway")
    # Shown in the Models section, between the preset and the settings.
    order = [(n.type, n.value) for n in at.main if n.type in ("header", "error")]
    models_at = order.index(("header", "3 · Models"))
    assert order[models_at + 1:models_at + 3] == [("error", refusal), ("header", "4 · Settings")]

    next(b for b in at.button if b.label == "Launch run").click().run()
    assert not at.exception and not launched
    assert any("Preflight failed" in e.value for e in at.error)
    checks = checklist(at)
    assert checks["models for this task"] is False and checks["task"] is True
    assert any(t.value.strip() == refusal for t in at.text)

    at.toggle(key="knob-allow_simulated_models").set_value(True).run()  # the explicit override
    assert not [e.value for e in at.error if "simulated" in e.value]


def test_invalid_config_is_reported_inline():
    at = page()
    widget(at, "min_learning_rate").set_value(5)
    at.run()
    assert any("min_learning_rate (5) > learning_rate (4)" in e.value for e in at.error)
    assert not at.metric  # no estimate for a config that cannot run


def wait_for(predicate, what: str, limit_s: float = 120.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def test_edited_seed_skill_trains_for_real(tmp_path):
    at = sim_page(num_epochs=1, max_steps_per_epoch=1)
    edited = SIM_SEED.rstrip("\n") + "\n- Check the ship-to state before anything else.\n"
    at.text_area(key="seed-sim-rulebook").input(edited).run()
    assert any("Edited" in c.value for c in at.caption)
    next(b for b in at.button if b.label == "Launch run").click().run()
    assert not at.exception
    run_id = at.session_state["launched"]
    db = tmp_path / "runs" / "skillopt.db"

    def finished():
        if not db.exists():
            return None
        reader = Reader(db)
        try:
            run = reader.run(run_id)
        except sqlite3.OperationalError:
            return None
        finally:
            reader.close()
        return run if run and run["status"] not in ("pending", "running") else None

    run = wait_for(finished, f"run {run_id}")
    assert run["status"] == "completed", launcher.read_log(db, run_id)
    assert run["seed_skill"] == edited
    assert run["config"]["num_epochs"] == 1 and run["simulated"] == 1


CSV = "id,question,answer\n" + "".join(f"q{i},What is {i} plus {i}?,{2 * i}\n" for i in range(30))


def test_csv_upload_previews_and_imports(tmp_path):
    at = page()
    at.radio[0].set_value("Upload JSONL / CSV").run()
    at.file_uploader[0].set_value(("sums.csv", CSV.encode(), "text/csv")).run()
    assert not at.exception
    at.selectbox[0].select("answer")
    at.selectbox[1].select("id").run()
    assert at.multiselect[0].value == ["question"]
    assert any("30 items ready to import" in s.value for s in at.success)
    assert len(tables(at)[0]) == 20  # the preview's first rows
    next(b for b in at.button if b.label == "Import task").click().run()
    assert not at.exception
    folder = tmp_path / "uploads" / "sums"
    task = load_task(folder)
    assert sum(len(task.split(s)) for s in ("train", "selection", "test")) == 30
    assert at.session_state["imported"] == str(folder)
    assert at.text_area(key=f"seed-{folder}").value == task.seed_skill


def test_bad_uploads_are_explained_inline():
    at = page()
    at.radio[0].set_value("Upload JSONL / CSV").run()
    at.file_uploader[0].set_value(("rows.jsonl", b'{"q": "a", "a": "1"}\n{oops\n', "application/json")).run()
    assert any("rows.jsonl:2: not valid JSON" in e.value for e in at.error)
    dup = "id,question,answer\nq1,a,1\nq1,b,2\n"
    at.file_uploader[0].set_value(("dup.csv", dup.encode(), "text/csv")).run()
    at.selectbox[0].select("answer")
    at.selectbox[1].select("id").run()
    assert any("problem(s) in dup.csv" in e.value for e in at.error)
    assert any("duplicate id 'q1'" in c.value for c in at.code)


# ---- forms.py ---------------------------------------------------------------------------

def test_knob_groups_hold_every_field_once():
    grouped = [name for names in forms.KNOB_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(FIELD_NAMES)
    assert set(forms.PRESET_FIELDS) <= set(forms.KNOB_GROUPS["Models"])


def test_presets_build_model_settings():
    p = forms.PresetInput
    assert forms.MODEL_PRESETS["sim"].build(p()) == {"target_model": "sim/target", "optimizer_model": "sim/optimizer"}
    assert forms.MODEL_PRESETS["local"].build(p())["optimizer_model"] == RunConfig().target_model
    api = forms.MODEL_PRESETS["api"].build(p(target="openai/gpt-4o-mini", key_env="OPENAI_API_KEY"))
    assert api == {"target_model": "openai/gpt-4o-mini", "optimizer_model": "openai/gpt-4o-mini",
                   "target_api_key_env": "OPENAI_API_KEY", "optimizer_api_key_env": "OPENAI_API_KEY"}
    server = forms.MODEL_PRESETS["server"].build(p(target="hosted_vllm/m", api_base="http://127.0.0.1:8000/v1"))
    assert server["target_api_base"] == server["optimizer_api_base"] == "http://127.0.0.1:8000/v1"
    assert "target_api_key_env" not in server


def test_overrides_keep_only_changed_values():
    values = {**RunConfig().to_dict(), "num_epochs": 2, "target_model": "sim/target"}
    assert forms.overrides(values) == {"num_epochs": 2, "target_model": "sim/target"}
    assert forms.build_config(values).num_epochs == 2


class SizedTask:
    """Just what Plan.make reads: a name and three splits of the given sizes."""

    def __init__(self, train: int, selection: int, test: int):
        self.name = "sized"
        self.splits = {name: tuple(Item(id=f"{name}-{i}", input={"q": str(i)}, expected="a", split=name)
                                   for i in range(n))
                       for name, n in (("train", train), ("selection", selection), ("test", test))}

    def split(self, name):
        return self.splits[name]


def test_estimate_counts_the_calls_the_plan_forecasts():
    c = RunConfig(target_model="sim/target", optimizer_model="sim/optimizer", num_epochs=2, batch_size=10,
                  minibatch_size=4, slow_update_samples=5)
    plan = Plan.make(SizedTask(25, 6, 8), c)
    est = forms.estimate(c, plan, skill_chars=400, prompt_chars=200)
    forecast = plan.call_forecast(c)
    assert est.steps == plan.total_steps == 2 * math.ceil(25 / 10)
    assert est.target_calls == forecast.target_calls and est.optimizer_calls == forecast.optimizer_calls
    assert est.cost_usd == 0.0


def test_estimate_prices_tokens_and_reports_unknown_prices():
    c = RunConfig(target_model="x/t", optimizer_model="x/o", num_epochs=1, batch_size=10, max_tokens=100,
                  use_slow_update=False)
    plan = Plan.make(SizedTask(10, 2, 2), c)
    est = forms.estimate(c, plan, skill_chars=400, prompt_chars=400, prices=lambda m: (1e-6, 2e-6))
    forecast = plan.call_forecast(c)
    target, optimizer = forecast.target_calls, forecast.optimizer_calls
    expected = target * (200 * 1e-6 + 100 * 2e-6) + optimizer * ((400 + 8 * 600 + 2000) / 4 * 1e-6 + 100 * 2e-6)
    assert est.cost_usd == pytest.approx(expected)
    unknown = forms.estimate(c, plan, skill_chars=1, prompt_chars=1, prices=lambda m: None)
    assert unknown.cost_usd is None and "x/t" in unknown.note
    capped = forms.estimate(c.replace(max_calls=5), plan, skill_chars=1, prompt_chars=1, prices=lambda m: (0, 0))
    assert "max_calls = 5" in capped.note


def test_launch_writes_the_edited_seed_skill_next_to_the_store(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(launcher, "start", lambda task, overrides, **kw: started.append(kw) or (kw["run_id"], None))
    db = tmp_path / "runs" / "skillopt.db"
    run_id = launcher.launch("sim-rulebook", {}, db=db, name="x", seed_skill="# Edited\n")
    seed_file = Path(started[0]["seed_skill_file"])
    assert started[0]["run_id"] == run_id and seed_file == launcher.seed_path(db, run_id)
    assert seed_file.parent == db.parent / "seeds" and seed_file.read_text(encoding="utf-8") == "# Edited\n"
    assert launcher.launch("sim-rulebook", {}, db=db) != run_id and started[1]["seed_skill_file"] is None


def test_upload_helpers():
    assert uploads.split_ratio("2:1:7") == (2.0, 1.0, 7.0)
    for bad in ("2:1", "a:b:c", "0:0:0", "-1:1:1", "inf:1:1", "nan:1:1", "1e400:1:1"):
        with pytest.raises(TaskError, match="give three non-negative numbers"):
            uploads.split_ratio(bad)
    with pytest.raises(TaskError, match=r"give every split a share \(empty: selection\)"):
        uploads.split_ratio("2:0:7")
    assert uploads.default_inputs(["ID", "q", "Label", "extra", "ans"], "ans", "(row number)") == ["q", "extra"]
    assert uploads.upload_table("t.jsonl", b'{"q": "x", "a": "1"}\n') == (b"q,a\nx,1\n", ["q", "a"])
    assert uploads.default_task_index(["a", uploads.DEFAULT_TASK]) == 1 and uploads.default_task_index(["a"]) == 0


def test_model_prices_are_zero_for_local_and_simulated():
    assert forms.model_prices("local/qwen2.5-coder-1.5b") == (0.0, 0.0)
    assert forms.model_prices("sim/target") == (0.0, 0.0)


def test_jsonl_becomes_csv_with_every_column():
    data = b'{"id": "a", "q": "x"}\n\n{"id": "b", "q": "y", "meta": {"k": 1}}\n'
    text = uploads.jsonl_to_csv("t.jsonl", data).decode()
    assert text.splitlines() == ["id,q,meta", "a,x,", 'b,y,"{""k"": 1}"']
    assert uploads.csv_columns("t.csv", text.encode()) == ["id", "q", "meta"]
    with pytest.raises(TaskError, match="t.jsonl:1: each line must be a JSON object"):
        uploads.jsonl_to_csv("t.jsonl", b"[1, 2]\n")
    with pytest.raises(TaskError, match="over the 20 MB upload limit"):
        uploads.check_upload("big.csv", b"x" * (MAX_UPLOAD_BYTES + 1))
    with pytest.raises(TaskError, match="semi.csv:1: the header row has an empty column name"):
        uploads.csv_columns("semi.csv", b"a;;b\n1;2;3\n")


def test_mapping_and_task_names_are_safe():
    assert uploads.mapping_for(["Subject", "Body text", "ID", "2nd"]) == {
        "subject": "Subject", "body_text": "Body text", "id_text": "ID", "f_2nd": "2nd"}
    assert uploads.mapping_for(["a b", "a-b"]) == {"a_b": "a b", "a_b_2": "a-b"}
    assert uploads.task_name("My Tickets (v2)!") == "my-tickets-v2"
    with pytest.raises(TaskError):
        uploads.task_name("!!!")
    assert json.dumps(forms.CHOICES["gate_mode"]) == '["strict", "paired"]'

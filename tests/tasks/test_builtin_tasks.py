"""Finding tasks (by name, path or task.toml, in SKILLOPT_TASKS_DIR, in the listing) and the
built-in tasks themselves: enough unique items, reproducible generators, answers that score."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skillopt.errors import TaskError
from skillopt.tasks.loader import BUILTIN_DIR, list_tasks, load_task, resolve_task_path, validate_task
from skillopt.tasks.task import SPLITS, expected_text
from tests.helpers import make_task

BUILTINS = ("ticket-routing", "invoice-extraction", "word-problems")


# ---------------------------------------------------------------- lookup and listing

def test_resolve_by_name_path_and_toml(tmp_path, monkeypatch):
    folder = make_task(tmp_path / "extra" / "mine")
    monkeypatch.setenv("SKILLOPT_TASKS_DIR", str(tmp_path / "extra"))
    assert resolve_task_path("mine") == tmp_path / "extra" / "mine"
    assert resolve_task_path(folder / "task.toml") == folder
    assert resolve_task_path("ticket-routing") == BUILTIN_DIR / "ticket-routing"
    assert load_task("mine").name == "mini"
    assert load_task("mine", tasks_dir=tmp_path / "extra").name == "mini"
    with pytest.raises(TaskError, match="no such task folder or built-in task"):
        load_task("does-not-exist")
    with pytest.raises(TaskError, match="no such task"):
        load_task(tmp_path / "missing" / "folder")


def test_list_tasks_includes_builtins_local_and_broken(tmp_path):
    make_task(tmp_path / "good")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.toml").write_text("name = \n", encoding="utf-8")
    infos = {info.path.name: info for info in list_tasks(tasks_dir=tmp_path)}
    assert set(BUILTINS) <= set(infos)
    assert infos["good"].sizes == {"train": 3, "selection": 3, "test": 3} and infos["good"].problem == ""
    assert infos["broken"].sizes == {} and "bad TOML" in infos["broken"].problem
    assert infos["ticket-routing"].description


# ---------------------------------------------------------------- built-in tasks

@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_task_loads_with_enough_unique_items(name):
    assert validate_task(BUILTIN_DIR / name) == []
    task = load_task(name)
    assert len(task.items()) >= 150
    sizes = {s: len(task.split(s)) for s in SPLITS}
    assert sizes["selection"] >= 30 and sizes["test"] >= 40 and sizes["train"] >= 40
    ids = [i.id for s in SPLITS for i in task.split(s)]
    assert len(ids) == len(set(ids))
    prompts = [task.render(i) for i in task.items().values()]
    assert len(set(prompts)) == len(prompts)  # no item repeated word for word
    assert max(len(p) for p in prompts) < 2000  # small local model: short prompts
    assert (BUILTIN_DIR / name / "README.md").read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("name", BUILTINS)
def test_generator_reproduces_the_committed_jsonl(tmp_path, name):
    folder = BUILTIN_DIR / name
    subprocess.run([sys.executable, str(folder / "generate.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True, timeout=120)
    for split in SPLITS:
        assert (tmp_path / f"{split}.jsonl").read_bytes() == (folder / f"{split}.jsonl").read_bytes(), split


def test_builtin_expected_answers_score_perfectly():
    for name in BUILTINS:
        task = load_task(name)
        for item in task.items().values():
            answer = expected_text(item.expected)
            if name == "word-problems":
                answer = f"Working.\nAnswer: {answer}"
            assert task.evaluate(item, answer).hard == 1.0, (name, item.id)


def test_ticket_routing_rules_are_spread_over_splits():
    rows = {s: [json.loads(l) for l in (BUILTIN_DIR / "ticket-routing" / f"{s}.jsonl").read_text().splitlines()]
            for s in SPLITS}
    for split, items in rows.items():
        kinds = {r["kind"] for r in items}
        assert {k for k in kinds if k.startswith("rule_")} == {
            "rule_regulation", "rule_refund_over_500", "rule_repeat_contact", "rule_lockout",
            "rule_damaged_in_transit"}, split
    queues = {r["queue"] for items in rows.values() for r in items}
    assert queues == {"billing", "technical", "account", "shipping", "legal", "escalations"}


def test_seed_skills_do_not_state_the_house_rules():
    routing = (BUILTIN_DIR / "ticket-routing" / "seed_skill.md").read_text().lower()
    assert not any(word in routing for word in ("gdpr", "500", "password", "damaged", "ticket number"))
    invoice = (BUILTIN_DIR / "invoice-extraction" / "seed_skill.md").read_text().lower()
    assert not any(word in invoice for word in ("iso", "upper", "suffix", "yyyy", "decimal"))
    words = (BUILTIN_DIR / "word-problems" / "seed_skill.md").read_text().lower()
    assert "answer:" not in words

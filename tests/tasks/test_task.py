"""A valid task: loading, splits (listed or by ratio), rendering, evaluation and rollouts,
on a mini task folder written by each test."""
from __future__ import annotations

import json

import pytest

from skillopt.errors import TaskError
from skillopt.tasks.loader import load_task, validate_task
from skillopt.tasks.task import SPLITS, Evaluation, Item, Task, TaskProtocol, Trajectory, expected_text, first_results
from tests.helpers import TOML, Reply, lines, make_task


# ---------------------------------------------------------------- loading a valid task

def test_load_valid_task(tmp_path):
    task = load_task(make_task(tmp_path / "mini"))
    assert isinstance(task, Task) and isinstance(task, TaskProtocol)
    assert (task.name, task.description) == ("mini", "A tiny arithmetic task.")
    assert task.seed_skill.startswith("# Mini")
    assert [len(task.split(s)) for s in SPLITS] == [3, 3, 3]
    first = task.split("train")[0]
    assert first == Item("t1", {"question": "1+1?"}, "2", "train")
    assert set(task.items()) == {f"{p}{i}" for p in "tsx" for i in (1, 2, 3)}
    assert task.render(first) == "Q: 1+1?"


def test_messages_put_the_skill_alone_first(tmp_path):
    task = load_task(make_task(tmp_path / "mini"))
    item = task.split("test")[1]
    assert task.messages("SKILL TEXT", item) == [{"role": "system", "content": "SKILL TEXT"},
                                                 {"role": "user", "content": "Q: 2+2?"}]


def test_evaluate_strips_fences_and_whitespace(tmp_path):
    task = load_task(make_task(tmp_path / "mini"))
    item = task.split("test")[0]
    assert task.evaluate(item, "```\n 2 \n```").hard == 1.0
    assert task.evaluate(item, "3").hard == 0.0


def test_rollout_success_failure_and_model_error(tmp_path):
    task = load_task(make_task(tmp_path / "mini"))
    item = task.split("train")[1]
    seen = []

    def complete(messages):
        seen.append(messages)
        return Reply(" 4 \n")

    good = task.rollout(item, "skill", complete)
    assert seen[0] == task.messages("skill", item)
    assert good == Trajectory("t2", "Q: 2+2?", "4", "4", Evaluation(1.0, 1.0, 'correct: "4"'))
    bad = task.rollout(item, "skill", lambda m: Reply("5"))
    assert bad.evaluation.hard == 0.0 and '"4"' in bad.evaluation.feedback
    failed = task.rollout(item, "skill", lambda m: Reply("", "rate_limit: gave up after 4 retries"))
    assert failed.error == "rate_limit: gave up after 4 retries"
    assert failed.evaluation == Evaluation(0.0, 0.0, "model error: rate_limit: gave up after 4 retries")
    assert failed.output == ""
    assert task.rollout(item, "skill", lambda m: "4").evaluation.hard == 1.0  # a plain string reply works too


def test_rollout_passes_the_judge_to_llm_judge(tmp_path):
    toml = TOML.replace('type = "normalized"', 'type = "llm_judge"\nrubric = "Is it right?"')
    task = load_task(make_task(tmp_path / "judged", toml))
    result = task.rollout(task.split("test")[0], "s", lambda m: Reply("2"),
                          judge=lambda m: Reply('{"score": 0.8, "feedback": "ok"}'))
    assert (result.evaluation.hard, result.evaluation.soft) == (1.0, 0.8)


def test_expected_text():
    assert expected_text("billing") == "billing"
    assert expected_text(42.0) == "42"
    assert expected_text(2.5) == "2.5"
    assert expected_text({"vendor": "ACME", "total": "1.00"}) == '{"vendor": "ACME", "total": "1.00"}'


def test_input_fields_default_to_all_but_id_and_answer(tmp_path):
    row = json.dumps({"id": "a", "question": "q", "context": "c", "expected": "x"}) + "\n"
    folder = make_task(tmp_path / "t", files={"train.jsonl": row})
    item = load_task(folder).split("train")[0]
    assert dict(item.input) == {"question": "q", "context": "c"}


def test_explicit_input_fields_drop_other_fields(tmp_path):
    toml = TOML.replace('answer_field = "expected"', 'answer_field = "expected"\ninput_fields = ["question"]')
    row = json.dumps({"id": "a", "question": "q", "secret": "rule-3", "expected": "x"}) + "\n"
    folder = make_task(tmp_path / "t", toml)
    (folder / "train.jsonl").write_text(row, encoding="utf-8")
    assert dict(load_task(folder).split("train")[0].input) == {"question": "q"}


def test_render_dict_fields_as_json_and_literal_braces(tmp_path):
    toml = TOML.replace('prompt = "Q: {question}"', 'prompt = "Data {{raw}}: {question}"')
    folder = make_task(tmp_path / "t", toml)
    (folder / "train.jsonl").write_text(json.dumps({"id": "d", "question": {"a": 1}, "expected": "1"}) + "\n")
    task = load_task(folder)
    assert task.render(task.split("train")[0]) == 'Data {raw}: {"a": 1}'


def test_custom_id_and_answer_fields_and_integer_ids(tmp_path):
    toml = TOML.replace('answer_field = "expected"', 'answer_field = "label"\nid_field = "key"')
    rows = "".join(json.dumps({"key": k, "question": "q", "label": "a"}) + "\n" for k in (1, 2))
    folder = make_task(tmp_path / "t", toml, files={"train.jsonl": rows, "selection.jsonl": rows.replace(": 1", ": 3").replace(": 2", ": 4"), "test.jsonl": rows.replace(": 1", ": 5").replace(": 2", ": 6")})
    task = load_task(folder)
    assert [i.id for i in task.split("train")] == ["1", "2"] and task.split("train")[0].expected == "a"


def test_evaluator_version_tracks_evaluator_and_prompt(tmp_path):
    a = load_task(make_task(tmp_path / "a")).evaluator_version
    assert a == load_task(make_task(tmp_path / "b")).evaluator_version
    assert a != load_task(make_task(tmp_path / "c", TOML.replace("Q: {question}", "Question: {question}"))).evaluator_version
    assert a != load_task(make_task(tmp_path / "d", TOML.replace('"normalized"', '"exact"'))).evaluator_version


def test_with_seed_skill(tmp_path):
    task = load_task(make_task(tmp_path / "mini"))
    other = task.with_seed_skill("# New")
    assert other.seed_skill == "# New" and task.seed_skill.startswith("# Mini")
    assert other.split("test") == task.split("test")


def test_unknown_split_name(tmp_path):
    with pytest.raises(TaskError, match="unknown split 'dev'"):
        load_task(make_task(tmp_path / "mini")).split("dev")


# ---------------------------------------------------------------- ratio split

RATIO_TOML = TOML.split("[splits]")[0] + '[splits]\nfile = "items.jsonl"\nratio = [2, 1, 7]\nseed = 5\n'


def test_ratio_split_is_deterministic_and_order_independent(tmp_path):
    rows = [json.dumps({"id": f"i{n:03d}", "question": f"q{n}", "expected": str(n)}) for n in range(100)]
    a = load_task(make_task(tmp_path / "a", RATIO_TOML, files={"items.jsonl": "\n".join(rows) + "\n"}))
    b = load_task(make_task(tmp_path / "b", RATIO_TOML, files={"items.jsonl": "\n".join(reversed(rows)) + "\n"}))
    assert [len(a.split(s)) for s in SPLITS] == [20, 10, 70]
    for name in SPLITS:
        assert {i.id for i in a.split(name)} == {i.id for i in b.split(name)}
        assert all(i.split == name for i in a.split(name))
    ids = [i.id for i in a.split("test")]
    assert ids == sorted(ids)  # file order kept inside a split
    c = load_task(make_task(tmp_path / "c", RATIO_TOML.replace("seed = 5", "seed = 6"), files={"items.jsonl": "\n".join(rows) + "\n"}))
    assert {i.id for i in c.split("selection")} != {i.id for i in a.split("selection")}


@pytest.mark.parametrize("ratio, problem", [
    ("[1, 1]", "three non-negative numbers"),
    ("[1, -1, 1]", "three non-negative numbers"),
    ("[0, 0, 0]", "three non-negative numbers"),
    ("[1, 0, 1]", "leaves split 'selection' empty"),
])
def test_bad_ratio(tmp_path, ratio, problem):
    folder = make_task(tmp_path / "r", RATIO_TOML.replace("[2, 1, 7]", ratio), files={"items.jsonl": lines("i", 10)})
    problems = validate_task(folder)
    assert len(problems) == 1 and problem in problems[0] and "task.toml:" in problems[0]


def test_first_results_keep_each_items_first_trajectory_unless_it_errored():
    def t(item_id: str, hard: float, error: str = "") -> Trajectory:
        return Trajectory(item_id, "p", "o", "x", Evaluation(hard, hard, ""), error=error)

    got = first_results([t("a", 0), t("b", 1, "timeout"), t("a", 1), t("b", 1), t("c", 1)])
    assert [(x.item_id, x.evaluation.hard) for x in got] == [("a", 0), ("c", 1)]  # b's first result errored

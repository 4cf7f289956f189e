"""Task loading, splits, rendering, rollouts, validate_task on broken folders, built-in tasks."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skillopt.tasks import task as task_module
from skillopt.errors import TaskError, UserError
from skillopt.tasks.loader import BUILTIN_DIR, list_tasks, load_task, resolve_task_path, validate_task
from skillopt.tasks.task import SPLITS, Evaluation, Item, Task, TaskProtocol, Trajectory, expected_text

BAD = Path(__file__).parents[1] / "fixtures" / "bad" / "tasks"
BUILTINS = ("ticket-routing", "invoice-extraction", "word-problems")

TOML = """\
name = "mini"
description = "A tiny arithmetic task."
prompt = "Q: {question}"
answer_field = "expected"

[evaluator]
type = "normalized"

[splits]
train = "train.jsonl"
selection = "selection.jsonl"
test = "test.jsonl"
"""


def lines(prefix: str, n: int = 3) -> str:
    return "".join(json.dumps({"id": f"{prefix}{i}", "question": f"{i}+{i}?", "expected": str(2 * i)}) + "\n"
                   for i in range(1, n + 1))


def make_task(folder: Path, toml: str = TOML, files: dict[str, str | bytes] | None = None) -> Path:
    """A valid mini task; `files` adds or replaces files by name."""
    folder.mkdir(parents=True, exist_ok=True)
    content = {"task.toml": toml, "train.jsonl": lines("t"), "selection.jsonl": lines("s"),
               "test.jsonl": lines("x"), "seed_skill.md": "# Mini\n\nAnswer the question.\n", **(files or {})}
    for name, value in content.items():
        path = folder / name
        if isinstance(value, bytes):
            path.write_bytes(value)
        else:
            path.write_text(value, encoding="utf-8")
    return folder


class Reply:
    def __init__(self, text: str = "", error: str = ""):
        self.text, self.error = text, error


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


# ---------------------------------------------------------------- broken fixtures

FIXTURES = {  # folder -> (file named in the first problem, words in it)
    "missing-task-toml": ("task.toml", "not found"),
    "missing-split-file": ("test.jsonl", "not found"),
    "bad-json-line": ("train.jsonl:3", "bad JSON"),
    "duplicate-ids": ("test.jsonl:1", "duplicate id 't1'"),
    "empty-split": ("selection.jsonl", "no items"),
    "latin1-encoded": ("train.jsonl:3", "not UTF-8"),
    "unknown-evaluator": ("task.toml:6", "unknown evaluator type 'fuzzy'"),
    "no-placeholder": ("task.toml:3", "no input placeholder"),
    "missing-answer-field": ("test.jsonl:3", "missing answer field 'expected'"),
    "bad-toml": ("task.toml:1", "bad TOML"),
    "missing-seed-skill": ("seed_skill.md", "not found"),
    "binary-seed-skill": ("seed_skill.md", "binary file"),
    "empty-seed-skill": ("seed_skill.md", "empty"),
    "plugin-not-found": ("task.toml:1", "plugin module 'no_such_plugin_module' not found"),
    "plugin-returns-wrong-object": ("task.toml:1", "lacks the TaskProtocol"),
    "ratio-leaves-split-empty": ("task.toml:11", "leaves split 'selection' empty"),
    "placeholder-missing-in-items": ("train.jsonl:1", "missing input field 'prompt_text'"),
    "choice-expected-not-a-label": ("train.jsonl:2", "not one of the labels"),
    "numeric-expected-not-a-number": ("selection.jsonl:3", "must be a number"),
    "unknown-toml-key": ("task.toml:5", "unknown key 'answer_feild'"),
    "split-path-escapes-folder": ("task.toml:10", "inside the task folder"),
    "line-not-an-object": ("train.jsonl:3", "must be a JSON object"),
    "bad-regex-pattern": ("task.toml:6", "not a valid regular expression"),
    "python-function-missing": ("task.toml:6", "no callable 'nope'"),
    "unknown-evaluator-option": ("task.toml:6", "no option 'label'"),
    "empty-id": ("test.jsonl:3", "empty id"),
    "no-splits-table": ("task.toml", "[splits] table"),
}


def test_fixture_folders_exist_and_every_folder_there_is_rejected():
    folders = sorted(p.name for p in BAD.iterdir() if p.is_dir())
    assert set(FIXTURES) <= set(folders) and len(FIXTURES) >= 15
    for name in folders:  # other suites add broken folders here too; all must be refused
        assert validate_task(BAD / name), name


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_validate_task_on_broken_fixture(name):
    file_part, words = FIXTURES[name]
    problems = validate_task(BAD / name)
    assert problems, name
    assert all(str(BAD / name) in p for p in problems)
    assert f"{BAD / name}/{file_part}" in problems[0] and words in problems[0], problems
    assert all("\n" not in p for p in problems)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_load_task_raises_the_first_problem_as_one_line(name):
    with pytest.raises(TaskError) as err:
        load_task(BAD / name)
    assert isinstance(err.value, UserError)
    assert str(err.value) == validate_task(BAD / name)[0]


def test_validate_reports_every_problem_not_just_the_first(tmp_path):
    bad_rows = '{"id": "t1", "question": "q", "expected": "1"}\n{oops\n{"id": "t1", "question": "q"}\n'
    folder = make_task(tmp_path / "many", "typo = 1\n" + TOML, files={"train.jsonl": bad_rows, "selection.jsonl": ""})
    (folder / "seed_skill.md").unlink()
    problems = validate_task(folder)
    assert len(problems) == 5, problems
    joined = "\n".join(problems)
    for words in ("unknown key 'typo'", "seed_skill.md: seed skill not found", "train.jsonl:2: bad JSON",
                  "train.jsonl:3: duplicate id 't1'", "selection.jsonl: split 'selection' has no items"):
        assert words in joined


def test_huge_line_is_rejected(tmp_path):
    big = json.dumps({"id": "big", "question": "x" * (task_module.MAX_LINE_BYTES + 10), "expected": "1"})
    folder = make_task(tmp_path / "huge", files={"train.jsonl": lines("t") + big + "\n"})
    problems = validate_task(folder)
    assert problems == [f"{folder}/train.jsonl:4: line is over 1 MB"]


def test_huge_file_is_rejected(tmp_path, monkeypatch):
    folder = make_task(tmp_path / "bigfile")
    monkeypatch.setattr(task_module, "MAX_FILE_BYTES", 600)
    (folder / "test.jsonl").write_text(lines("x", 20), encoding="utf-8")
    problems = validate_task(folder)
    assert len(problems) == 1 and "test.jsonl: file is" in problems[0] and "the limit is 600 bytes" in problems[0]


def test_seed_skill_gets_the_skill_checks(tmp_path):
    folder = make_task(tmp_path / "s", files={"seed_skill.md": "# S\n\n<!-- SLOW_UPDATE_START -->\nopen\n"})
    assert validate_task(folder) == [f"{folder}/seed_skill.md:3: <!-- SLOW_UPDATE_START --> is never closed by "
                                     "<!-- SLOW_UPDATE_END -->"]


def test_utf16_file_is_named_as_such(tmp_path):
    folder = make_task(tmp_path / "u", files={"test.jsonl": lines("x").encode("utf-16")})
    assert validate_task(folder) == [f"{folder}/test.jsonl:1: UTF-16 text; re-save the file as UTF-8"]


def test_utf8_bom_is_accepted(tmp_path):
    folder = make_task(tmp_path / "bom")
    (folder / "train.jsonl").write_bytes(b"\xef\xbb\xbf" + lines("t").encode())
    assert len(load_task(folder).split("train")) == 3


@pytest.mark.parametrize("prompt, problem", [
    ('"Q: {question.__class__}"', "plain field name"),
    ('"Q: {question"', "not valid str.format"),
    ('""', "non-empty 'prompt'"),
])
def test_bad_prompt_templates(tmp_path, prompt, problem):
    folder = make_task(tmp_path / "p", TOML.replace('"Q: {question}"', prompt))
    assert problem in validate_task(folder)[0]


def test_prompt_placeholder_must_be_an_input_field(tmp_path):
    toml = TOML.replace('answer_field = "expected"', 'answer_field = "expected"\ninput_fields = ["other"]')
    assert "{question} is not in input_fields" in validate_task(make_task(tmp_path / "p", toml))[0]


def test_validate_a_missing_folder(tmp_path):
    assert validate_task(tmp_path / "nope") == [f"{tmp_path / 'nope'}: not a folder"]


# ---------------------------------------------------------------- plug-ins

PLUGIN = """\
import dataclasses
from skillopt.tasks.task import Evaluation, Trajectory


@dataclasses.dataclass(frozen=True)
class TwoTurn:
    base: object

    def __getattr__(self, name):
        return getattr(self.base, name)

    def with_seed_skill(self, text):
        return TwoTurn(self.base.with_seed_skill(text))

    def rollout(self, item, skill, complete, judge=None):
        messages = self.base.messages(skill, item)
        draft = complete(messages).text
        final = complete(messages + [{"role": "assistant", "content": draft},
                                     {"role": "user", "content": "Check and answer again."}]).text
        return Trajectory(item.id, messages[1]["content"], final, str(item.expected),
                          self.base.evaluate(item, final))


def make(task):
    return TwoTurn(task)
"""


def test_plugin_from_the_task_folder_wraps_rollout(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "two_turn:make"\n' + TOML, files={"two_turn.py": PLUGIN})
    task = load_task(folder)
    assert isinstance(task, TaskProtocol) and type(task).__name__ == "TwoTurn"
    replies = iter(["3", "2"])
    calls = []

    def complete(messages):
        calls.append(messages)
        return Reply(next(replies))

    traj = task.rollout(task.split("train")[0], "skill", complete)
    assert len(calls) == 2 and calls[1][-1]["content"] == "Check and answer again."
    assert traj.output == "2" and traj.evaluation.hard == 1.0
    assert task.name == "mini" and len(task.split("test")) == 3


def test_plugin_factory_that_raises(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "boom:make"\n' + TOML, files={"boom.py": "def make(task):\n    raise RuntimeError('no tools')\n"})
    assert "raised RuntimeError: no tools" in validate_task(folder)[0]


def test_plugin_path_is_not_a_module_name(tmp_path):
    folder = make_task(tmp_path / "plug", 'plugin = "/tmp/evil.py:make"\n' + TOML)
    assert "must look like module:name" in validate_task(folder)[0]


def test_python_evaluator_from_the_task_folder(tmp_path):
    toml = TOML.replace('type = "normalized"', 'type = "python"\nfunction = "scoring:score"')
    folder = make_task(tmp_path / "py", toml, files={"scoring.py": textwrap.dedent("""\
        def score(item, output):
            ok = output.strip() == item.expected
            return (float(ok), float(ok), "ok" if ok else f"want {item.expected}")
        """)})
    task = load_task(folder)
    assert task.evaluate(task.split("test")[0], "2") == Evaluation(1.0, 1.0, "ok")
    assert task.evaluate(task.split("test")[0], "9").feedback == "want 2"


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

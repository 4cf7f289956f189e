"""Broken task folders: validate_task lists every problem as one "file:line: problem" line,
and load_task raises the first, so a user can fix a folder without reading a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt.tasks import task as task_module
from skillopt.errors import TaskError, UserError
from skillopt.tasks.loader import load_task, validate_task
from tests.helpers import TOML, lines, make_task

BAD = Path(__file__).parents[1] / "fixtures" / "bad" / "tasks"


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

"""Every evaluator, table-driven: (options, expected, output) -> hard, soft, words in feedback."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skillopt.errors import ScoringError, TaskError
from skillopt.models.jsonreply import first_json_object
from skillopt.tasks.answers import clean_output, find_numbers, normalize_text
from skillopt.tasks.evaluators import EVALUATORS, build_evaluator
from skillopt.tasks.task import Item


def item(expected, **inputs) -> Item:
    return Item("i1", inputs or {"q": "question"}, expected, "train")


CASES = [
    # (evaluator table, expected, output, hard, soft, words that must appear in the feedback)
    ({"type": "exact"}, "Paris", "Paris", 1, 1, ["correct"]),
    ({"type": "exact"}, "Paris", "paris.", 0, 0.5, ["exactly", "case"]),
    ({"type": "exact"}, "Paris", "Lyon", 0, 0, ['"Paris"', '"Lyon"']),
    ({"type": "exact"}, ["NYC", "New York"], "New York", 1, 1, []),
    ({"type": "normalized"}, "New York", "  new   york! ", 1, 1, []),
    ({"type": "normalized"}, "Zürich", "ZÜRICH", 1, 1, []),
    ({"type": "normalized"}, "New York", "Boston", 0, 0, ['"New York"', '"Boston"']),
    ({"type": "numeric"}, 42, "so it is 40 then 42", 1, 1, []),
    ({"type": "numeric"}, 42, "42 apples, minus 2 = 40", 0, 0, ["expected 42", "got 40"]),
    ({"type": "numeric"}, "1234.5", "total $1,234.50.", 1, 1, []),
    ({"type": "numeric"}, -3, "the result is \u22123", 1, 1, []),
    ({"type": "numeric"}, 42, "no digits here", 0, 0, ["no number", "42", 'ends "no digits here"']),
    ({"type": "numeric", "tolerance": 0.5}, 10, "10.4", 1, 1, []),
    ({"type": "numeric", "tolerance": 0.5}, 10, "10.6", 0, 0, ["expected 10"]),
    ({"type": "numeric", "tolerance": 0.1, "relative": True}, 100, "109", 1, 1, []),
    ({"type": "numeric", "tolerance": 0.1, "relative": True}, 100, "111", 0, 0, []),
    ({"type": "numeric", "marker": "Answer:"}, 7, "3+4=7\nAnswer: 7", 1, 1, []),
    ({"type": "numeric", "marker": "Answer:"}, 7, "Answer: 6 wait\nanswer: 7 sure, 9 apples", 1, 1, []),
    ({"type": "numeric", "marker": "Answer:"}, 7, "3+4 = 7", 0, 0.5, ["Answer: 7", "marker is missing"]),
    ({"type": "numeric", "marker": "Answer:"}, 7, "3+4 = 8", 0, 0, ["no 'Answer:' line", 'ends "3+4 = 8"']),
    ({"type": "numeric", "marker": "Answer:"}, 7, "Long working. " * 20 + "So 8.", 0, 0, ['working. So 8."']),
    ({"type": "numeric", "marker": "Answer:"}, 7, "Answer: seven", 0, 0, ["no number after"]),
    ({"type": "numeric", "marker": "Answer:"}, 7, "Answer: 8", 0, 0, ["expected 7", "got 8"]),
    ({"type": "numeric", "marker": "Answer:"}, 0.5, "**Final answer:** .5", 1, 1, []),
    ({"type": "numeric"}, "n/a", "5", 0, 0, ["is not a number"]),  # plug-in items skip the load check
    ({"type": "regex", "pattern": r"[A-Z]{3}-\d+"}, None, "ABC-12", 1, 1, []),
    ({"type": "regex", "pattern": r"[A-Z]{3}-\d+"}, None, "ABC-12 ok", 0, 0, ["must match", '"ABC-12 ok"']),
    ({"type": "regex", "pattern": r"Answer: {expected}\.?"}, "3.5", "Answer: 3.5.", 1, 1, []),
    ({"type": "regex", "pattern": r"Answer: {expected}"}, "3.5", "Answer: 3x5", 0, 0, []),
    ({"type": "regex", "pattern": "yes", "ignore_case": True}, None, "YES", 1, 1, []),
    ({"type": "choice", "labels": ["billing", "legal"]}, "legal", "Legal.", 1, 1, ["legal"]),
    ({"type": "choice", "labels": ["billing", "legal"]}, "legal", "Queue: legal", 1, 1, []),
    ({"type": "choice", "labels": ["billing", "legal"]}, "legal", "billing", 0, 0, ["chose 'billing'", "expected 'legal'"]),
    ({"type": "choice", "labels": ["billing", "legal"]}, "legal", "refunds", 0, 0, ["not a label", "billing, legal"]),
    ({"type": "choice", "labels": ["billing", "legal"]}, "legal", "legal or billing", 0, 0, ["several labels"]),
    ({"type": "choice", "labels": ["billing", "legal"], "lenient": False}, "legal", "Queue: legal", 0, 0, ["not a label"]),
    ({"type": "choice", "labels": ["in stock", "out of stock"]}, "out of stock", "out of stock", 1, 1, []),
    ({"type": "contains"}, "Berlin", "The capital is berlin.", 1, 1, []),
    ({"type": "contains", "ignore_case": False}, "Berlin", "the capital is berlin", 0, 0, ['"Berlin"']),
    ({"type": "contains"}, ["red", "blue", "green"], "red and blue", 0, 2 / 3, ['"green"']),
    ({"type": "json_fields", "fields": ["a", "b"]}, {"a": "1", "b": "x"}, 'Sure: {"a": "1", "b": "x"} done', 1, 1, []),
    ({"type": "json_fields", "fields": ["a", "b"]}, {"a": "1", "b": "x"}, '{"a": 1, "b": "x"}', 0, 0.5,
     ["1/2 fields", "a expected", "number, expected a string"]),
    ({"type": "json_fields", "fields": ["a", "b"]}, {"a": "1", "b": "x"}, '{"a": "1"}', 0, 0.5, ["missing: b"]),
    ({"type": "json_fields", "fields": ["a", "b"]}, {"a": "1", "b": "x"}, "no json {here", 0, 0, ["no JSON object"]),
    ({"type": "json_fields", "fields": ["a"], "ignore_case": True}, {"a": "ACME"}, '{"a": " acme "}', 1, 1, []),
    ({"type": "json_fields"}, {"n": 2.0, "ok": True}, '{"n": 2, "ok": true}', 1, 1, []),
    ({"type": "json_fields"}, {"ok": True}, '{"ok": 1}', 0, 0, ["ok expected true"]),
]


def test_a_scorer_says_whether_it_gives_partial_credit():
    # every case above with a soft score strictly between 0 and 1 comes from a scorer that says so
    for table, expected, output, hard, soft, _ in CASES:
        if 0 < soft < 1:
            assert build_evaluator(table).partial_credit, table
    says = {t: build_evaluator(table).partial_credit for t, table in [
        ("exact", {"type": "exact"}), ("normalized", {"type": "normalized"}), ("numeric", {"type": "numeric"}),
        ("marker", {"type": "numeric", "marker": "Answer:"}), ("regex", {"type": "regex", "pattern": "x"}),
        ("choice", {"type": "choice", "labels": ["a", "b"]}), ("contains", {"type": "contains"}),
        ("json", {"type": "json_fields"}), ("judge", {"type": "llm_judge", "rubric": "r"})]}
    assert says == {"exact": True, "normalized": False, "numeric": False, "marker": True, "regex": False,
                    "choice": False, "contains": True, "json": True, "judge": True}


@pytest.mark.parametrize("table, expected, output, hard, soft, words", CASES)
def test_evaluator_table(table, expected, output, hard, soft, words):
    result = build_evaluator(table).evaluate(item(expected), clean_output(output))
    assert (result.hard, round(result.soft, 6)) == (hard, round(soft, 6)), result.feedback
    for word in words:
        assert word in result.feedback, (word, result.feedback)


def test_registry_has_every_documented_type():
    assert set(EVALUATORS) == {"exact", "normalized", "numeric", "regex", "choice", "contains", "json_fields",
                               "python", "llm_judge"}


@pytest.mark.parametrize("text, cleaned", [
    ("  billing \n", "billing"),
    ("```json\n{\"a\": 1}\n```", "{\"a\": 1}"),
    ("```\nlegal\n```", "legal"),
    ("use ```code``` here", "use ```code``` here"),
])
def test_clean_output_strips_whitespace_and_one_fence(text, cleaned):
    assert clean_output(text) == cleaned


def test_helpers():
    assert normalize_text("  Hello,   WORLD! ") == "hello world"
    assert find_numbers("a 1,234.5 b -2 c 3") == [1234.5, -2.0, 3.0]
    assert first_json_object('x {bad} {"k": [1, {"n": 2}]} {"z": 1}') == {"k": [1, {"n": 2}]}
    assert first_json_object("[1, 2]") is None


@pytest.mark.parametrize("table, message", [
    ({"type": "nope"}, "unknown evaluator type 'nope'"),
    ({}, "needs a 'type'"),
    ({"type": "choice"}, "needs option 'labels'"),
    ({"type": "choice", "labels": ["only"]}, "at least two labels"),
    ({"type": "choice", "labels": ["A", "a."]}, "differ only in case"),
    ({"type": "choice", "labels": "a,b"}, "must be list"),
    ({"type": "numeric", "tolerance": -1}, "non-negative"),
    ({"type": "numeric", "tolerance": "big"}, "must be float"),
    ({"type": "numeric", "marker": True}, "must be str"),
    ({"type": "regex", "pattern": "(("}, "not a valid regular expression"),
    ({"type": "exact", "labels": ["a"]}, "has no option 'labels'"),
    ({"type": "llm_judge", "rubric": "  "}, "must not be empty"),
    ({"type": "llm_judge", "rubric": "r", "threshold": 2}, "between 0 and 1"),
    ({"type": "python", "function": "../evil:run"}, "module:name"),
    ({"type": "python", "function": "no_such_module_xyz:run"}, "not found"),
    ("fuzzy", "unknown evaluator type"),
    (["exact"], "must be a table"),
])
def test_bad_evaluator_config_is_a_task_error(table, message):
    with pytest.raises(TaskError, match=None) as err:
        build_evaluator(table)
    assert message in str(err.value)


@pytest.mark.parametrize("table, expected, problem", [
    ({"type": "choice", "labels": ["a", "b"]}, "c", "not one of the labels"),
    ({"type": "numeric"}, "many", "must be a number"),
    ({"type": "numeric"}, True, "must be a number"),
    ({"type": "json_fields", "fields": ["a"]}, {"b": 1}, "lacks field(s) a"),
    ({"type": "json_fields"}, "text", "must be a JSON object"),
    ({"type": "exact"}, {"a": 1}, "must be text"),
    ({"type": "contains"}, [], "at least one"),
])
def test_check_rejects_bad_expected_values(table, expected, problem):
    assert problem in build_evaluator(table).check(expected)


def test_check_accepts_good_expected_values():
    assert build_evaluator({"type": "numeric"}).check("3.5") == ""
    assert build_evaluator({"type": "choice", "labels": ["A", "B"]}).check("a") == ""
    assert build_evaluator({"type": "regex", "pattern": "x"}).needs_expected is False
    assert build_evaluator({"type": "llm_judge", "rubric": "r"}).needs_expected is False


def test_version_changes_with_options_and_not_with_nothing():
    a = build_evaluator({"type": "numeric", "tolerance": 0.1}).version
    assert a == build_evaluator({"type": "numeric", "tolerance": 0.1}).version
    assert a != build_evaluator({"type": "numeric", "tolerance": 0.2}).version
    assert a != build_evaluator({"type": "numeric", "tolerance": 0.1, "marker": "Answer:"}).version


# ---------------------------------------------------------------- python functions

def write_module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


@pytest.mark.parametrize("body, hard, soft, feedback", [
    ("def f(item, output):\n    return (1, 0.7, 'fine')\n", 1.0, 0.7, "fine"),
    ("def f(item, output):\n    return 0.25\n", 0.0, 0.25, "score 0.25"),
    ("def f(item, output):\n    return 1.0\n", 1.0, 1.0, "score 1"),
    ("from skillopt.tasks.task import Evaluation\ndef f(item, output):\n    return Evaluation(0.0, 0.4, 'half')\n",
     0.0, 0.4, "half"),
    ("def f(item, output):\n    return (1, 3.0, 'clamped')\n", 1.0, 1.0, "clamped"),
    ("def f(item, output):\n    raise ValueError('bad output')\n", 0.0, 0.0, "raised ValueError: bad output"),
    ("def f(item, output):\n    return float(output == item.expected)\n", 1.0, 1.0, "score 1"),
])
def test_python_function_results(tmp_path, body, hard, soft, feedback):
    write_module(tmp_path, "scorer_a", body)
    evaluator = build_evaluator({"type": "python", "function": "scorer_a:f"}, tmp_path)
    result = evaluator.evaluate(item("ok"), "ok")
    assert (result.hard, result.soft) == (hard, soft)
    assert feedback in result.feedback


def test_python_shorthand_type_and_source_in_version(tmp_path):
    write_module(tmp_path, "scorer_b", "def f(item, output):\n    return 1.0\n")
    first = build_evaluator({"type": "python:scorer_b:f"}, tmp_path)
    assert first.evaluate(item("x"), "y").hard == 1.0
    write_module(tmp_path, "scorer_b", "def f(item, output):\n    return 0.0  # edited\n")
    second = build_evaluator({"type": "python:scorer_b:f"}, tmp_path)
    assert second.version != first.version  # an edited scorer must not reuse cached scores
    assert second.evaluate(item("x"), "y").hard == 0.0


def test_python_bad_return_type_is_a_task_error(tmp_path):
    write_module(tmp_path, "scorer_c", "def f(item, output):\n    return 'yes'\n")
    evaluator = build_evaluator({"type": "python", "function": "scorer_c:f"}, tmp_path)
    with pytest.raises(TaskError, match="returned str"):
        evaluator.evaluate(item("x"), "y")


def test_python_module_is_not_searched_outside_the_named_folder(tmp_path):
    (tmp_path / "sub").mkdir()
    write_module(tmp_path, "scorer_outside", "def f(item, output):\n    return 1.0\n")
    with pytest.raises(TaskError, match="not found"):
        build_evaluator({"type": "python", "function": "scorer_outside:f"}, tmp_path / "sub")


def test_python_importable_module_by_name():
    evaluator = build_evaluator({"type": "python", "function": "math:isfinite"})
    assert evaluator.evaluate(item(None), "ignored").feedback  # isfinite(item, output) raises TypeError
    assert evaluator.evaluate(item(None), "x").hard == 0.0


# ---------------------------------------------------------------- llm judge

class FakeReply:
    def __init__(self, text: str, error: str = ""):
        self.text, self.error = text, error


@pytest.mark.parametrize("reply, hard, soft, feedback", [
    ('{"score": 0.9, "feedback": "good"}', 1.0, 0.9, "good"),
    ('Here: {"score": 0.3, "feedback": "misses the date"}', 0.0, 0.3, "misses the date"),
    ('{"score": 1}', 1.0, 1.0, "no feedback given"),
])
def test_llm_judge_replies(reply, hard, soft, feedback):
    seen = []

    def judge(messages):
        seen.append(messages)
        return FakeReply(reply)

    evaluator = build_evaluator({"type": "llm_judge", "rubric": "Be polite.", "threshold": 0.5})
    result = evaluator.evaluate(item("Thank you", q="Say thanks"), "thanks!", judge)
    assert (result.hard, result.soft) == (hard, soft)
    assert feedback in result.feedback
    prompt = seen[0][1]["content"]
    assert "Be polite." in prompt and "Say thanks" in prompt and "Thank you" in prompt and "thanks!" in prompt
    assert seen[0][0]["role"] == "system" and "JSON" in seen[0][0]["content"]


@pytest.mark.parametrize("reply", ["I think it is fine", '{"score": "high"}', '{"score": 7, "feedback": "x"}',
                                   '{"score": true}', ""])
def test_an_unusable_judge_reply_is_a_scoring_error_not_a_zero(reply):
    evaluator = build_evaluator({"type": "llm_judge", "rubric": "Be polite.", "threshold": 0.5})
    with pytest.raises(ScoringError, match="judge reply unusable"):
        evaluator.evaluate(item("Thank you", q="Say thanks"), "thanks!", lambda messages: FakeReply(reply))


def test_llm_judge_call_error_and_missing_judge():
    evaluator = build_evaluator({"type": "llm_judge", "rubric": "r"})
    with pytest.raises(ScoringError, match="judge call failed: timeout after 4 retries"):
        evaluator.evaluate(item("x"), "y", lambda messages: FakeReply("", "timeout after 4 retries"))
    with pytest.raises(TaskError, match="needs a judge model"):
        evaluator.evaluate(item("x"), "y", None)


@pytest.mark.parametrize("output,scores", [
    ('{"a": "1", "b": "x"}', {"a": 1.0, "b": 1.0}),
    ('{"a": 1, "b": "x"}', {"a": 0.0, "b": 1.0}),  # a number where a string was expected: wrong
    ('{"b": "x"}', {"a": 0.0, "b": 1.0}),  # missing: wrong
    ("no json {here", {"a": 0.0, "b": 0.0}),
])
def test_json_fields_scores_each_field_as_its_evaluation_counts_it(output, scores):
    scorer = build_evaluator({"type": "json_fields", "fields": ["a", "b"]})
    item = Item("i", {}, {"a": "1", "b": "x"}, "test")
    assert scorer.field_scores(item, output) == scores
    assert scorer.evaluate(item, output).soft == sum(scores.values()) / 2  # the same fields, the same verdicts


def test_only_a_field_by_field_scorer_has_field_scores():
    assert not hasattr(build_evaluator({"type": "choice", "labels": ["a", "b"]}), "field_scores")

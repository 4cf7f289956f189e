"""Reply templates: each scorer writes the layout of a reply it accepts, and the reply filled in
from that layout scores as right (a template that its own scorer rejected would teach a wrong form)."""
from __future__ import annotations

import json

from skillopt.tasks.evaluators import build_evaluator
from skillopt.tasks.replies import reply_template
from skillopt.tasks.task import Item


def item(expected) -> Item:
    return Item(id="i", input={"q": "?"}, expected=expected, split="train")


def test_a_numeric_scorer_with_a_marker_shows_the_marker_line_last():
    scorer = build_evaluator({"type": "numeric", "marker": "Answer:"})
    layout = reply_template(scorer)
    assert layout == "<working: a few short lines>\nAnswer: <number>"
    filled = layout.replace("<working: a few short lines>", "2 + 3 = 5").replace("<number>", "5")
    assert scorer.evaluate(item(5), filled).hard == 1.0
    assert reply_template(build_evaluator({"type": "numeric"})).endswith("<the final number, last>")


def test_a_choice_scorer_lists_its_labels_and_a_json_scorer_its_fields():
    choice = build_evaluator({"type": "choice", "labels": ["billing", "legal"]})
    assert reply_template(choice) == "<exactly one of: billing | legal>"
    many = build_evaluator({"type": "choice", "labels": [f"label-number-{i:03d}" for i in range(40)]})
    assert reply_template(many) == "<exactly one label>"  # a long list would drown the skill
    fields = build_evaluator({"type": "json_fields", "fields": ["vendor", "total"]})
    layout = reply_template(fields)
    assert layout == '{"vendor": <vendor>, "total": <total>}'
    filled = layout.replace("<vendor>", json.dumps("ACME")).replace("<total>", json.dumps("12.50"))
    assert fields.evaluate(item({"vendor": "ACME", "total": "12.50"}), filled).hard == 1.0
    assert reply_template(build_evaluator({"type": "json_fields"})) == ""  # fields unknown: no layout


def test_scorers_whose_replies_have_no_fixed_layout_have_no_template():
    assert reply_template(build_evaluator({"type": "contains"})) == ""
    assert reply_template(build_evaluator({"type": "regex", "pattern": "[0-9]+"})) == ""
    assert reply_template(build_evaluator({"type": "llm_judge", "rubric": "polite"})) == ""
    assert reply_template(build_evaluator({"type": "exact"})).startswith("<the answer alone")
    assert reply_template(object()) == ""  # a plug-in's own scorer

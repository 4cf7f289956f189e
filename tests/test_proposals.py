"""Parsing an optimizer's reply: line numbers become exact anchors; bad edits are dropped
with their reason, never cut or guessed."""
from __future__ import annotations

import pytest

from skillopt.patch import Edit, apply_edits
from skillopt.proposals import CONTENT_CHARS, parse_edits

from tests.helpers import ROUTING_SKILL as SKILL


def test_line_numbers_become_exact_targets_that_patch_can_apply():
    reply = {"summary": "z codes", "edits": [
        {"op": "replace", "line": 7, "content": "- Default route: standard.", "section": "", "rationale": "r"},
        {"op": "add", "line": 3, "content": "- Z codes: freight.", "section": "", "rationale": ""},
        {"op": "add", "line": 0, "content": "- Alaska: air.", "section": "House rules", "rationale": ""},
        {"op": "delete", "line": 11, "content": "ignored", "section": "", "rationale": ""}]}
    parsed = parse_edits(reply, SKILL, "failure", 6)
    replace, add_after, add_section, delete = parsed.edits
    assert replace.target == "- When nothing special applies, the route is standard."
    assert add_after.target == "Route each order." and add_section == Edit(
        "add", content="- Alaska: air.", section="House rules", source="failure")
    assert delete.target == "Reply with the route only." and delete.content == ""
    # An edit chosen by line number keeps that number: patch applies it at that very line.
    assert (replace.line, add_after.line, add_section.line, delete.line) == (7, 3, 0, 11)
    result = apply_edits(SKILL, parsed.edits)
    assert [r.status for r in result.reports] == ["applied"] * 4


def test_an_edit_by_line_number_applies_at_that_line_even_when_its_text_repeats():
    skill = "# Routing\n\n- Check the address.\n- Hazardous goods: freight.\n- Check the address.\n"
    reply = {"summary": "", "edits": [{"op": "replace", "line": 5, "content": "- Check the address twice.",
                                       "section": "", "rationale": ""}]}
    (edit,) = parse_edits(reply, skill, "failure", 3).edits
    assert (edit.line, edit.target) == (5, "- Check the address.")
    result = apply_edits(skill, [edit])
    assert result.reports[0].status == "applied"
    assert result.text == "# Routing\n\n- Check the address.\n- Hazardous goods: freight.\n- Check the address twice.\n"


@pytest.mark.parametrize("edit, reason, detail", [
    ({"op": "replace", "line": 40, "content": "x"}, "bad_anchor", "line 40 does not exist"),
    ({"op": "replace", "line": 2, "content": "x"}, "bad_anchor", "line 2 is blank"),
    ({"op": "replace", "line": 0, "content": "x"}, "bad_anchor", "needs the number of the line"),
    ({"op": "add", "line": 0, "content": "x", "section": "Routing Rules"}, "bad_anchor",
     'section "Routing Rules" does not exist'),
    ({"op": "add", "line": 0, "content": "- If <the clue>, answer air."}, "template_slot", "placeholder (<the clue>)"),
    ({"op": "rewrite", "line": 1, "content": "x"}, "malformed", "op must be one of"),
    ({"op": "add", "line": 0, "content": "  "}, "malformed", "without content"),
    ({"op": "add", "line": "three", "content": "x"}, "malformed", "'line' a line number"),
    ({"op": "add", "line": 0, "content": "The skill should,"}, "malformed", 'ends mid-sentence (on ",")'),
    ({"op": "replace", "line": 7, "content": "- Hazardous goods go by:"}, "malformed", 'on ":"'),
    ({"op": "add", "line": 0, "content": "- Alaska: air (unless"}, "malformed", "cut-off fragment"),
    ({"op": "add", "line": 0, "content": "- Alaska goes by air \u2014 "}, "malformed", "mid-sentence"),
])
def test_bad_single_edits_are_dropped_with_a_reason(edit, reason, detail):
    parsed = parse_edits({"summary": "", "edits": [edit, {"op": "add", "content": "- ok."}]}, SKILL, "success", 5)
    assert [e.content for e in parsed.edits] == ["- ok."] and parsed.edits[0].source == "success"
    (dropped,) = parsed.dropped
    assert dropped.reason == reason and detail in dropped.detail
    assert dropped.edit.op == edit["op"] and dropped.edit.content == edit["content"].strip()  # what was proposed
    assert str(dropped) == f"{reason}: {dropped.detail}"  # how the model call's record lists it


def test_a_whole_rule_with_inner_marks_is_not_a_fragment():
    rules = ["- Alaska: air.", "- Hazardous goods (fuel, paint) go by freight", "- Z codes - freight", "Use `a,b`"]
    parsed = parse_edits({"summary": "", "edits": [{"op": "add", "content": r} for r in rules]}, SKILL, "failure", 5)
    assert [e.content for e in parsed.edits] == rules and parsed.dropped == ()


def test_an_edit_longer_than_allowed_is_dropped_whole_never_cut():
    rule = "- " + "Hazardous goods go by freight. " * 30
    parsed = parse_edits({"summary": "", "edits": [{"op": "add", "line": 0, "content": rule}]}, SKILL, "failure", 3)
    assert parsed.edits == ()
    (dropped,) = parsed.dropped
    assert dropped.reason == "too_long" and dropped.edit.content == rule.strip()  # kept whole for the record
    assert dropped.detail == f"content of {len(rule.strip())} characters exceeds {CONTENT_CHARS}"


def test_a_runaway_list_cut_off_at_the_reply_limit_is_too_long_not_malformed():
    # what a reply cut at its token limit looks like: a word list stopped at a comma
    runaway = "- Route these products to technical: " + ", ".join(f"'Lumen Hub {i}'" for i in range(60)) + ", 'Lumen,"
    parsed = parse_edits({"summary": "", "edits": [{"op": "add", "content": runaway}]}, SKILL, "failure", 3)
    (dropped,) = parsed.dropped
    assert dropped.reason == "too_long"


def test_edits_over_the_cap_are_dropped():
    parsed = parse_edits({"summary": "", "edits": [{"op": "add", "content": f"- r{i}."} for i in range(5)]},
                         SKILL, "failure", 3)
    assert len(parsed.edits) == 3
    assert [(d.reason, d.edit.content) for d in parsed.dropped] == [("over_cap", "- r3."), ("over_cap", "- r4.")]


@pytest.mark.parametrize("obj", [[], {"summary": "x"}, {"edits": "none"}, "text"])
def test_a_reply_of_the_wrong_shape_is_a_validation_error(obj):
    with pytest.raises(ValueError):
        parse_edits(obj, SKILL, "failure", 3)


def test_an_edit_that_copies_the_prompts_wording_back_is_dropped_as_an_echo_with_its_text():
    shared = "Extract the vendor, invoice_date, total, and currency from this invoice."
    reply = {"summary": "", "edits": [
        {"op": "add", "line": 0, "content": shared},
        {"op": "add", "line": 0, "content": "- Write every date as YYYY-MM-DD, whatever form the invoice uses."}]}
    parsed = parse_edits(reply, SKILL, "failure", 4, instructions=f"Rules for edits:\n\n{shared}")
    assert [e.content for e in parsed.edits] == ["- Write every date as YYYY-MM-DD, whatever form the invoice uses."]
    (dropped,) = parsed.dropped
    assert dropped.reason == "echo" and dropped.edit.content == shared and "copied back" in dropped.detail
    # without the prompt's wording to compare with, nothing is an echo
    assert len(parse_edits(reply, SKILL, "failure", 4).edits) == 2

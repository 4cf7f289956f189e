import dataclasses
import random

import pytest

from skillopt import skill as sk
from skillopt.vocabulary import EDIT_STATUSES as STATUSES
from skillopt.anchor import Anchor, find_anchor
from skillopt.patch import OPS, SOURCES, Edit, EditReport, PatchResult, apply_edit, apply_edits, unified_diff

S, E = sk.SLOW_START, sk.SLOW_END

DOC = f"""# Skill

Intro line.

## Rules
- Use ISO dates.
- Answer briefly.

### Dates
- Months are 1-based.

## Output
Return JSON only.

{S}
- Guidance: answer briefly and use ISO dates.
{E}
"""


def test_contract_names_unchanged():
    assert OPS == ("add", "replace", "delete")
    assert SOURCES == ("failure", "success", "human", "slow_update", "example", "template", "rule", "ablation")
    assert STATUSES == ("applied", "anchor_not_found", "ambiguous_anchor", "protected", "duplicate", "noop")
    edit = Edit("add")
    assert (edit.target, edit.content, edit.section, edit.source, edit.support, edit.line) == (
        "", "", "", "failure", 1, 0)
    result = PatchResult("t", (EditReport(edit, "applied"), EditReport(Edit("delete"), "noop")), "")
    assert result.applied == (edit,)


# (document, edit, status, text expected afterwards — None when the text must be unchanged)
CASES = [
    # --- add into a section: end of its own body, before a subsection
    ("# A\n## R\n- a\n### D\n- d\n", Edit("add", content="- b", section="R"), "applied",
     "# A\n## R\n- a\n- b\n### D\n- d\n"),
    # --- add into a section by a suffix of its path, at the end of the document
    ("# A\n## R\n- a\n### D\n- d\n", Edit("add", content="- e", section="r > d"), "applied",
     "# A\n## R\n- a\n### D\n- d\n- e\n"),
    # --- add paragraph after a paragraph: separated by a blank line
    ("# A\nSome text.\n\n# B\n", Edit("add", content="More text.", section="A"), "applied",
     "# A\nSome text.\n\nMore text.\n\n# B\n"),
    # --- add into an empty section goes right under its heading
    ("# A\n\n# B\nx\n", Edit("add", content="- new", section="A"), "applied", "# A\n- new\n\n# B\nx\n"),
    # --- add after a target: after the line holding it
    ("- one\n- two\n- three\n", Edit("add", content="- two and a half", target="two"), "applied",
     "- one\n- two\n- two and a half\n- three\n"),
    # --- add at end of body: before the protected block
    (f"# A\n- a\n\n{S}\ng\n{E}\n", Edit("add", content="- b"), "applied", f"# A\n- a\n- b\n\n{S}\ng\n{E}\n"),
    # --- add at end of body: no final newline
    ("# A\n- a", Edit("add", content="- b"), "applied", "# A\n- a\n- b\n"),
    # --- add to an empty document
    ("", Edit("add", content="- only"), "applied", "- only\n"),
    # --- CRLF documents get CRLF lines
    ("# A\r\n- a\r\n", Edit("add", content="- b\n- c", section="A"), "applied", "# A\r\n- a\r\n- b\r\n- c\r\n"),
    # --- section missing, no target: never a silent append
    ("# A\n- a\n", Edit("add", content="- b", section="Nope"), "anchor_not_found", None),
    # --- section missing, target given: the target is used
    ("# A\n- a\n- z\n", Edit("add", content="- b", section="Nope", target="- a"), "applied", "# A\n- a\n- b\n- z\n"),
    # --- ambiguous section
    ("# A\n## N\nx\n# B\n## N\ny\n", Edit("add", content="z", section="N"), "ambiguous_anchor", None),
    # --- add after a missing target
    ("# A\n- a\n", Edit("add", content="- b", target="nowhere to be found"), "anchor_not_found", None),
    # --- duplicate add: same content modulo case, whitespace and bullet
    ("# A\n- Use ISO dates.\n", Edit("add", content="*   use iso   DATES."), "duplicate", None),
    # --- empty add content
    ("# A\n", Edit("add", content="  \n"), "noop", None),
    # --- replace: exact
    ("- a cat\n- a dog\n", Edit("replace", target="a dog", content="a wolf"), "applied", "- a cat\n- a wolf\n"),
    # --- replace: whitespace-insensitive, maps back to the original span
    ("- use   ISO\n  dates always\n", Edit("replace", target="use ISO dates", content="use RFC dates"), "applied",
     "- use RFC dates always\n"),
    # --- replace: fuzzy, whole lines
    ("# A\n- Always answer with the final number only.\n- Be kind.\n",
     Edit("replace", target="- Always answer with the finel number onyl.", content="- Answer with the number."),
     "applied", "# A\n- Answer with the number.\n- Be kind.\n"),
    # --- replace: several exact matches
    ("- x\n- x\n", Edit("replace", target="x", content="y"), "ambiguous_anchor", None),
    # --- replace: no match at all
    ("- x\n", Edit("replace", target="completely different sentence here", content="y"), "anchor_not_found", None),
    # --- replace where content == target
    ("- x\n", Edit("replace", target="x", content=" x "), "noop", None),
    # --- replace with empty target
    ("- x\n", Edit("replace", target="", content="y"), "noop", None),
    # --- delete a whole bullet line
    ("- a\n- b\n- c\n", Edit("delete", target="b"), "applied", "- a\n- c\n"),
    # --- delete part of a line
    ("- keep this, drop that\n", Edit("delete", target=", drop that"), "applied", "- keep this\n"),
    # --- delete a paragraph between blank lines takes one blank line with it
    ("# A\n\nIntro.\n\n## B\n", Edit("delete", target="Intro."), "applied", "# A\n\n## B\n"),
    # --- delete with a missing target
    ("- a\n", Edit("delete", target="zzz qqq www"), "anchor_not_found", None),
    # --- unknown op: reported, never raised
    ("- a\n", Edit("rewrite", target="a", content="b"), "noop", None),
    # --- protected: target only inside the block
    (f"- a\n{S}\nsecret rule\n{E}\n", Edit("replace", target="secret rule", content="x"), "protected", None),
    (f"- a\n{S}\nsecret rule\n{E}\n", Edit("delete", target="secret rule"), "protected", None),
    # --- protected: the change would cross into the block
    (f"- a\n{S}\ng\n{E}\n", Edit("delete", target=f"- a\n{S}"), "protected", None),
    # --- protected: content carrying markers
    ("- a\n", Edit("add", content=f"{S}\nsneaky\n{E}"), "protected", None),
    # --- protected: add after a target inside the block
    (f"- a\n{S}\ng1\ng2\n{E}\n", Edit("add", content="x", target="g1"), "protected", None),
    # --- protected: add into a section whose heading is inside the block
    (f"# A\n{S}\n## G\ng\n{E}\n", Edit("add", content="x", section="G"), "protected", None),
    # --- a match outside the block wins over the copy inside it
    (f"- answer briefly\n{S}\n- answer briefly\n{E}\n",
     Edit("replace", target="answer briefly", content="answer in one line"), "applied",
     f"- answer in one line\n{S}\n- answer briefly\n{E}\n"),
    # --- an add into the last section stops before the protected block inside it
    (f"# A\n- a\n{S}\ng\n{E}\n", Edit("add", content="- b", section="A"), "applied", f"# A\n- a\n- b\n{S}\ng\n{E}\n"),
]


@pytest.mark.parametrize("doc, edit, status, expected", CASES)
def test_apply_edit_table(doc, edit, status, expected):
    result = apply_edits(doc, [edit])
    (report,) = result.reports
    assert report.status == status, report.detail
    assert report.edit == edit
    assert result.text == (doc if expected is None else expected)
    assert (result.diff == "") == (expected is None)


def test_allow_protected_lets_the_slow_update_edit_its_block():
    doc = f"- a\n{S}\nold guidance\n{E}\n"
    edit = Edit("replace", target="old guidance", content="new guidance", source="slow_update")
    assert apply_edits(doc, [edit]).reports[0].status == "protected"
    result = apply_edits(doc, [edit], allow_protected=True)
    assert result.reports[0].status == "applied"
    assert result.text == f"- a\n{S}\nnew guidance\n{E}\n"


def test_edits_apply_in_order_each_to_the_previous_result():
    edits = [
        Edit("add", content="- Weeks start on Monday.", section="Dates"),
        Edit("replace", target="Weeks start on Monday.", content="Weeks start on Sunday."),
        Edit("delete", target="Intro line."),
        Edit("add", content="- Weeks start on Sunday."),  # now a duplicate
    ]
    result = apply_edits(DOC, edits)
    assert [r.status for r in result.reports] == ["applied", "applied", "applied", "duplicate"]
    assert "- Months are 1-based.\n- Weeks start on Sunday.\n" in result.text
    assert "Intro line." not in result.text
    assert result.applied == tuple(edits[:3])
    assert sk.guidance(result.text) == sk.guidance(DOC)
    sk.validate(result.text)


def test_reports_detail_names_the_anchoring_method():
    cases = [
        (Edit("replace", target="Return JSON only.", content="Return JSON."), "exact"),
        (Edit("replace", target="Return   JSON\nonly.", content="Return JSON."), "whitespace"),
        (Edit("replace", target="Return JSN only!", content="Return JSON."), "fuzzy"),
    ]
    for edit, word in cases:
        report = apply_edits(DOC, [edit]).reports[0]
        assert report.status == "applied" and word in report.detail


@pytest.mark.parametrize("doc, target, status", [
    ("alpha beta gamma", "beta", "applied"),
    ("alpha beta beta", "beta", "ambiguous_anchor"),
    ("alpha  beta\n gamma", "beta gamma", "applied"),
    ("x a b y a  b", "a b", "applied"),  # one exact + one whitespace-only match: the exact one wins
    ("x a  b y a   b", "a b", "ambiguous_anchor"),  # two whitespace-insensitive matches
    ("- the first rule is long enough\n- the first rule is long enuogh\n", "- the first rule is long enough!",
     "ambiguous_anchor"),  # two near-equal fuzzy windows: refuse to guess
    ("- something unrelated\n", "- the answer must be a number", "anchor_not_found"),
    ("anything", "   ", "noop"),
])
def test_find_anchor(doc, target, status):
    anchor = find_anchor(doc, target)
    assert isinstance(anchor, Anchor)
    assert anchor.status == status, anchor.detail
    if anchor.found:
        assert " ".join(doc[anchor.start:anchor.end].split()) == " ".join(target.split())


def test_exact_stage_prefers_exact_over_whitespace():
    anchor = find_anchor("x a b y a  b", "a  b")
    assert anchor.found and (anchor.start, anchor.end) == (8, 12)


def test_fuzzy_threshold_is_respected():
    doc = "- Always answer with the final number only.\n"
    target = "- Always reply using the last number only."
    assert find_anchor(doc, target, threshold=0.99).status == "anchor_not_found"
    assert find_anchor(doc, target, threshold=0.6).found


def test_fuzzy_anchor_inside_protected_block_is_protected():
    doc = f"- unrelated body text here\n{S}\n- prefer the final number only\n{E}\n"
    anchor = find_anchor(doc, "- prefer the finel number only")
    assert anchor.status == "protected"


def test_apply_is_deterministic_and_pure():
    edits = [Edit("add", content=f"- rule {i}", section=random.Random(i).choice(["Rules", "Dates", "Output"]))
             for i in range(6)]
    first = apply_edits(DOC, edits)
    second = apply_edits(DOC, list(edits))
    assert first == second
    assert all(r.status == "applied" for r in first.reports)
    assert [line for line in first.text.splitlines() if line.startswith("- rule")] == [
        f"- rule {i}" for i in (1, 2, 3, 4, 0, 5)]  # Rules: 1-4, Dates: 0, Output: 5


def test_apply_edit_single_matches_apply_edits():
    edit = Edit("delete", target="- Answer briefly.")
    text, report = apply_edit(DOC, edit)
    assert report.status == "applied"
    assert text == apply_edits(DOC, [edit]).text
    assert "Answer briefly." not in text.split(S)[0]


# --- edits chosen by line number: anchored at that line, never by searching for its text

DUPLICATES = "# R\n- Use ISO dates.\n- Answer briefly.\n- Use ISO dates.\n"
PREFIXES = "# R\n- Use ISO dates\n- Use ISO dates in titles too.\n"


@pytest.mark.parametrize("doc, edit, expected", [
    (DUPLICATES, Edit("replace", target="- Use ISO dates.", content="- Use RFC dates.", line=4),
     "# R\n- Use ISO dates.\n- Answer briefly.\n- Use RFC dates.\n"),
    (DUPLICATES, Edit("delete", target="- Use ISO dates.", line=2), "# R\n- Answer briefly.\n- Use ISO dates.\n"),
    (DUPLICATES, Edit("add", target="- Use ISO dates.", content="- Weeks start on Monday.", line=2),
     "# R\n- Use ISO dates.\n- Weeks start on Monday.\n- Answer briefly.\n- Use ISO dates.\n"),
    (PREFIXES, Edit("replace", target="- Use ISO dates", content="- Use RFC dates.", line=2),
     "# R\n- Use RFC dates.\n- Use ISO dates in titles too.\n"),
    (PREFIXES, Edit("delete", target="- Use ISO dates", line=2), "# R\n- Use ISO dates in titles too.\n"),
])
def test_an_edit_by_line_applies_at_its_line_among_duplicates_and_shared_prefixes(doc, edit, expected):
    by_text = apply_edits(doc, [dataclasses.replace(edit, line=0)]).reports[0]
    assert by_text.status == "ambiguous_anchor"  # the same edit found by its text has no unique anchor
    result = apply_edits(doc, [edit])
    assert result.reports[0].status == "applied" and f"line {edit.line}" in result.reports[0].detail
    assert result.text == expected
    assert apply_edit(doc, edit) == (expected, result.reports[0])


def test_an_edit_by_line_follows_its_line_through_the_edits_before_it():
    edits = [Edit("add", target="# R", content="- One.\n- Two.", line=1),  # two lines above line 4
             Edit("replace", target="- Use ISO dates.", content="- Use RFC dates.", line=4),
             Edit("delete", target="- Answer briefly.", line=3),
             Edit("replace", target="- Use RFC dates.", content="- x", line=4)]  # line 4 was changed above
    result = apply_edits(DUPLICATES, edits)
    assert [r.status for r in result.reports] == ["applied", "applied", "applied", "anchor_not_found"]
    assert result.reports[1].detail == "line 4 (now line 6)"
    assert "changed by an earlier edit" in result.reports[3].detail
    assert result.text == "# R\n- One.\n- Two.\n- Use ISO dates.\n- Use RFC dates.\n"


@pytest.mark.parametrize("edit, status, detail", [
    (Edit("replace", target="- Answer in one word.", content="- x", line=3), "anchor_not_found", "now reads"),
    (Edit("replace", target="- Use ISO dates.", content="- x", line=9), "anchor_not_found", "past the end"),
    (Edit("delete", target="g", line=6), "protected", "protected block"),
])
def test_an_edit_by_line_whose_line_changed_is_not_searched_for(edit, status, detail):
    doc = DUPLICATES + f"{S}\ng\n{E}\n"
    result = apply_edits(doc, [edit])
    assert result.reports[0].status == status and detail in result.reports[0].detail
    assert result.text == doc


def test_random_edits_by_line_land_where_a_line_model_says():
    """Against a model that keeps each original line's identity: with duplicate lines,
    shifting adds and deletes, every edit by line lands on its own line or is reported."""
    rng = random.Random(11)
    for _ in range(300):
        texts = [rng.choice(["- a", "- b", "- a b"]) for _ in range(rng.randint(1, 6))]
        model = list(enumerate(texts))  # (original index, or None for a new line; text)
        edits, statuses = [], []
        for k in range(rng.randint(1, 4)):
            n, op = rng.randint(1, len(texts) + 1), rng.choice(OPS)
            new = f"- new {k}"
            edits.append(Edit(op, target=texts[n - 1] if n <= len(texts) else "- a",
                              content="" if op == "delete" else new, line=n))
            at = next((j for j, (o, _) in enumerate(model) if o == n - 1), None)
            statuses.append("anchor_not_found" if at is None else "applied")
            if at is not None and op == "replace":
                model[at] = (None, new)
            elif at is not None and op == "delete":
                del model[at]
            elif at is not None:
                model.insert(at + 1, (None, new))
        result = apply_edits("".join(t + "\n" for t in texts), edits)
        assert [r.status for r in result.reports] == statuses, [r.detail for r in result.reports]
        assert result.text == "".join(t + "\n" for _, t in model)


@pytest.mark.parametrize("old, new, expected", [
    ("a\n", "a\n", ""),
    ("a\nb\n", "a\nc\n", "--- before\n+++ after\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"),
    ("a", "b", "--- before\n+++ after\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n"
               "+b\n\\ No newline at end of file\n"),
])
def test_unified_diff(old, new, expected):
    assert unified_diff(old, new) == expected


def test_unified_diff_names_and_patch_result_diff():
    assert unified_diff("a\n", "b\n", "v1", "v2").startswith("--- v1\n+++ v2\n")
    result = apply_edits(DOC, [Edit("replace", target="Return JSON only.", content="Return YAML.")])
    assert "-Return JSON only.\n+Return YAML.\n" in result.diff


def test_random_edits_never_touch_protected_blocks():
    rng = random.Random(7)
    words = ["dates", "ISO", "answer", "briefly", "Guidance", "JSON", "Rules", "-", "\n", S, E, "use", "only."]
    block = DOC[DOC.index(S):DOC.index(E) + len(E)]
    seen = set()
    for _ in range(400):
        ops = []
        for _ in range(rng.randint(1, 4)):
            phrase = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
            span = DOC[(a := rng.randrange(len(DOC))):a + rng.randint(1, 40)]
            ops.append(Edit(rng.choice(["add", "replace", "delete", "bogus"]),
                            target=rng.choice(["", phrase, span]), content=rng.choice(["", phrase, "- new rule"]),
                            section=rng.choice(["", "Rules", "Dates", "Nope"])))
        result = apply_edits(DOC, ops)
        assert block in result.text  # the guidance block survives byte for byte
        text = DOC
        for report in result.reports:
            new, again = apply_edit(text, report.edit)
            assert again == report  # deterministic
            assert (new != text) == (report.status == "applied")
            text = new
            seen.add(report.status)
        assert text == result.text
    assert seen == set(STATUSES)  # every status was exercised, so the checks above are not vacuous

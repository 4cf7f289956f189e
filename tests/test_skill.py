import pytest

from skillopt import skill as sk
from skillopt.errors import SkillError, UserError

DOC = """Preamble text.

# Skill

Intro.

## Rules
- Use ISO dates.

### Dates
- Months are 1-based.

```python
# not a heading
## nor this
```

## Output ##
Return JSON.
"""


def test_sections_paths_levels_and_offsets():
    secs = sk.parse(DOC).sections
    assert [s.path for s in secs] == [("Skill",), ("Skill", "Rules"), ("Skill", "Rules", "Dates"),
                                      ("Skill", "Output")]
    assert [s.level for s in secs] == [1, 2, 3, 2]
    assert secs[1].path_str == "Skill > Rules"
    rules, dates, output = secs[1], secs[2], secs[3]
    assert DOC[rules.start:].startswith("## Rules\n")
    assert DOC[rules.content_start:].startswith("- Use ISO dates.")
    assert rules.end == output.start  # Rules includes its subsection Dates
    assert rules.own_end == dates.start  # but its own text stops at Dates
    assert dates.end == output.start
    assert "## nor this" in DOC[dates.start:dates.end]  # fenced lines stay in the body
    assert secs[0].end == len(DOC) and output.end == len(DOC)
    assert output.title == "Output"  # closing hashes are not part of the title


@pytest.mark.parametrize("text, expected", [
    ("# A\n## B\n", [("A",), ("A", "B")]),
    ("#NoSpace\n# Real\n", [("Real",)]),
    ("    # indented code\n   # three spaces ok\n", [("three spaces ok",)]),
    ("~~~\n# inside tilde\n~~~\n# after\n", [("after",)]),
    ("````\n```\n# still inside\n````\n# out\n", [("out",)]),
    ("``` `inline` not a fence\n# real\n", [("real",)]),
    ("## C#\n", [("C#",)]),
    ("# A\n### deep\n## B\n", [("A",), ("A", "deep"), ("A", "B")]),
    ("no headings at all\n", []),
])
def test_heading_detection(text, expected):
    assert [s.path for s in sk.parse(text).sections] == expected


def test_code_lines_marks_fences_and_what_they_hold():
    text = "prose\n````md\n# not a heading\n\n```\n````\nafter\n"
    assert [(line, code) for _, _, line, code in sk.code_lines(text)] == [
        ("prose", False), ("````md", True), ("# not a heading", True), ("", True), ("```", True), ("````", True),
        ("after", False)]
    assert [(s, e) for s, e, _, _ in sk.code_lines(text)] == [(s, e) for s, e, _ in sk.lines(text)]


@pytest.mark.parametrize("text", [
    DOC,
    "# T\r\n\r\n- crlf line\r\n",
    "# T\n- trailing spaces   \n\t\n",
    "# T\n- no final newline",
    "# Ünïcödé ✓\n- 日本語のルール\n- emoji 🎉\n",
    "",
    "\n\n\n",
    "# A\n" + sk.SLOW_START + "\nguide\n" + sk.SLOW_END,
])
def test_render_is_byte_identical(text):
    skill = sk.parse(text)
    assert sk.render(skill) == text
    assert sk.render(skill).encode("utf-8") == text.encode("utf-8")


def test_sections_tile_crlf_text():
    text = "# A\r\nbody a\r\n## B\r\nbody b\r\n"
    a, b = sk.parse(text).sections
    assert a.path == ("A",) and b.path == ("A", "B")
    assert text[b.start:b.content_start] == "## B\r\n"
    assert text[a.content_start:a.own_end] == "body a\r\n"


@pytest.mark.parametrize("query, expected", [
    ("Skill > Rules", ("Skill", "Rules")),
    ("skill>rules", ("Skill", "Rules")),
    ("  SKILL  >   rules ", ("Skill", "Rules")),
    ("Dates", ("Skill", "Rules", "Dates")),
    ("Rules > Dates", ("Skill", "Rules", "Dates")),
    ("## Output", ("Skill", "Output")),
    ("Skill", ("Skill",)),
    ("Missing", None),
    ("Rules > Missing", None),
    ("", None),
    (">", None),
])
def test_find_section(query, expected):
    found = sk.find_section(DOC, query)
    assert (found.path if found else None) == expected


def test_find_section_ambiguous_returns_none_but_find_sections_lists_both():
    text = "# A\n## Notes\nx\n# B\n## Notes\ny\n"
    assert sk.find_section(text, "Notes") is None
    assert [s.path for s in sk.find_sections(text, "Notes")] == [("A", "Notes"), ("B", "Notes")]
    assert sk.find_section(text, "B > Notes").path == ("B", "Notes")


S, E = sk.SLOW_START, sk.SLOW_END


@pytest.mark.parametrize("text, spans", [
    ("no markers", []),
    (f"ab{S}x{E}cd", [(2, 2 + len(S) + 1 + len(E))]),
    (f"{S}a{E}\n{S}b{E}", [(0, len(S) + 1 + len(E)), (len(S) + len(E) + 2, 2 * (len(S) + len(E)) + 3)]),
    (f"x{S}never closed", [(1, 1 + len(S) + len("never closed"))]),  # tolerant: protect to the end
    (f"x{E}y", [(1, 1 + len(E))]),  # a stray end marker still protects itself
])
def test_protected_spans(text, spans):
    assert sk.protected_spans(text) == spans
    assert list(sk.parse(text).protected) == spans


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("  \n\t\n", "empty"),
    ("a\x00b", "NUL"),
    ("x" * 50 + "\x01\x02", "binary"),
    ("x" * (sk.MAX_CHARS + 1), "limit"),
    (f"a\n{S}\nb\n", "never closed"),
    (f"a\n{E}\n", "without a matching"),
    (f"a\n{S}\n{S}\n{E}\n{E}\n", "nested"),
    (f"a\n{S}\nb\n{E}\n{E}\n", "without a matching"),
])
def test_validate_rejects(text, message):
    with pytest.raises(SkillError) as info:
        sk.validate(text, origin="seed_skill.md")
    msg = str(info.value)
    assert msg.startswith("seed_skill.md") and message in msg and "\n" not in msg
    assert isinstance(info.value, UserError)


def test_validate_reports_line_of_bad_marker():
    with pytest.raises(SkillError, match=r"^s\.md:3: "):
        sk.validate(f"a\nb\n{E}\n", origin="s.md")


@pytest.mark.parametrize("text", [
    DOC,
    f"# A\n{S}\nguide\n{E}\n{S}\n{E}\n",  # two separate blocks are fine
    "x" * 200 + "\x01",  # a lone control character in prose is not binary
    "tabs\tand\r\nCRLF\r\n",
])
def test_validate_accepts(text):
    sk.validate(text)


@pytest.mark.parametrize("text, expected", [
    ("no block", ""),
    (f"# A\n{S}\n  keep this\n{E}\n", "keep this"),
    (f"{S}{E}", ""),
    (f"{S}\nfirst\n{E}\n{S}\nsecond\n{E}", "first"),
])
def test_guidance(text, expected):
    assert sk.guidance(text) == expected


@pytest.mark.parametrize("text, new, expected", [
    ("# A\n- r\n", "be careful", f"# A\n- r\n\n{S}\nbe careful\n{E}\n"),
    ("# A\n- r", "g", f"# A\n- r\n\n{S}\ng\n{E}\n"),
    (f"# A\n{S}\nold\n{E}\ntail\n", "new\nlines", f"# A\n{S}\nnew\nlines\n{E}\ntail\n"),
    (f"# A\r\n{S}\r\nold\r\n{E}\r\n", "x\ny", f"# A\r\n{S}\r\nx\r\ny\r\n{E}\r\n"),
    (f"# A\n{S}\nold\n{E}\n", "", f"# A\n{S}\n{E}\n"),
])
def test_with_guidance(text, new, expected):
    out = sk.with_guidance(text, new)
    assert out == expected
    sk.validate(out)
    assert sk.guidance(out) == new.strip()


def test_with_guidance_round_trip_keeps_body():
    once = sk.with_guidance(DOC, "first")
    twice = sk.with_guidance(once, "second")
    assert sk.guidance(twice) == "second"
    assert twice.replace("second", "first") == once


@pytest.mark.parametrize("text, expected", [
    ("abc\n", 4),
    (f"abc\n{S}x{E}\nmore\n", 4),
    (f"{S}x{E}", 0),
    ("", 0),
])
def test_body_end(text, expected):
    assert sk.body_end(text) == expected


def test_sha():
    assert sk.sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sk.sha("é") != sk.sha("e")
    assert len(sk.sha(DOC)) == 64 and sk.sha(DOC) == sk.sha(str(DOC))


@pytest.mark.parametrize("text, nl", [("a\nb\n", "\n"), ("a\r\nb\r\n", "\r\n"), ("a\r\nb\nc\n", "\n"), ("", "\n")])
def test_newline_of(text, nl):
    assert sk.newline_of(text) == nl


@pytest.mark.parametrize("line, expected", [
    ("# A", True), ("###### six", True), ("####### seven", False), ("#tag", False), ("   ## ok", True),
    ("    # code", False), ("#", True), ("text # not", False),
])
def test_is_heading(line, expected):
    assert sk.is_heading(line) is expected

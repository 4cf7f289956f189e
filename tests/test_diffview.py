"""diffview: diff-match-patch diffs rendered only from escaped text."""
from __future__ import annotations

import html
import re

from skillopt.ui import diffview

OLD = "# Skill\n\n## Rules\n- rule one\n- rule two\n\n## Format\nAnswer briefly.\n"
NEW = "# Skill\n\n## Rules\n- rule one, always\n- rule three\n- rule two\n\n## Format\nAnswer briefly.\n"
EVIL = '<script>alert(1)</script>\n\n[click](javascript:alert(2)) <img src=x onerror="alert(3)"> $x$ **b**\n'


def _text(fragment: str, drop: str) -> str:
    """The text a diff shows once the `drop` elements (del or ins) are removed."""
    without = re.sub(rf"<{drop}\b[^>]*>.*?</{drop}>", "", fragment, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", without))


def test_inline_reconstructs_both_texts():
    fragment = diffview.inline_html(OLD, NEW)
    assert _text(fragment, "ins") == OLD
    assert _text(fragment, "del") == NEW
    assert "<ins" in fragment and "rule three" in "".join(re.findall(r"<ins[^>]*>(.*?)</ins>", fragment))


def test_html_is_one_escaped_line():
    for fragment in (diffview.inline_html("", EVIL), diffview.side_by_side_html("", EVIL),
                     diffview.side_by_side_html(EVIL, "", left_title="<b>x</b>")):
        assert "\n" not in fragment  # one line = one raw HTML block: markdown never parses the text inside
        assert "<script" not in fragment and "<img" not in fragment and "<b>x" not in fragment
        assert "&lt;script&gt;" in fragment
        assert 'onerror="' not in fragment  # the quote is escaped, so no attribute can form
    assert _text(diffview.inline_html("", EVIL), "del") == EVIL


def test_rows_pair_deletions_with_insertions():
    rows = diffview.rows(OLD, NEW)
    left = [r.left for r in rows if r.left_no is not None]
    right = [r.right for r in rows if r.right_no is not None]
    assert left == OLD.splitlines()
    assert right == NEW.splitlines()
    assert [r.left_no for r in rows if r.left_no] == list(range(1, len(left) + 1))
    assert [r.right_no for r in rows if r.right_no] == list(range(1, len(right) + 1))
    changed = [r for r in rows if r.kind == "changed"]
    assert changed and changed[0].left == "- rule one" and changed[0].right == "- rule one, always"
    assert [r.right for r in rows if r.kind == "inserted"] == ["- rule three"]


def test_side_by_side_columns_hold_the_texts():
    fragment = diffview.side_by_side_html(OLD, NEW, left_title="seed", right_title="best")
    cells = re.findall(r"<tr><td[^>]*>(\d*)</td><td[^>]*>(.*?)</td><td[^>]*>(\d*)</td><td[^>]*>(.*?)</td></tr>",
                       fragment)
    right = [html.unescape(re.sub(r"<[^>]+>", "", c[3])) for c in cells if c[2]]
    assert right == NEW.splitlines()
    assert ">seed<" in fragment and ">best<" in fragment


def test_fold_hides_long_unchanged_runs():
    old = "\n".join(f"line {i}" for i in range(40))
    new = old.replace("line 20", "line twenty")
    rows = diffview.rows(old, new, context=2)
    folds = [r for r in rows if r.kind == "fold"]
    assert [f.left for f in folds] == ["… 18 unchanged lines …", "… 17 unchanged lines …"]
    assert len([r for r in rows if r.kind == "equal"]) == 4  # 2 lines of context on each side
    assert "18 unchanged lines" in diffview.side_by_side_html(old, new, context=2)
    assert not any(r.kind == "fold" for r in diffview.rows(old, new))


def test_stats_and_line_endings():
    assert diffview.stats(OLD, NEW) == (2, 1)
    assert diffview.stats(OLD.replace("\n", "\r\n"), OLD) == (0, 0)
    assert diffview.stats(None, "a\nb\n") == (2, 0)
    assert all(r.kind == "equal" for r in diffview.rows(OLD, OLD))

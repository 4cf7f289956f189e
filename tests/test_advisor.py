"""The optimizer as an advisor: merging like edits, ranking them, choosing the edit budget."""
from __future__ import annotations

import json

import pytest

from skillopt.advisor import choose_budget, llm_merge, llm_rank
from skillopt.patch import Edit
from skillopt.transforms import Candidate, Proposal, prepare

from tests.helpers import ROUTING_SKILL as SKILL
from tests.helpers import scripted


def user_text(messages) -> str:
    return messages[1]["content"]


def cands() -> list[Candidate]:
    return [Candidate(Edit("add", content=f"- rule {c}.", source="failure"), (i,)) for i, c in enumerate("ABC")]


def test_llm_merge_folds_groups_into_their_first_edit():
    merge = llm_merge(scripted(lambda m: json.dumps({"groups": [[1, 3], [2]]}), "merge"), step=1)
    out = merge(cands())
    assert [c.edit.content for c in out] == ["- rule A.", "- rule B."]
    assert out[0].minibatches == (0, 2) and out[1] == cands()[1]


def test_llm_merge_inside_the_transform_pipeline_counts_support():
    optimizer = scripted(lambda m: json.dumps({"groups": [[1, 2], [3]]}), "merge2")
    texts = ["- Orders to Alaska go by air.", "- Alaska and Hawaii orders: air freight.", "- PO boxes: postal."]
    proposals = [Proposal(Edit("add", content=text, source="failure"), i) for i, text in enumerate(texts)]
    pool = prepare(proposals, merge=llm_merge(optimizer, 1))
    live = [c for c in pool if c.live]
    assert len(live) == 2 and live[0].edit.support == 2


def test_llm_merge_and_rank_leave_the_list_alone_on_an_unusable_reply():
    bad = scripted(lambda m: "no idea", "bad")
    assert llm_merge(bad, 1)(cands()) == cands()
    assert llm_rank(bad, 1)(cands()) == cands()
    out_of_range = scripted(lambda m: json.dumps({"order": [9, 1]}), "range")
    assert llm_rank(out_of_range, 1)(cands()) == cands()


def test_llm_rank_puts_named_edits_first_and_keeps_the_rest():
    seen = []

    def reply(messages):
        seen.append(user_text(messages))
        return json.dumps({"order": [3, 1]})

    out = llm_rank(scripted(reply, "rank"), 1, skill=SKILL)(cands())
    assert [c.edit.content for c in out] == ["- rule C.", "- rule A.", "- rule B."]
    assert "[3] add (support 1, from failure)" in seen[0] and "new: - rule C." in seen[0] and "House rules" in seen[0]


@pytest.mark.parametrize("text, expected", [('{"count": 3, "reason": "distinct"}', 3),
                                            ('{"count": "2", "reason": ""}', 2),
                                            ("about three", None)])
def test_choose_budget(text, expected):
    edits = [Edit("add", content="- a.", support=2), Edit("add", content="- b.")]
    assert choose_budget(scripted(lambda m: text, f"lr{expected}"), SKILL, edits, lr=4, min_lr=2, step=1) == expected


def test_choose_budget_without_a_pool_asks_nothing():
    assert choose_budget(scripted(lambda m: pytest.fail("called"), "lrnone"), SKILL, [], lr=4, min_lr=2,
                         step=1) is None

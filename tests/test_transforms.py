import pytest

from skillopt.patch import Edit
from skillopt.transforms import (MAX_CONTENT_CHARS, Candidate, Proposal, Selection, candidates_of, chain, clip,
                                 dedupe, finish, merge, normalize, live_count, pipeline, prepare, rank,
                                 similarity, support)


def cand(op="add", content="- rule", target="", mbs=(0,), source="failure", fate="pending"):
    return Candidate(Edit(op, target=target, content=content, source=source), tuple(mbs), fate)


@pytest.mark.parametrize("edit, fate, note", [
    (Edit("add", content="  - rule  \n"), "pending", ""),
    (Edit(" ADD ", content="- rule"), "pending", ""),
    (Edit("rewrite", content="x"), "invalid", "unknown op 'rewrite'"),
    (Edit("add", content="   "), "invalid", "add with empty content"),
    (Edit("replace", target="x", content=""), "invalid", "replace with empty content"),
    (Edit("replace", target="  ", content="x"), "invalid", "replace with empty target"),
    (Edit("delete", target=""), "invalid", "delete with empty target"),
    (Edit("delete", target="old rule"), "pending", ""),
    (Edit("add", content="x" * (MAX_CONTENT_CHARS + 1)), "invalid",
     f"content of {MAX_CONTENT_CHARS + 1} characters exceeds {MAX_CONTENT_CHARS}"),
    (Edit("add", content="x" * MAX_CONTENT_CHARS), "pending", ""),
    (Edit("replace", target="same  words", content="same words"), "invalid", "replace changes nothing"),
])
def test_normalize_table(edit, fate, note):
    (out,) = normalize([Candidate(edit, (0,))])
    assert (out.fate, out.note) == (fate, note)


def test_an_over_long_edit_is_invalid_and_kept_whole_never_cut():
    rule = "- " + "x" * MAX_CONTENT_CHARS
    sel = pipeline([Proposal(Edit("add", content=rule), 0), Proposal(Edit("add", content="- short."), 1)], budget=2)
    assert sel.selected == (Edit("add", content="- short."),)
    (long,) = [c for c in sel.candidates if c.fate == "invalid"]
    assert long.edit.content == rule and long.note == f"content of {len(rule)} characters exceeds {MAX_CONTENT_CHARS}"


def test_normalize_tidies_text():
    (out,) = normalize([Candidate(Edit(" Add", target="  t ", content="\n\n- a  \r\n\n\n\n- b\n\n", section=" R "), (0,))])
    assert out.edit == Edit("add", target="t", content="- a\n\n- b", section="R")


def test_normalize_leaves_decided_candidates_alone():
    done = cand(content="", fate="clipped")
    assert normalize([done]) == [done]


@pytest.mark.parametrize("a, b, similar", [
    (Edit("add", content="- Use ISO dates."), Edit("add", content="- use ISO dates"), True),
    (Edit("add", content="- Use ISO dates."), Edit("delete", target="- Use ISO dates."), False),
    (Edit("add", content="- Use ISO dates."), Edit("add", content="- Answer in one word."), False),
    (Edit("replace", target="a", content="b"), Edit("replace", target="a", content="b"), True),
    (Edit("replace", target="old rule text", content="new rule"),
     Edit("replace", target="other thing", content="new rule"), False),
    (Edit("add", content="- At most 3 items."), Edit("add", content="- At most 5 items."), False),
    (Edit("add", content="1. At most 3 items"), Edit("add", content="* at most 3 items!"), True),
])
def test_similarity(a, b, similar):
    assert (similarity(a, b) >= 0.85) is similar
    assert similarity(a, b) == similarity(b, a)


def test_dedupe_folds_into_first_and_unions_minibatches():
    cands = [cand(content="- Use ISO dates.", mbs=(2,)),
             cand(content="- Answer in one word.", mbs=(0,)),
             cand(content="- use ISO dates", mbs=(0,)),
             cand(content="- Use ISO dates!", mbs=(2,)),
             cand(content="- Use ISO dates.", fate="invalid")]
    out = dedupe(0.85)(cands)
    assert [c.fate for c in out] == ["pending", "pending", "merged", "merged", "invalid"]
    assert out[0].minibatches == (0, 2) and out[0].edit.content == "- Use ISO dates."
    assert out[2].note.startswith("near-duplicate of: add '- Use ISO dates.'")


@pytest.mark.parametrize("threshold, live", [(0.99, 2), (0.5, 1)])
def test_dedupe_threshold(threshold, live):
    out = dedupe(threshold)([cand(content="- Use ISO dates."), cand(content="- Use ISO date")])
    assert live_count(out) == live


def test_support_counts_distinct_minibatches_not_the_model_claim():
    c = Candidate(Edit("add", content="x", support=99), (3, 1, 3))
    (out,) = support([c])
    assert out.edit.support == 2


@pytest.mark.parametrize("cands, order", [
    # failure-sourced first, then support, then original order
    ([cand(content="s", source="success", mbs=(0, 1, 2)), cand(content="f1", mbs=(0,)),
      cand(content="f2", mbs=(1, 2))], ["f2", "f1", "s"]),
    ([cand(content="a", source="human"), cand(content="b", source="success"), cand(content="c")], ["c", "a", "b"]),
    ([cand(content="a"), cand(content="b"), cand(content="c")], ["a", "b", "c"]),
])
def test_rank_table(cands, order):
    out = rank()(support(cands))
    assert [c.edit.content for c in out] == order


def test_rank_extra_may_reorder_but_never_add_or_lose():
    cands = support([cand(content=x) for x in "abc"])
    invented = cand(content="zzz")

    def sloppy(pool):
        return [pool[2], invented, pool[2], pool[0]]  # reversed-ish, invents one, repeats one, drops "b"

    out = rank(sloppy)(cands + [cand(content="dead", fate="invalid")])
    assert [c.edit.content for c in out] == ["c", "a", "b", "dead"]


@pytest.mark.parametrize("budget, fates", [
    (0, ["clipped"] * 3),
    (2, ["selected", "selected", "clipped"]),
    (5, ["selected"] * 3),
    (-1, ["clipped"] * 3),
])
def test_clip_table(budget, fates):
    out = clip(budget)([cand(content=x) for x in "abc"] + [cand(content="m", fate="merged")])
    assert [c.fate for c in out] == fates + ["merged"]


def test_merge_injection_marks_absorbed_inputs():
    cands = support([cand(content="- a", mbs=(0,)), cand(content="- b", mbs=(1,)), cand(content="- c", mbs=(2,))])

    def llm_merge(pool):
        combined = Candidate(Edit("add", content="- a and b"), (0, 1))
        return [combined, pool[2]]

    out = merge(llm_merge)(cands)
    assert [(c.edit.content, c.fate) for c in out] == [("- a and b", "pending"), ("- c", "pending"),
                                                      ("- a", "merged"), ("- b", "merged")]


def test_chain_composes_left_to_right():
    seen = []

    def mark(tag):
        def run(cands):
            seen.append(tag)
            return cands
        return run

    assert chain(mark(1), mark(2), mark(3))([]) == []
    assert seen == [1, 2, 3]


def test_pipeline_end_to_end():
    proposals = [
        Proposal(Edit("add", content="- Use ISO dates.", support=7), 0),
        Proposal(Edit("add", content="- use ISO dates", source="failure"), 1),
        Proposal(Edit("add", content="- Be polite.", source="success"), 1),
        Proposal(Edit("replace", target="- Answer briefly.", content="- Answer in one word."), 2),
        Proposal(Edit("add", content="- Use ISO dates."), 2),
        Proposal(Edit("frobnicate", content="?"), 3),
        Proposal(Edit("add", content="- Cite the source.", source="success"), 3),
    ]
    sel = pipeline(proposals, budget=2)
    assert isinstance(sel, Selection)
    assert sel.selected == (Edit("add", content="- Use ISO dates.", support=3),
                            Edit("replace", target="- Answer briefly.", content="- Answer in one word."))
    fates = sorted(c.fate for c in sel.candidates)
    assert fates == ["clipped", "clipped", "invalid", "merged", "merged", "selected", "selected"]
    assert len(sel.candidates) == len(proposals)  # every proposal keeps a visible fate
    assert sel.competed == 4


def test_pipeline_is_deterministic_and_prepare_finish_agree():
    proposals = [Proposal(Edit("add", content=f"- rule {i % 3}"), i) for i in range(9)]
    a = pipeline(proposals, 2)
    b = finish(prepare(proposals), 2)
    assert a == b == pipeline(list(proposals), 2)
    assert [e.support for e in a.selected] == [3, 3]
    assert live_count(prepare(proposals)) == 3


def test_pipeline_with_merge_and_rank_functions():
    proposals = [Proposal(Edit("add", content="- a"), 0), Proposal(Edit("add", content="- b"), 1)]

    def llm_merge(pool):
        return [Candidate(Edit("add", content="  - a or b  \n\n\n"), (0, 1))]

    sel = pipeline(proposals, 3, merge=llm_merge, rank=lambda pool: list(reversed(pool)))
    assert sel.selected == (Edit("add", content="- a or b", support=2),)  # normalized again, support recomputed
    assert [c.fate for c in sel.candidates] == ["selected", "merged", "merged"]


def test_candidates_of():
    assert candidates_of([Proposal(Edit("delete", target="x"), 4)]) == [Candidate(Edit("delete", target="x"), (4,))]

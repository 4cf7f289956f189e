"""A candidate the gate already rejected is not gated again against the same incumbent (repeats.py)."""
from __future__ import annotations

import json

from skillopt import repeats, transforms
from skillopt.patch import Edit
from skillopt.store.reader import Reader
from skillopt.state import State
from tests.helpers import run_sim, scripted

SKILL = "# Routing\n\n## House rules\n\n- When nothing special applies, the route is standard.\n"
A, B, C = (Edit("add", content=text, section="House rules") for text in (
    "- Read the whole order before routing it.", "- A gift note never changes the route.",
    "- Ask nothing back: answer with one route."))


def pool(*edits: Edit) -> list[transforms.Candidate]:
    return transforms.prepare([transforms.Proposal(edit=e, minibatch=i) for i, e in enumerate(edits)])


def tried_after(*selected: Edit, step: int) -> repeats.Tried:
    candidate = transforms.finish(pool(*selected), len(selected))
    from skillopt.patch import apply_edits
    return ((repeats.pair(SKILL, apply_edits(SKILL, candidate.selected).text), step),)


def test_a_pair_is_the_incumbent_and_the_candidate_together():
    assert repeats.pair("a", "b") == repeats.pair("a", "b")
    assert repeats.pair("a", "b") != repeats.pair("c", "b")  # the same candidate against another incumbent is new


def test_rejected_at_names_the_step_of_a_rebuilt_candidate():
    tried = tried_after(A, B, step=3)
    assert repeats.rejected_at(tried, SKILL, [A, B], 0.85) == 3
    assert repeats.rejected_at(tried, SKILL, [B, A], 0.85) is None  # another order is another skill text
    assert repeats.rejected_at(tried, SKILL, [A, C], 0.85) is None
    assert repeats.rejected_at(tried, SKILL + "- more\n", [A, B], 0.85) is None  # another incumbent
    assert repeats.rejected_at((), SKILL, [A, B], 0.85) is None and repeats.rejected_at(tried, SKILL, [], 0.85) is None


def test_choose_gives_the_budget_to_the_next_edits_and_notes_why():
    ranked = pool(A, B, C)
    first = repeats.choose((), SKILL, ranked, 2, 0.85)
    tried = tried_after(*first.selected, step=1)
    second = repeats.choose(tried, SKILL, ranked, 2, 0.85)
    assert set(second.selected).isdisjoint(first.selected) and len(second.selected) == 1
    notes = {c.edit: c for c in second.candidates}
    assert all(notes[e].fate == "clipped" and "rejected at step 1" in notes[e].note for e in first.selected)
    assert repeats.choose(tried, SKILL, ranked, 2, 0.85, person=True).selected == first.selected  # a person decides
    both = tried + tried_after(*second.selected, step=2)
    assert repeats.choose(both, SKILL, ranked, 2, 0.85).selected == ()  # every candidate tried: nothing to gate


def test_the_state_keeps_what_was_tried_across_a_resume():
    state = State(step=2, skill=SKILL, current_score=0.5, best_skill=SKILL, best_score=0.5, best_step=0,
                  epoch_start_skill=SKILL, tried=(("k1", 1), ("k2", 2)))
    assert State.from_json(json.loads(json.dumps(state.to_json()))).tried == state.tried
    older = {k: v for k, v in state.to_json().items() if k != "tried"}  # a checkpoint from before the field
    assert State.from_json(older).tried == ()


def test_a_run_whose_optimizer_repeats_itself_gates_each_candidate_once(tmp_path):
    reply = json.dumps({"summary": "read orders whole", "edits": [
        {"op": "add", "section": "House rules", "content": e.content} for e in (A, B, C)]})
    scripted(lambda messages: reply, "repeater")
    db = tmp_path / "s.db"
    run_id = run_sim(db, "optimizer_model=h4script/repeater", "num_epochs=1", "batch_size=40",
                     "learning_rate=2", "min_learning_rate=2", "worked_examples=false", "clue_rules=false",
                     "use_slow_update=false", "use_meta_skill=false")
    r = Reader(db)
    steps = [s["decision"] for s in r.q("SELECT decision FROM steps WHERE run_id = ? ORDER BY step", (run_id,))]
    assert steps == ["reject", "reject", "skip"]  # {A, B}, then {C}, then nothing left untried
    gated = r.q("SELECT step, candidate_score FROM gate_decisions WHERE run_id = ? AND kind = 'step'", (run_id,))
    assert [g["step"] for g in gated] == [1, 2]
    notes = r.q("SELECT step, fate, note FROM edits WHERE run_id = ? AND note LIKE '%rejected at step%'", (run_id,))
    assert {n["step"] for n in notes} == {2, 3} and all(n["fate"] == "clipped" for n in notes)

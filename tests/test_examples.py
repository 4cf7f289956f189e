"""Worked examples (skillopt/examples.py): a step's failures as task -> right answer lines."""
from __future__ import annotations

import sqlite3

from skillopt import examples, transforms
from skillopt.gate import GateDecision
from skillopt.patch import Edit, apply_edits
from skillopt.tasks.task import Evaluation, Trajectory
from tests.helpers import run_sim

TEMPLATE = "Sort this item into a bin.\nAnswer with the bin only."


def traj(item_id: str, item: str, expected: str, hard: float = 0.0, error: str = "") -> Trajectory:
    return Trajectory(item_id=item_id, prompt=f"{TEMPLATE}\nItem: {item}", output="paper", expected=expected,
                      evaluation=Evaluation(hard, hard, ""), error=error)


STEP = [traj("a", "a greasy pizza box", "residual"), traj("b", "an old phone", "electronics"),
        traj("c", "a cracked oven dish", "residual"), traj("d", "yesterday's newspaper", "paper", hard=1.0),
        traj("e", "a blown bulb", "residual", error="timeout")]
COMMON = tuple(TEMPLATE.splitlines())


def test_a_line_is_the_task_without_its_template_and_the_right_answer():
    assert examples.line(STEP[0], COMMON) == "- Task: Item: a greasy pizza box -> Answer: residual"
    long = traj("x", "word " * 200, '{"total": 12.5}')
    text = examples.line(long, COMMON)
    assert "\n" not in text and len(text) < examples.TASK_CHARS + examples.ANSWER_CHARS + 40
    assert text.endswith('-> Answer: {"total": 12.5}')


def test_failures_of_different_answers_come_first():
    picked = examples.pick(STEP[:3], 2, seed=1)
    assert {t.expected for t in picked} == {"residual", "electronics"}
    assert examples.pick(STEP[:3], 2, seed=1) == picked  # seeded
    assert len(examples.pick(STEP[:3], 3, seed=1)) == 3


def test_the_edit_makes_the_section_then_adds_to_it_and_stops_when_full():
    skill = "# Bins\n\nSort household waste.\n"
    made, ids = examples.edit(skill, STEP, COMMON, seed=2)
    assert made.source == "example" and made.op == "add" and made.section == ""
    assert made.content.startswith("## Worked examples\n\n- Task: ") and made.content.count("- Task: ") == 3
    assert set(ids) == {"a", "b", "c"}  # failures only: not the success, not the errored item
    after = apply_edits(skill, [made]).text
    assert after.startswith(skill.rstrip()) and "## Worked examples" in after
    assert examples.edit(after, STEP, COMMON, seed=2) is None  # every failure is shown already
    more = [traj(f"n{i}", f"new thing {i}", "glass") for i in range(20)]
    again, _ = examples.edit(after, more, COMMON, seed=2)
    assert again.section == "Bins > Worked examples" and "## " not in again.content
    full = after + "".join(f"- Task: filler {i} -> Answer: glass\n" for i in range(examples.MAX_EXAMPLES - 3))
    assert examples.edit(full, more, COMMON, seed=2) is None


def test_a_step_without_failures_has_no_example_edit():
    assert examples.for_step("# S\n", [STEP[3]], seed=1, fuzzy=0.85) is None
    assert examples.for_step("# S\n", [STEP[4]], seed=1, fuzzy=0.85) is None  # an errored item is no failure
    edit, items, text = examples.for_step("# S\n", STEP, seed=1, fuzzy=0.85)
    assert text == apply_edits("# S\n", [edit]).text and set(items) == {"a", "b", "c"}


def said(item_id: str, item: str, expected: str, output: str, hard: float = 0.0) -> Trajectory:
    return Trajectory(item_id=item_id, prompt=f"{TEMPLATE}\nItem: {item}", output=output, expected=expected,
                      evaluation=Evaluation(hard, hard, ""))


KNOWN = (said("k1", "a jam jar", "glass", "glass", hard=1.0), said("k2", "a wine bottle", "glass", "glass", hard=1.0),
         said("k3", "a milk carton", "packaging", "packaging", hard=1.0),
         said("k4", "a broken mug", "residual", "glass"))  # a failure: never a contrast


def test_each_failure_is_followed_by_a_right_train_task_whose_answer_is_its_wrong_reply():
    mug = said("f1", "a cracked oven dish", "residual", "Glass.")  # case and punctuation ignored
    radio = said("f2", "an old radio", "electronics", "packaging")
    essay = said("f3", "a story", "a long tale", "once upon a time")  # free text: no task has its reply as answer
    out = examples.contrasts([mug, radio, essay], KNOWN, taken=set(), room=5, seed=3)
    ids = [t.item_id for t in out]
    assert ids[0] == "f1" and ids[1] in ("k1", "k2") and ids[2:] == ["f2", "k3", "f3"]
    assert examples.contrasts([mug, radio], KNOWN, taken=set(), room=1, seed=3)[2:] == [radio]  # room for one
    assert [t.item_id for t in examples.contrasts([mug], KNOWN, taken={"k1", "k2"}, room=5, seed=3)] == ["f1"]
    two = examples.contrasts([mug, said("f4", "a vase", "residual", "glass")], KNOWN, set(), room=5, seed=3)
    assert {two[1].item_id, two[3].item_id} == {"k1", "k2"}  # a contrast is shown once


def test_with_known_rollouts_the_edit_shows_the_contrasts_and_names_them_in_its_items():
    skill = "# Bins\n\nSort household waste.\n"
    step = [said("f1", "a cracked oven dish", "residual", "glass"), said("f2", "an old radio", "electronics", "paper")]
    made, ids = examples.edit(skill, step, COMMON, seed=2, known=KNOWN)
    assert set(ids) == {"f1", "f2", "k1"} or set(ids) == {"f1", "f2", "k2"}  # no right task answers "paper"
    lines = made.content.splitlines()[2:]
    assert len(lines) == 3 and lines[ids.index("f1") + 1].endswith("-> Answer: glass")
    assert "1 train tasks whose right answer is a failure's wrong reply" in made.rationale
    plain, plain_ids = examples.edit(skill, step, COMMON, seed=2)  # without known rollouts: failures only
    assert set(plain_ids) == {"f1", "f2"} and "contrast" not in plain.rationale


def decision(accept: bool, wins: int, losses: int) -> GateDecision:
    return GateDecision(accept=accept, current_score=0.3, candidate_score=0.3 + (wins - losses) / 32, margin=0.0,
                        p_value=None, n_items=32, n_evaluated=32, wins=wins, losses=losses, early_stop=False,
                        reason="won")


def test_a_trial_is_kept_only_when_every_trial_so_far_pooled_says_examples_help():
    # one trial's 5 wins to 2 losses is no evidence alone (p = 0.227) ...
    first, record = examples.pooled(decision(True, 5, 2), (0, 0), alpha=0.2)
    assert not first.accept and record == (5, 2) and "p = 0.227 > 0.2" in first.reason
    # ... with an earlier trial's 4 to 2 it is (9 to 4: p = 0.133)
    kept, record = examples.pooled(decision(True, 5, 2), (4, 2), alpha=0.2)
    assert kept.accept and record == (9, 4) and "p = 0.133" in kept.reason
    # the pooled record never turns the trial's own rejection into an acceptance, and counts it
    lost, record = examples.pooled(decision(False, 1, 3), (40, 2), alpha=0.2)
    assert not lost.accept and record == (41, 5)
    # no discordant item at all: no evidence
    assert not examples.pooled(decision(True, 0, 0), (0, 0), alpha=0.2)[0].accept


def test_the_optimizers_edits_rank_as_before_examples_take_no_slot():
    ex = Edit(op="add", content="- Task: t -> Answer: a", source="example")
    rule = Edit(op="add", content="- a rule", source="failure", support=3)
    pool = transforms.pipeline([transforms.Proposal(ex, 1), transforms.Proposal(rule, 0)], budget=1)
    assert [e.content for e in pool.selected] == [rule.content]


def trials(conn: sqlite3.Connection, run_id: str) -> list[tuple]:
    return conn.execute("SELECT g.step, g.decision, s.decision, e.gate, e.content, e.note FROM gate_decisions g "
                        "JOIN steps s ON s.run_id = g.run_id AND s.step = g.step "
                        "JOIN edits e ON e.run_id = g.run_id AND e.step = g.step AND e.source = 'example' "
                        "WHERE g.run_id = ? AND g.kind = 'examples' ORDER BY g.step", (run_id,)).fetchall()


def test_examples_are_tried_alone_only_after_a_step_candidate_was_not_kept(tmp_path):
    # clue rules and seed ablations off: they are tried first where the data or the seed offers some
    # (test_clues.py, test_ablation.py)
    db = tmp_path / "s.db"
    # at seed 1 the run rejects steps and so tries examples (found by running it: the sim's choices
    # are hashes of the prompts, so any change to a prompt draws other runs)
    run_id = run_sim(db, "num_epochs=2", "worked_examples=true", "clue_rules=false", "seed_ablations=0", "seed=1")
    conn = sqlite3.connect(db)
    rows = trials(conn, run_id)
    assert rows, "a sim run with rejected steps tries worked examples"
    for step, decision, step_decision, gate, content, note in rows:
        assert step_decision in ("reject", "skip")  # never after an accepted step
        assert gate == {"reject": "rejected", "skip": "skipped"}.get(decision, "accepted")
        assert content.count("- Task: ") >= 1 and "gated alone" in note
    # examples never ride in the optimizer's candidate
    for (text,) in conn.execute("SELECT content FROM skill_versions WHERE run_id = ? AND kind = 'candidate'", (run_id,)):
        assert "## Worked examples" not in text
    stepped = {r[0] for r in conn.execute("SELECT step FROM steps WHERE run_id = ? AND decision IN "
                                          "('reject', 'skip')", (run_id,))}
    assert {r[0] for r in rows} <= stepped
    off = run_sim(db, "num_epochs=2", "worked_examples=false", "clue_rules=false", "seed_ablations=0", "seed=1")
    assert not trials(conn, off)
    assert not conn.execute("SELECT 1 FROM gate_decisions WHERE run_id = ? AND kind = 'examples'", (off,)).fetchall()
    conn.close()


def test_accepted_examples_become_the_incumbent_and_count_as_accepted(tmp_path):
    db = tmp_path / "s.db"
    # At the gate's own 0.5 level some examples win their trial on the simulated world (at seed 5:
    # found by running it).
    run_id = run_sim(db, "worked_examples=true", "worked_examples_alpha=1.0", "seed=5", "clue_rules=false",
                     "seed_ablations=0")
    conn = sqlite3.connect(db)
    kept = [r for r in trials(conn, run_id) if r[1] in ("accept", "accept_new_best")]
    assert kept
    step, _, _, _, content, _ = kept[0]
    current = conn.execute("SELECT content FROM skill_versions WHERE run_id = ? AND step = ? AND kind = 'current'",
                           (run_id, step)).fetchone()[0]
    examples_text = conn.execute("SELECT content FROM skill_versions WHERE run_id = ? AND step = ? AND kind = "
                                 "'examples'", (run_id, step)).fetchone()[0]
    assert current == examples_text and content.splitlines()[-1] in current
    nxt = conn.execute("SELECT current_score FROM steps WHERE run_id = ? AND step = ?", (run_id, step + 1)).fetchone()
    gate = conn.execute("SELECT candidate_score FROM gate_decisions WHERE run_id = ? AND step = ? AND kind = "
                        "'examples'", (run_id, step)).fetchone()[0]
    assert nxt is None or abs(nxt[0] - gate) < 1e-9  # the next step starts from the examples' selection score
    conn.close()


def test_no_examples_trial_in_approval_mode_or_without_a_gate(tmp_path):
    db = tmp_path / "s.db"
    conn = sqlite3.connect(db)
    ungated = run_sim(db, "num_epochs=1", "worked_examples=true", "use_gate=false")
    assert not trials(conn, ungated)
    conn.close()


def test_a_trials_gate_holds_the_pooled_record_so_it_never_stops_before_the_pooled_test_is_decided(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "worked_examples=true", "optimizer_model=sim/learner?noise=1", "seed=6",
                     "worked_examples_alpha=0.05", "clue_rules=false", "trial_train_items=false")
    conn = sqlite3.connect(db)
    # worked-examples trials only: the reply-template trial is not pooled with them (test_template.py)
    rows = conn.execute("SELECT g.decision, g.wins, g.losses, g.early_stop, g.reason FROM gate_decisions g "
                        "JOIN edits e ON e.run_id = g.run_id AND e.step = g.step AND e.source = 'example' "
                        "WHERE g.run_id = ? AND g.kind = 'examples' ORDER BY g.step", (run_id,)).fetchall()
    conn.close()
    assert len(rows) > 3 and any(d.startswith("accept") for d, *_ in rows)
    record = (0, 0)
    for decision, wins, losses, early, reason in rows:
        record = (record[0] + wins, record[1] + losses)
        assert f"all trials so far: {record[0]} items won, {record[1]} lost" in reason
        # an early stop decides the pooled test too: the pooled rule never overturns it
        assert not (early and "not yet evidence" in reason), reason


def test_a_trials_fair_items_are_the_known_train_rollouts_it_does_not_show():
    known = (*STEP, traj("a", "a greasy pizza box", "residual", hard=1.0), traj("f", "a tin can", "packaging"))
    fair = examples.fair({"a", "c"}, known)
    assert [t.item_id for t in fair] == ["b", "d", "f"]  # shown (a, c) and errored (e) left out, each once


def test_a_good_trial_after_poor_ones_is_rejected_by_the_pooled_rule():
    # why trials are judged alone by default (trial_train_items): the 4-1 trial waste-sorting rejected
    won = GateDecision(accept=True, current_score=0.3, candidate_score=0.4, margin=0.1, p_value=0.19, n_items=90,
                       n_evaluated=40, wins=4, losses=1, early_stop=True, reason="accept")
    bound, record = examples.pooled(won, (8, 10), 0.2)
    assert not bound.accept and record == (12, 11) and "not yet evidence" in bound.reason


def test_by_default_a_worked_examples_trial_is_also_gated_on_the_train_items_it_does_not_show(tmp_path):
    db = tmp_path / "s.db"
    noisy = ("worked_examples=true", "optimizer_model=sim/learner?noise=1", "seed=6", "clue_rules=false")
    on, off = run_sim(db, *noisy), run_sim(db, *noisy, "trial_train_items=false")
    conn = sqlite3.connect(db)
    selection = conn.execute("SELECT COUNT(*) FROM items WHERE run_id = ? AND split = 'selection'", (on,)).fetchone()[0]

    def gates(run_id):
        return conn.execute("SELECT g.step, g.n_items, g.reason FROM gate_decisions g JOIN edits e ON e.run_id = "
                            "g.run_id AND e.step = g.step AND e.source = 'example' WHERE g.run_id = ? AND "
                            "g.kind = 'examples'", (run_id,)).fetchall()

    widened = [(step, n) for step, n, reason in gates(on) if "train items the change was not made from" in reason]
    assert all("p <= 0.5" not in reason and "all trials so far" not in reason for _, _, reason in gates(on))  # alone
    assert widened and all(n > selection for _, n in widened)
    rolled = set()
    for step, _ in widened:  # the candidate's train rollouts are recorded under the train split, shown items not
        ids = {r[0] for r in conn.execute("SELECT item_id FROM rollouts WHERE run_id = ? AND step = ? AND purpose = "
                                          "'examples_candidate' AND split = 'train'", (on, step))}
        note = conn.execute("SELECT note FROM edits WHERE run_id = ? AND step = ? AND source = 'example'",
                            (on, step)).fetchone()[0]
        shown = set(note.split("worked examples of train items ")[1].split(", gated alone")[0].split(", "))
        assert ids <= {r[0] for r in conn.execute("SELECT item_id FROM items WHERE run_id = ? AND split = 'train'",
                                                  (on,))}
        assert shown and not ids & shown
        rolled |= ids  # a trial may stop early, before any train item
    assert rolled
    assert gates(off) and all(n <= selection and "train items" not in reason for _, n, reason in gates(off))
    conn.close()


def test_with_contrast_examples_a_trial_shows_right_train_tasks_and_is_not_gated_on_them(tmp_path):
    db = tmp_path / "s.db"
    noisy = ("worked_examples=true", "optimizer_model=sim/learner?noise=1", "seed=6", "clue_rules=false")
    run_id = run_sim(db, *noisy, "contrast_examples=true")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT step, note, rationale FROM edits WHERE run_id = ? AND source = 'example'",
                        (run_id,)).fetchall()
    paired = [r for r in rows if "for contrast" in r[2]]
    assert paired, "the sim target's wrong labels are other train tasks' answers"
    for step, note, _ in paired:
        shown = note.split("worked examples of train items ")[1].split(", gated alone")[0].split(", ")
        right = {r[0] for r in conn.execute("SELECT item_id FROM rollouts WHERE run_id = ? AND split = 'train' AND "
                                            "hard >= 1 AND purpose = 'train'", (run_id,))}
        assert set(shown) & right  # a contrast: a train task the incumbent got right
        gated = {r[0] for r in conn.execute("SELECT item_id FROM rollouts WHERE run_id = ? AND step = ? AND purpose "
                                            "= 'examples_candidate' AND split = 'train'", (run_id, step))}
        assert not gated & set(shown)
    conn.close()

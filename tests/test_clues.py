"""Clue rules (skillopt/clues.py): label rules read off the train split's answers."""
from __future__ import annotations

import json

from skillopt import clues
from skillopt.evidence import Example, words
from skillopt.tasks.loader import load_task
from skillopt.patch import apply_edits

# 10 train tasks: "gdpr" goes with legal 4 times of 4, "broken" with shipping 4 of 5, "order"
# is in 8 of 10 (template-like: more than half), "refund" splits billing 2 / shipping 2.
TRAIN = [Example("gdpr request for my order data", "legal"), Example("gdpr deletion of my order", "legal"),
         Example("gdpr export please order", "legal"), Example("my gdpr rights", "legal"),
         Example("broken lamp order refund", "shipping"), Example("broken box order refund", "shipping"),
         Example("broken glass order", "shipping"), Example("broken seal order", "shipping"),
         Example("broken promise order refund", "billing"), Example("double charge order refund", "billing")]


def fails(*pairs: tuple[str, str, str]) -> list[tuple[str, Example]]:
    return [(item, Example(text, answer)) for item, text, answer in pairs]


STEP = fails(("f1", "gdpr copy of my data", "legal"), ("f2", "under gdpr article 15", "legal"),
             ("f3", "broken cable", "shipping"), ("f4", "broken screen on arrival", "shipping"),
             ("f5", "gdpr question", "billing"))


def test_a_clue_needs_support_precision_and_failures_it_would_fix():
    found = clues.mine(TRAIN, STEP)
    assert [(c.word, c.answer, c.hits, c.support, c.fixes) for c in found] == [
        ("gdpr", "legal", 4, 4, ("f1", "f2")), ("broken", "shipping", 4, 5, ("f3", "f4"))]
    assert found[0].line == '- If the task mentions "gdpr", answer legal.'
    assert found[0].evidence == "gdpr: 4 of 4 train tasks answer legal"
    # a word in most tasks is template text; a split word has no clear answer
    assert not any(c.word in ("order", "refund") for c in found)
    # one failure is no pattern: the rule must cover MIN_FIXES of them
    assert [c.word for c in clues.mine(TRAIN, STEP[:1] + STEP[2:4])] == ["broken"]
    # too few train tasks with the word: no evidence either way
    assert clues.mine(TRAIN[:3], STEP) == []
    # a word stated or rejected before is not offered
    assert [c.word for c in clues.mine(TRAIN, STEP, skip={"gdpr"})] == ["broken"]


def test_a_trial_takes_clues_in_turns_across_answers():
    mk = lambda w, a, n: clues.Clue(w, a, 5, 5, tuple(f"{w}{i}" for i in range(n)))  # noqa: E731
    ranked = [mk("a1", "A", 5), mk("a2", "A", 4), mk("a3", "A", 3), mk("b1", "B", 2), mk("c1", "C", 2)]
    assert [c.word for c in clues.pick(ranked, 4)] == ["a1", "b1", "c1", "a2"]
    assert clues.pick([], 3) == []


def test_the_edit_makes_the_section_then_adds_to_it_and_stops_when_full():
    skill = "# Routing\n\nRoute tickets.\n"
    edit, items, text = clues.for_step(skill, TRAIN, STEP, rejected=(), fuzzy=0.85)
    assert edit.source == "rule" and edit.section == "" and edit.content.startswith("## Clue rules\n\n")
    assert items == ("f1", "f2", "f3", "f4") and text == apply_edits(skill, [edit]).text
    assert "gdpr: 4 of 4 train tasks answer legal" in edit.rationale
    assert clues.stated(text) == {"gdpr", "broken"} and clues.words_of(edit) == ("gdpr", "broken")
    assert clues.for_step(text, TRAIN, STEP, rejected=(), fuzzy=0.85) is None  # both stated already
    assert clues.for_step(skill, TRAIN, STEP, rejected=("gdpr", "broken"), fuzzy=0.85) is None
    # a second trial adds its rules to the section; a full section takes no more
    more = ([Example(f"voucher code {i} failed", "billing") for i in range(4)]
            + [Example(f"courier {i} never came", "shipping") for i in range(4)] + TRAIN)
    step = fails(("g1", "voucher expired", "billing"), ("g2", "voucher missing", "billing"),
                 ("h1", "courier late", "shipping"), ("h2", "courier rude", "shipping"))
    added, items, grown = clues.for_step(text, more, step + STEP, rejected=(), fuzzy=0.85)
    assert added.section == "Routing > Clue rules" and added.content == (
        '- If the task mentions "courier", answer shipping.\n- If the task mentions "voucher", answer billing.')
    assert items == ("h1", "h2", "g1", "g2") and clues.stated(grown) == {"gdpr", "broken", "voucher", "courier"}
    assert grown.index('"voucher"') > grown.index('"broken"')
    full = text + "".join(f'- If the task mentions "w{i}", answer legal.\n' for i in range(clues.MAX_RULES - 2))
    assert clues.edit(full, clues.mine(TRAIN, STEP)) is None


def test_a_trial_whose_rules_name_one_answer_is_not_offered():
    # a lone `answer L` rule is applied beyond its word by a small target: the rules of a trial
    # must name MIN_ANSWERS answers, however many failures the one answer's rules cover
    assert clues.MIN_ANSWERS == 2
    assert clues.for_step("# R\n", TRAIN, STEP[:2], rejected=(), fuzzy=0.85) is None  # gdpr -> legal only
    assert clues.for_step("# R\n", TRAIN, STEP[:2] + STEP[3:4], rejected=(), fuzzy=0.85) is None  # one broken failure
    edit, items, _ = clues.for_step("# R\n", TRAIN, STEP, rejected=(), fuzzy=0.85)
    assert clues.words_of(edit) == ("gdpr", "broken") and items == ("f1", "f2", "f3", "f4")
    # the section's room decides what is shown: one rule of room left is one answer, no trial
    full = "# R\n\n## Clue rules\n\n" + "".join(f'- If the task mentions "w{i}", answer legal.\n'
                                                for i in range(clues.MAX_RULES - 1))
    assert clues.for_step(full, TRAIN, STEP, rejected=(), fuzzy=0.85) is None


def test_the_failures_are_the_incumbents_known_train_results_each_item_once():
    from skillopt.tasks.task import Evaluation, Item, Trajectory

    train = [Item(id=f"t{i}", input={"q": e.text}, expected=e.answer, split="train") for i, e in enumerate(TRAIN)]
    train += [Item(id=f, input={"q": e.text}, expected=e.answer, split="train") for f, e in STEP]

    def traj(item_id: str, hard: float, error: str = "") -> Trajectory:
        return Trajectory(item_id=item_id, prompt="", output="", expected="", evaluation=Evaluation(hard, hard, ""),
                          error=error)

    render = lambda it: it.input["q"]  # noqa: E731
    # the step's batch has one failure of each clue; the earlier batches (cached) hold the second
    step_batch = [traj("f1", 0.0), traj("f3", 0.0), traj("f5", 1.0)]
    earlier = [traj("f2", 0.0), traj("f4", 0.0), traj("f1", 1.0)]
    assert clues.for_batch("# R\n", render, train, step_batch, (), 0.85) is None
    edit, items, _ = clues.for_batch("# R\n", render, train, [*step_batch, *earlier], (), 0.85)
    assert set(clues.words_of(edit)) == {"gdpr", "broken"} and set(items) == {"f1", "f2", "f3", "f4"}
    # an item's first result counts (the step's own), an errored result is no failure
    passed = [traj("f1", 1.0), traj("f3", 0.0), traj("f5", 1.0)]
    assert clues.for_batch("# R\n", render, train, [*passed, *earlier], (), 0.85) is None
    errored = [traj("f2", 0.0, error="timeout"), traj("f4", 0.0)]
    assert clues.for_batch("# R\n", render, train, [*step_batch, *errored], (), 0.85) is None


def test_clue_rules_are_tried_alone_after_a_step_and_a_rejected_word_is_not_offered_again(tmp_path):
    import sqlite3

    from skillopt.plan import Plan
    from skillopt.store.reader import Reader
    from tests.helpers import run_sim, sim_config

    db = tmp_path / "s.db"
    # sim-rulebook's answers are labels, so clue rules are on by default; at seed 9 one trial is
    # kept and one rejected (found by running it)
    run_id = run_sim(db, "seed=9")
    task = load_task("sim-rulebook")
    plan = Plan.make(task, sim_config("seed=9").for_task(task))
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT g.step, g.decision, s.decision, e.content, e.rationale, e.note, g.reason, "
                        "g.flipped_json FROM gate_decisions g "
                        "JOIN steps s ON s.run_id = g.run_id AND s.step = g.step "
                        "JOIN edits e ON e.run_id = g.run_id AND e.step = g.step AND e.source = 'rule' "
                        "WHERE g.run_id = ? AND g.kind = 'examples' ORDER BY g.step", (run_id,)).fetchall()
    assert rows, "a sim run with rejected steps tries clue rules"
    offered: set[str] = set()
    beyond = 0
    texts = {it.id: words(task.render(it)) for it in task.split("selection")}
    for step, decision, step_decision, content, rationale, note, reason, flipped in rows:
        assert step_decision in ("reject", "skip")
        named = [line.split('"')[1] for line in content.splitlines() if line.startswith("- If the task mentions")]
        assert named and len(named) <= clues.PER_TRIAL
        assert all(f"{w}: " in rationale and " train tasks answer " in rationale for w in named)
        assert "clue rules read off the train split's answers" in note and "gated alone" in note
        # the failures a trial covers were rolled out by this step or an earlier one (under the incumbent)
        items = note.split("for train items ", 1)[1].split(", gated alone", 1)[0].split(", ")
        assert set(items) <= {it.id for it in plan.rolled(0, step)}
        beyond += len(set(items) - {it.id for it in plan.batch(step)})
        assert not offered & set(named), "a word is offered once: stated when kept, remembered when rejected"
        offered |= set(named)
        # the reason says where the flipped items lie: on the tasks naming a rule's word or not
        mention = sum(bool(texts[f[0]] & set(named)) for f in json.loads(flipped))
        assert "on tasks that mention its words " in reason and reason.count(" won, ") == 2
        # judged alone at worked_examples_alpha, on the selection split only: its rules read every train label
        assert "all trials so far" not in reason and "train items" not in reason and "p <= 0.5" not in reason
        split = reason.rsplit("on tasks that mention its words ", 1)[1]
        m_won, m_lost = (int(x.split()[0]) for x in split.split(";")[0].split(", "))
        assert m_won + m_lost == mention
        current = conn.execute("SELECT content FROM skill_versions WHERE run_id = ? AND step = ? AND kind = 'current'",
                               (run_id, step)).fetchone()
        if decision.startswith("accept"):
            assert all(f'"{w}"' in current[0] for w in named)
    # the dashboard's reader names the trial
    reader = Reader(db)
    try:
        trials = {g["step"]: g["trial"] for g in reader.gate_decisions(run_id) if g["kind"] == "examples"}
    finally:
        reader.close()
    assert {step: "rule" for step, *_ in rows}.items() <= trials.items()
    assert {d.startswith("accept") for _, d, *_ in rows} == {True, False}
    assert beyond, "a trial covers failures of earlier batches, read from the cache"
    off = run_sim(db, "seed=9", "clue_rules=false")
    assert not conn.execute("SELECT 1 FROM edits WHERE run_id = ? AND source = 'rule'", (off,)).fetchall()
    conn.close()


def test_reach_splits_a_trials_flips_by_whether_the_task_names_a_rule_word():
    texts = {"a": frozenset({"gdpr", "data"}), "b": frozenset({"broken"}), "c": frozenset({"price"}),
             "d": frozenset({"refund"})}
    flips = [("a", 0.0, 1.0), ("b", 1.0, 0.0), ("c", 1.0, 0.0), ("d", 0.0, 1.0), ("e", 1.0, 0.0)]
    assert clues.reach(flips, texts, ("gdpr", "broken")) == (
        "on tasks that mention its words 1 won, 1 lost; on the others 1 won, 2 lost "
        "(the target applied the rules beyond their words)")
    assert clues.reach(flips[:2], texts, ("gdpr", "broken")).endswith("on the others 0 won, 0 lost")
    assert clues.reach([], texts, ("gdpr",)) == "on tasks that mention its words 0 won, 0 lost; on the others 0 won, 0 lost"

    # the trainer's wrapper: a rule trial's reason gets the split, another trial's decision is untouched
    from skillopt.gate import GateDecision
    from skillopt.patch import Edit
    from skillopt.tasks.task import Item

    d = GateDecision(False, 0.5, 0.4, -0.1, 0.9, 4, 4, 1, 2, False, "reject")
    items = [Item("a", {"q": "my gdpr data"}, "legal", "selection"), Item("c", {"q": "price"}, "billing", "selection")]
    rule = Edit(op="add", content='- If the task mentions "gdpr", answer legal.', source="rule")
    got = clues.explained(d, rule, [("a", 0.0, 1.0), ("c", 1.0, 0.0)], lambda it: it.input["q"], items)
    assert got.reason == "reject; on tasks that mention its words 1 won, 0 lost; on the others 0 won, 1 lost"
    example = Edit(op="add", content="- Task: x -> Answer: legal", source="example")
    assert clues.explained(d, example, [("a", 0.0, 1.0)], lambda it: it.input["q"], items) is d


def test_the_checkpoint_keeps_the_rule_trials_record_and_rejected_words():
    from skillopt.state import State

    s = State(step=3, skill="# S\n", current_score=0.5, best_skill="# S\n", best_score=0.5, best_step=0,
              epoch_start_skill="# S\n")
    assert s.record_of("rule") == (0, 0) and s.record_of("example") == (0, 0) and s.record_of("template") is None
    after = s.after_trial("rule", (4, 1), ("gdpr", "broken")).after_trial("example", (2, 2), ())
    assert (after.clues_record, after.clues_rejected, after.examples_record) == ((4, 1), ("gdpr", "broken"), (2, 2))
    assert s.after_trial("template", None, ()).template_tried and not s.template_tried
    back = State.from_json(after.to_json())
    assert back == after
    # a checkpoint written before clue rules existed resumes with none tried
    old = {k: v for k, v in after.to_json().items() if not k.startswith("clues_")}
    assert State.from_json(old).clues_record == (0, 0) and State.from_json(old).clues_rejected == ()


def test_the_checkpoint_keeps_when_the_incumbent_took_over():
    from skillopt.state import State

    s = State(step=3, skill="# S\n", current_score=0.5, best_skill="# S\n", best_score=0.5, best_step=0,
              epoch_start_skill="# S\n", skill_since=2)
    assert State.from_json(s.to_json()).skill_since == 2
    old = {k: v for k, v in s.to_json().items() if k != "skill_since"}  # written before the field existed
    assert State.from_json(old).skill_since == 0

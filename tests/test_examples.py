"""Worked examples (skillopt/examples.py): a step's failures as task -> right answer lines."""
from __future__ import annotations

import sqlite3

from skillopt import examples, transforms
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


def test_the_example_edit_ranks_first_and_a_step_without_failures_has_none():
    ex = Edit(op="add", content="- Task: t -> Answer: a", source="example")
    rule = Edit(op="add", content="- a rule", source="failure", support=3)
    pool = transforms.pipeline([transforms.Proposal(rule, 0), transforms.Proposal(ex, 1)], budget=1)
    assert pool.selected == (ex,)
    assert examples.proposals("# S\n", [STEP[3]], (), seed=1) == []


def test_a_run_with_worked_examples_gates_them_and_is_off_by_default(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "num_epochs=1", "worked_examples=true")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT step, idx, fate, status, gate, content FROM edits WHERE run_id = ? "
                        "AND source = 'example' ORDER BY step", (run_id,)).fetchall()
    assert rows and all(r[2] == "selected" and r[5].count("- Task: ") >= 1 for r in rows)
    assert all(r[4] in ("accepted", "rejected") for r in rows if r[3] == "applied")
    off = run_sim(db, "num_epochs=1")
    assert not conn.execute("SELECT 1 FROM edits WHERE run_id = ? AND source = 'example'", (off,)).fetchall()
    conn.close()

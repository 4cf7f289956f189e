"""The reply-template trial: the scorer's reply layout, gated alone once per run (template.py)."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from skillopt import template
from skillopt.models.providers import HandlerResult, register_provider
from skillopt.store.export import run_document
from skillopt.store.reader import Reader
from skillopt.tasks.loader import load_task
from tests.helpers import run_sim, write_task

SEED = "# Sums\n\nAdd the two numbers of the question.\n"


def test_the_edit_adds_the_section_once_and_only_with_a_layout():
    made = template.edit(SEED, "<working>\nAnswer: <number>")
    assert made.op == "add" and made.source == "template" and made.section == ""
    assert made.content == f"## {template.SECTION}\n\n{template.LEAD}\n\n<working>\nAnswer: <number>"
    assert template.edit(SEED, "  ") is None  # a scorer without a fixed layout: no trial
    edit, items, text = template.for_skill(SEED, "Answer: <number>", 0.9)
    assert items == () and text.startswith(SEED.rstrip()) and text.rstrip().endswith("Answer: <number>")
    assert template.edit(text, "Answer: <number>") is None  # the skill has the section already
    assert template.for_skill(text, "Answer: <number>", 0.9) is None


def write_sums_task(folder: Path) -> Path:
    """A numeric task whose scorer reads the number after "Answer:"."""
    return write_task(folder, "sums", "Add two numbers; the last line is Answer: <number>.",
                      'type = "numeric"\nmarker = "Answer:"', SEED, lambda i: (f"What is {i} plus {i + 3}?", 2 * i + 3))


def boxed_target(name, messages, settings, response_format):
    """Right sums, but in the scorer's form only when the skill shows the reply layout."""
    a, b = map(int, re.findall(r"\d+", messages[-1]["content"]))
    if f"## {template.SECTION}" in messages[0]["content"]:
        return HandlerResult(f"{a} + {b} = {a + b}\nAnswer: {a + b}", 10, 5)
    return HandlerResult(f"The sum is \\boxed{{{a + b}}}.", 10, 5)


def mute_optimizer(name, messages, settings, response_format):
    return HandlerResult("no edits today", 10, 3)  # unusable: every step has no candidate


def test_a_run_whose_replies_miss_the_format_learns_it_from_the_scorers_template(tmp_path):
    register_provider("boxed", boxed_target)
    register_provider("mute", mute_optimizer)
    task = write_sums_task(tmp_path / "sums")
    assert load_task(str(task)).scoring().template == "<working: a few short lines>\nAnswer: <number>"
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=boxed/t", "optimizer_model=mute/o", "num_epochs=1", "batch_size=4",
                     task=str(task))
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    trials = r.q("SELECT g.step, g.decision, g.wins, g.losses, e.source, e.content FROM gate_decisions g "
                 "JOIN edits e ON e.run_id = g.run_id AND e.step = g.step AND e.source IN ('template', 'example') "
                 "WHERE g.run_id = ? AND g.kind = 'examples' ORDER BY g.step", (run_id,))
    # the first step without a kept candidate tries the template, and it is tried once only
    assert trials[0]["source"] == "template" and [t["source"] for t in trials].count("template") == 1
    first = trials[0]
    assert first["decision"] in ("accept", "accept_new_best") and first["losses"] == 0 and first["wins"] >= 1
    assert first["content"].startswith(f"## {template.SECTION}")
    # its edit and log line name the template, not worked examples of no items
    notes = [e["note"] for e in r.edits(run_id, first["step"]) if e["source"] == "template"]
    # (the mute optimizer proposes nothing, so the step itself skipped)
    assert notes == ["the scorer's reply template, gated alone after the step's candidate was skipped"]
    logged = [e["message"] for e in r.q("SELECT message FROM events WHERE run_id = ? AND step = ?",
                                         (run_id, first["step"]))]
    assert f"step {first['step']}: reply template {first['decision']}" in logged
    tests = {t["which"]: (t["score"], t["hard"]) for t in r.q("SELECT which, score, hard FROM tests WHERE run_id = ?",
                                                              (run_id,))}
    # gated on mixed: a scorer with a marker gives the right number without it soft 0.5, mixed 0.25
    assert tests["seed"] == (0.25, 0.0) and tests["best"] == (1.0, 1.0)
    assert f"## {template.SECTION}" in (r.best_skill(run_id) or "")
    # run.json says which change each step's trial tried
    tried = [s["worked_examples"] for s in run_document(r, run_id)["steps"] if s["worked_examples"]]
    # then the seed's blocks, each removed once (at most seed_ablations), then worked examples
    rest = [t["trial"] for t in tried[1:]]
    assert tried[0]["trial"] == "template" and rest.count("ablation") <= 3
    assert rest == ["ablation"] * rest.count("ablation") + ["example"] * rest.count("example")
    # the worked-examples trials after it judge their own record: the template's wins are not in it
    later = r.q("SELECT reason FROM gate_decisions g JOIN edits e ON e.run_id = g.run_id AND e.step = g.step "
                "AND e.source = 'example' WHERE g.run_id = ? AND g.kind = 'examples'", (run_id,))
    for row in later:
        assert "all trials so far" in row["reason"]
        won = int(re.search(r"all trials so far: (\d+) items won", row["reason"]).group(1))
        assert won < first["wins"] or first["wins"] == 0


def test_no_template_trial_when_the_scorer_has_no_layout(tmp_path):
    db = tmp_path / "s.db"
    task = write_sums_task(tmp_path / "sums")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('type = "numeric"\nmarker = "Answer:"', 'type = "contains"'))
    register_provider("boxed", boxed_target)
    register_provider("mute", mute_optimizer)
    assert load_task(str(task)).scoring().template == ""
    run_id = run_sim(db, "target_model=boxed/t", "optimizer_model=mute/o", "num_epochs=1", "batch_size=4",
                     task=str(task))
    conn = sqlite3.connect(db)
    assert not conn.execute("SELECT 1 FROM edits WHERE run_id = ? AND source = 'template'", (run_id,)).fetchall()
    conn.close()

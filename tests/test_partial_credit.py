"""The "auto" gate metric end to end: a task whose scorer gives partial credit is gated on mixed,
so an edit that gets more fields right, but no item wholly right yet, is kept (config.for_task)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillopt.cli import main
from skillopt.models.providers import HandlerResult, register_provider
from skillopt.store.export import run_document
from skillopt.store.reader import Reader
from skillopt.tasks.loader import load_task
from tests.helpers import run_sim, write_task

RULE = "- Copy the b code from the text as field b."


def write_codes_task(folder: Path) -> Path:
    """Three fields to extract; the seed skill says nothing about b, and c is never right."""
    return write_task(folder, "codes", "Extract the codes a, b and c as JSON.",
                      'type = "json_fields"\nfields = ["a", "b", "c"]', "# Codes\n\nReply with one JSON object.\n",
                      lambda i: (f"a code A{i}, b code B{i}, c code C{i}", {"a": f"A{i}", "b": f"B{i}", "c": f"C{i}"}))


def fields_target(name, messages, settings, response_format):
    """a always right; b right only when the skill says how; c always wrong: never wholly right."""
    i = re.search(r"A(\d+)", messages[-1]["content"]).group(1)
    b = f"B{i}" if RULE in messages[0]["content"] else "?"
    return HandlerResult(json.dumps({"a": f"A{i}", "b": b, "c": "?"}), 10, 5)


def rule_optimizer(name, messages, settings, response_format):
    edit = {"op": "add", "section": "", "line": 0, "rationale": "b is left out", "content": RULE}
    return HandlerResult(json.dumps({"summary": "field b is never copied", "edits": [edit]}), 10, 5)


register_provider("pcfields", fields_target)
register_provider("pcrule", rule_optimizer)


def _run(tmp_path: Path, *overrides: str) -> tuple[Reader, str]:
    task = write_codes_task(tmp_path / "codes")
    assert load_task(str(task)).partial_credit
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=pcfields/t", "optimizer_model=pcrule/o", "num_epochs=1", "batch_size=4",
                     "use_slow_update=false", "use_meta_skill=false", *overrides, task=str(task))
    return Reader(db), run_id


def test_an_edit_that_gets_more_fields_right_is_kept_on_the_auto_metric(tmp_path, capsys):
    r, run_id = _run(tmp_path)
    assert json.loads(r.run(run_id)["config_json"])["gate_metric"] == "mixed"  # stored resolved
    first = r.q("SELECT decision, wins, losses, current_score, candidate_score FROM gate_decisions "
                "WHERE run_id = ? AND kind = 'step' ORDER BY step LIMIT 1", (run_id,))[0]
    # every selection item goes from 1 of 3 fields to 2 of 3 (mixed 1/6 -> 1/3), none wholly right
    assert first["decision"] in ("accept", "accept_new_best") and first["losses"] == 0 and first["wins"] >= 1
    assert round(first["current_score"], 6) == round(1 / 6, 6) and first["candidate_score"] > first["current_score"]
    assert RULE in (r.best_skill(run_id) or "")
    tests = {t["which"]: (t["hard"], round(t["soft"], 6)) for t in r.q(
        "SELECT which, hard, soft FROM tests WHERE run_id = ?", (run_id,))}
    assert tests["seed"] == (0.0, round(1 / 3, 6)) and tests["best"] == (0.0, round(2 / 3, 6))
    # `show` and run.json name the metric and give hard accuracy beside the mixed scores
    assert main(["show", run_id, "--db", str(tmp_path / "s.db")]) == 0
    out = capsys.readouterr().out
    assert "test (mixed): seed 0.167, best 0.333, final 0.333, none 0.167" in out
    assert "test hard: seed 0.000, best 0.000, final 0.000, none 0.000" in out
    doc = run_document(r, run_id)
    assert doc["test"]["best"] == pytest.approx(1 / 3) and doc["test_items"]["best"]["hard"] == 0.0
    assert doc["test_items"]["best"]["soft"] == pytest.approx(2 / 3)


def test_the_hard_metric_cannot_see_that_progress(tmp_path):
    r, run_id = _run(tmp_path, "gate_metric=hard")
    assert json.loads(r.run(run_id)["config_json"])["gate_metric"] == "hard"
    steps = r.q("SELECT decision, wins, losses FROM gate_decisions WHERE run_id = ? AND kind = 'step'", (run_id,))
    assert steps and all(s["decision"] == "reject" and s["wins"] == s["losses"] == 0 for s in steps)
    assert RULE not in (r.best_skill(run_id) or "")

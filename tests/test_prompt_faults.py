"""A prompt longer than a model's context window fails that call, never the run
(models/providers.PROMPT_KINDS): a skill that grew too long for the target is a rejected
candidate, and reflections whose prompt overflows are unusable replies, so the step is skipped."""
from __future__ import annotations

import json

from skillopt.models.providers import HandlerResult, ProviderError, register_provider
from skillopt.store.reader import Reader
from tests.helpers import run_sim

LONG = "- " + "Remember every detail of the order. " * 15  # within the 600 characters an edit may have
# The scripted target's context: sim-rulebook's seed skill (about 600 chars) with its longest task
# (about 500) fits; with the long rule, even its shortest task (about 330) does not.
CONTEXT_CHARS = 1300


def short_context_target(name, messages, settings, response_format):
    if len(messages[0]["content"]) + len(messages[-1]["content"]) > CONTEXT_CHARS:
        raise ProviderError("context", "Requested tokens (4126) exceed context window of 4096")
    return HandlerResult("standard", 10, 2)


def long_rule_optimizer(name, messages, settings, response_format):
    edit = {"op": "add", "section": "", "line": 0, "rationale": "more detail", "content": LONG}
    return HandlerResult(json.dumps({"summary": "add detail", "edits": [edit]}), 10, 5)


def overflowing_optimizer(name, messages, settings, response_format):
    raise ProviderError("context", "Requested tokens (9000) exceed context window of 4096")


register_provider("ctxtarget", short_context_target)
register_provider("ctxlong", long_rule_optimizer)
register_provider("ctxover", overflowing_optimizer)
ONE_EPOCH = ("num_epochs=1", "batch_size=10", "use_slow_update=false", "worked_examples=false",
             "clue_rules=false")


def test_a_candidate_too_long_for_the_target_is_rejected_and_the_run_completes(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=ctxtarget/t", "optimizer_model=ctxlong/o", "minibatch_check=false",
                     *ONE_EPOCH)
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    gates = r.q("SELECT decision, complete, n_errors FROM gate_decisions WHERE run_id = ? AND kind = 'step'",
                (run_id,))
    assert gates and all(g["decision"] == "reject" and not g["complete"] and g["n_errors"] > 0 for g in gates)
    errors = r.q("SELECT error FROM rollouts WHERE run_id = ? AND error != ''", (run_id,))
    assert errors and all(e["error"].startswith("context:") for e in errors)
    assert LONG not in (r.best_skill(run_id) or "")
    tests = {t["which"]: t for t in r.q("SELECT which, n_errors, complete FROM tests WHERE run_id = ?", (run_id,))}
    assert tests["best"]["n_errors"] == 0 and tests["best"]["complete"]  # the best skill fits


def test_reflections_whose_prompt_overflows_skip_the_step_instead_of_failing_the_run(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "optimizer_model=ctxover/o", *ONE_EPOCH)
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    steps = r.q("SELECT decision FROM steps WHERE run_id = ?", (run_id,))
    assert steps and all(s["decision"] == "skip" for s in steps)
    reflections = r.q("SELECT ok, error FROM reflections WHERE run_id = ?", (run_id,))
    assert reflections and all(not x["ok"] and x["error"].startswith("context:") for x in reflections)


def every_prompt_too_long(name, messages, settings, response_format):
    raise ProviderError("context", "Requested tokens (5000) exceed context window of 4096")


def one_prompt_too_long(name, messages, settings, response_format):
    if messages[-1]["content"] == LONGEST[0]:
        raise ProviderError("context", "Requested tokens (4200) exceed context window of 4096")
    return HandlerResult("standard", 10, 2)


register_provider("ctxnone", every_prompt_too_long)
register_provider("ctxone", one_prompt_too_long)
LONGEST: list[str] = []


def test_a_task_whose_prompts_the_target_cannot_take_fails_at_the_seed_with_one_line(tmp_path):
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=ctxnone/t", *ONE_EPOCH)
    r = Reader(db)
    run = r.run(run_id)
    assert run["status"] == "failed"
    assert run["reason"].startswith("the seed skill on the selection split: ")
    assert "prompts were longer than target ctxnone/t's context window" in run["reason"]
    assert "resuming will not help" in run["reason"] and "\n" not in run["reason"]
    assert not r.q("SELECT 1 FROM steps WHERE run_id = ?", (run_id,))  # no step paid for a run that cannot work
    assert not r.q("SELECT 1 FROM llm_calls WHERE run_id = ? AND role = 'optimizer'", (run_id,))


def test_a_rare_prompt_too_long_for_the_target_leaves_the_run_going(tmp_path):
    from skillopt.tasks.loader import load_task
    task = load_task("sim-rulebook")
    LONGEST[:] = [max((task.render(it) for it in task.split("selection")), key=len)]
    db = tmp_path / "s.db"
    run_id = run_sim(db, "target_model=ctxone/t", *ONE_EPOCH)
    r = Reader(db)
    assert r.run(run_id)["status"] == "completed"
    errors = r.q("SELECT error FROM rollouts WHERE run_id = ? AND error != ''", (run_id,))
    assert errors and all(e["error"].startswith("context:") for e in errors)  # within max_error_rate

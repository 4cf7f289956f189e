"""End-to-end training on the simulated world: learning, records, resume and the gate."""
from __future__ import annotations

import json
import sqlite3

from tests.helpers import run_sim, sim_config
from skillopt.models.limits import Meter
from skillopt.models.llm import LLM, build_models
from skillopt.store.reader import Reader
from skillopt.store.writer import Store
from skillopt.tasks.loader import load_task
from skillopt.trainer import Hooks, fit


def test_default_run_improves_and_gate_rejects(sim_run):
    db, run_id = sim_run
    r = Reader(db)
    run = r.run(run_id)
    assert run["status"] == "completed"
    tests = r.tests(run_id)
    assert tests["best"]["score"] > tests["seed"]["score"] + 0.2
    steps = r.steps(run_id)
    decisions = [s["decision"] for s in steps]
    assert len(steps) == run["total_steps"] == 9  # 120 train items / batch 40 = 3 steps x 3 epochs
    assert decisions.count("accept_new_best") >= 1
    # The simulated optimizer proposes harmful rules on purpose: each is either dropped before
    # the gate because the train data contradicts it, or rejected by the gate.
    contradicted = [e for e in r.edits(run_id) if e["fate"] == "dropped" and e["note"].startswith("contradicted")]
    assert "reject" in decisions or contradicted
    # every step has a stored skill version, and the best is the one with the best score
    versions = r.versions(run_id)
    assert {v["step"] for v in versions if v["kind"] == "current"} == set(range(1, 10))
    best_step = run["best_step"]
    assert r.version(run_id, best_step, "current") == r.best_skill(run_id)


def test_slow_update_and_meta_skill_at_epoch_two(sim_run):
    db, run_id = sim_run
    r = Reader(db)
    slow = r.slow_updates(run_id)
    assert [u["epoch"] for u in slow] == [2, 3]  # epoch >= 2 only
    assert slow[0]["decision"] in ("accept", "accept_new_best", "reject", "skip")
    assert slow[0]["guidance"].strip()
    meta = r.meta_skills(run_id)
    assert meta and meta[0]["epoch"] == 2 and meta[0]["content"].strip()


def _slow_gates(db, run_id: str) -> list[tuple[int, int, str, set, set]]:
    """Each gated slow update: its step, items, reason, the candidate's train items and the sample."""
    conn = sqlite3.connect(db)
    try:
        def ids(step: int, purpose: str) -> set:
            return {r[0] for r in conn.execute("SELECT item_id FROM rollouts WHERE run_id = ? AND step = ? AND "
                                               "split = 'train' AND purpose = ?", (run_id, step, purpose))}
        rows = conn.execute("SELECT step, n_items, reason FROM gate_decisions WHERE run_id = ? AND "
                            "kind = 'slow_update' ORDER BY step", (run_id,)).fetchall()
        return [(s, n, why, ids(s, "slow_update_candidate"), ids(s, "slow_cur")) for s, n, why in rows]
    finally:
        conn.close()


def test_the_slow_updates_gate_also_counts_the_train_items_outside_its_sample(sim_run, tmp_path):
    db, run_id = sim_run
    n_sel = len(load_task("sim-rulebook").split("selection"))
    gates = _slow_gates(db, run_id)
    assert gates  # the fixture run gates a slow update at epochs 2 and 3
    for step, n, reason, candidate, sample in gates:
        assert "train items the change was not made from" in reason and n > n_sel, (step, reason)
        assert sample and not candidate & sample  # never an item the guidance was written from
    assert any(candidate for *_, candidate, _ in gates)  # a gate may stop early, before any train item
    off = run_sim(tmp_path / "off.db", "num_epochs=3", "slow_train_items=false")
    gated = _slow_gates(tmp_path / "off.db", off)
    assert gated and all(n == n_sel and not candidate and "train items" not in why
                         for _, n, why, candidate, _ in gated)


def test_gate_ties_reject_and_scores_are_consistent(sim_run):
    db, run_id = sim_run
    for s in Reader(db).steps(run_id):
        if s["decision"] == "reject":
            assert s["candidate_score"] <= s["current_score"]
        if s["decision"].startswith("accept"):
            assert s["candidate_score"] > s["current_score"]


class SpyLLM:
    """Wraps the optimizer to record every prompt it is sent."""

    def __init__(self, inner: LLM, prompts: list):
        self.inner, self.prompts = inner, prompts
        self.model, self.role, self.settings = inner.model, inner.role, inner.settings

    def complete(self, messages, **kw):
        self.prompts.append((kw.get("step"), kw.get("stage"), messages))
        return self.inner.complete(messages, **kw)

    def complete_json(self, messages, **kw):
        self.prompts.append((kw.get("step"), kw.get("stage"), messages))
        return self.inner.complete_json(messages, **kw)

    def prompt_room(self):
        return self.inner.prompt_room()

    def prompt_tokens(self, messages):
        return self.inner.prompt_tokens(messages)

    def useful_concurrency(self):
        return self.inner.useful_concurrency()


def fit_sim(db, config, run_id: str, *, wrap=lambda models: models, callbacks=()) -> str:
    """Train sim-rulebook by calling fit directly (models wrapped, callbacks beside the store)."""
    store = Store(db)
    task = load_task("sim-rulebook")
    store.create_run(run_id=run_id, name=run_id, task=task.name, task_path=str(task.path),
                     config_json=config.to_json(), simulated=True, items=[], seed_skill=task.seed_skill)
    try:
        return fit(task, config, wrap(build_models(config, store, run_id, Meter())),
                   Hooks(callbacks=(store, *callbacks), cache=store), run_id=run_id)
    finally:
        store.close()


def test_meta_skill_reaches_next_epoch_prompts(tmp_path):
    prompts: list = []
    spy = lambda m: type(m)(target=m.target, optimizer=SpyLLM(m.optimizer, prompts), judge=m.judge)  # noqa: E731
    status = fit_sim(tmp_path / "s.db", sim_config("num_epochs=3"), "spy", wrap=spy)
    assert status == "completed"
    meta = Reader(tmp_path / "s.db").meta_skills("spy")
    epoch2 = next(m["content"] for m in meta if m["epoch"] == 2)
    later = [json.dumps(msgs) for step, stage, msgs in prompts if stage == "reflect" and step > 6]
    earlier = [json.dumps(msgs) for step, stage, msgs in prompts if stage == "reflect" and step <= 6]
    needle = epoch2.strip().splitlines()[0][:60]
    assert later and all(needle in json.dumps(p) for p in later[:1])
    assert not any(needle in p for p in earlier)


def test_each_checkpoint_says_since_when_its_incumbent_holds(tmp_path):
    # clue rules read the incumbent's results on the train batches rolled out since it took over
    states = []
    collect = lambda e: states.append(e.state) if getattr(e, "state", None) is not None else None  # noqa: E731
    assert fit_sim(tmp_path / "s.db", sim_config("seed=6"), "since", callbacks=(collect,)) == "completed"
    since, skill, changes = 0, states[0].skill, 0
    for state in states:
        if state.skill != skill:
            since, skill, changes = state.step, state.skill, changes + 1
        assert state.skill_since == since, state.step
    assert changes >= 2  # a step, a trial or the slow update took over more than once


def test_same_seed_same_run(tmp_path):
    a = run_sim(tmp_path / "a.db", "num_epochs=1")
    b = run_sim(tmp_path / "b.db", "num_epochs=1")
    ra, rb = Reader(tmp_path / "a.db"), Reader(tmp_path / "b.db")
    key = lambda r, i: [(s["step"], s["decision"], s["candidate_score"]) for s in r.steps(i)]
    assert key(ra, a) == key(rb, b)
    assert ra.best_skill(a) == rb.best_skill(b)


def test_eval_cache_never_scores_a_skill_twice_on_an_item(sim_run, tmp_path):
    shared, run_id = sim_run
    db = tmp_path / "copy.db"  # the second run goes into a copy: the session's fixture store keeps one run
    with sqlite3.connect(shared) as a, sqlite3.connect(db) as b:
        a.backup(b)
    r = Reader(db)
    rows = r.q("SELECT skill_sha, item_id, COUNT(*) AS n FROM rollouts WHERE run_id = ? AND cached = 0 "
               "GROUP BY skill_sha, item_id HAVING n > 1", (run_id,))
    assert rows == []
    # and a second identical run is served from the cache: no new target call
    usage_before = r.usage(run_id)["target_calls"]
    assert usage_before > 0
    run2 = run_sim(db, "num_epochs=3")
    assert Reader(db).usage(run2)["target_calls"] == 0


def test_dead_target_fails_the_run_with_a_reason(tmp_path):
    run_id = run_sim(tmp_path / "d.db", "num_epochs=1", "target_model=sim/target?error=1", "max_retries=0")
    run = Reader(tmp_path / "d.db").run(run_id)
    assert run["status"] == "failed"
    assert "rollouts" in run["reason"] and "failed" in run["reason"]


def test_budget_exhausted_keeps_best_skill(tmp_path):
    run_id = run_sim(tmp_path / "b.db", "num_epochs=2", "max_calls=150")
    r = Reader(tmp_path / "b.db")
    run = r.run(run_id)
    assert run["status"] == "budget_exhausted"
    assert r.usage(run_id)["target_calls"] + r.usage(run_id)["optimizer_calls"] <= 150 + 16
    assert r.best_skill(run_id)


def test_paired_gate_run_completes_and_saves_calls(tmp_path):
    strict = run_sim(tmp_path / "s.db", "num_epochs=2", "use_cache=false")
    paired = run_sim(tmp_path / "p.db", "num_epochs=2", "gate_mode=paired")
    rs, rp = Reader(tmp_path / "s.db"), Reader(tmp_path / "p.db")
    assert rp.run(paired)["status"] == "completed"
    gates = rp.gate_decisions(paired)
    assert gates and all(g["mode"] == "paired" for g in gates)
    assert any(g["early_stop"] for g in gates)
    assert rp.usage(paired)["target_calls"] < rs.usage(strict)["target_calls"]


def test_whole_split_scores_restates_an_early_stopped_paired_decision():
    from skillopt.gate import GateDecision
    from skillopt.tasks.task import Evaluation, Trajectory
    from skillopt.validation import whole_split_scores

    incumbent = {"a": 0.0, "b": 1.0, "c": 1.0, "d": 0.0}
    seen = [Trajectory("a", "", "", "", Evaluation(1.0, 1.0, "")), Trajectory("d", "", "", "", Evaluation(0.0, 0.0, ""))]
    early = GateDecision(accept=False, current_score=0.0, candidate_score=0.5, margin=0.5, p_value=0.5, n_items=4,
                         n_evaluated=2, wins=1, losses=0, early_stop=True, reason="early")
    d = whole_split_scores(early, incumbent, seen, lambda t: t.evaluation.hard)
    assert d.current_score == 0.5  # the incumbent's whole-split mean, not its mean on the 2 items seen
    assert d.candidate_score == 0.75 and d.margin == 0.25  # one win over 4 items; unseen items unchanged
    assert (d.accept, d.n_evaluated, d.early_stop) == (False, 2, True)  # the decision itself is untouched
    assert whole_split_scores(early, {}, seen, lambda t: 1.0) is early


# --- the rejected-edit buffer and the record of dropped edits, with a scripted optimizer ----------

# Rules unlike one another (dedupe would fold near-duplicates into one edit).
ALASKA, HAWAII, GUAM, PERU = ("- Greet every customer by name.", "- Thank the customer at the end.",
                              "- Keep replies short and plain.", "- Never mention internal codes.")
TOO_LONG = "- " + "Be polite. " * 80


def _proposals(messages) -> str:
    """Step 1: two edits (a multi-edit candidate); step 2: one of them again, alone; step 3:
    that edit once more, two new ones, and edits the reflection must drop. The step is read off
    the rejected-edit buffer the prompt shows. The rules change no answer, so the gate ties and
    rejects every candidate."""
    from skillopt.models.providers import HandlerResult

    user = messages[1]["content"]
    if ", rejected alone)" in user:
        contents = [ALASKA, GUAM, PERU, HAWAII]
        extra = [{"op": "replace", "section": "", "line": 999, "content": "- x", "rationale": ""},
                 {"op": "add", "section": "", "line": 0, "content": TOO_LONG, "rationale": ""}]
    else:
        contents, extra = ([ALASKA] if "rejected together with" in user else [ALASKA, HAWAII]), []
    edits = [{"op": "add", "section": "", "line": 0, "content": c, "rationale": "r"} for c in contents]
    return HandlerResult(json.dumps({"summary": "s", "edits": edits + extra}), 10, 5)


def test_a_multi_edit_rejection_blocks_no_edit_a_lone_rejection_does(tmp_path):
    from skillopt.models.providers import register_provider

    register_provider("t3script", lambda name, messages, settings, fmt: _proposals(messages))
    db = tmp_path / "r.db"
    # without trials: a trial after each rejected step would add its own edit rows
    run_id = run_sim(db, "optimizer_model=t3script/x", "num_epochs=1", "max_steps_per_epoch=3",
                     "lr_scheduler=constant", "learning_rate=2", "minibatch_size=20", "worked_examples=false",
                     "clue_rules=false", "seed_ablations=0")
    r = Reader(db)
    assert [s["decision"] for s in r.steps(run_id)] == ["reject", "reject", "reject"]
    buffer = [(b["step"], json.loads(b["edit_json"])["content"],
               [c["content"] for c in json.loads(b["companions_json"])]) for b in r.rejected_buffer(run_id)]
    assert buffer[:3] == [(1, ALASKA, [HAWAII]), (1, HAWAII, [ALASKA]), (2, ALASKA, [])]
    # Step 2: rejected together with another edit at step 1, the edit was proposed and tried again.
    assert [(e["content"], e["fate"], e["status"]) for e in r.edits(run_id, 2) if e["fate"] == "selected"] == [
        (ALASKA, "selected", "applied")]
    # Step 3: rejected alone at step 2, it is blocked and stored as dropped, with its reason.
    step3 = r.edits(run_id, 3)
    dropped = {e["content"]: e["note"] for e in step3 if e["fate"] == "dropped"}
    assert dropped[ALASKA] == "repeat_of_rejected: repeats an edit the gate rejected alone at step 2"
    assert dropped[TOO_LONG.strip()] == f"too_long: content of {len(TOO_LONG.strip())} characters exceeds 600"
    assert dropped["- x"].startswith("bad_anchor: line 999 does not exist")
    kept = {e["content"]: (e["fate"], e["note"]) for e in step3 if e["fate"] in ("selected", "clipped")}
    assert kept[GUAM][0] == kept[PERU][0] == "selected" and kept[HAWAII] == ("clipped", "over the step's budget of 2")
    assert "end of body" in kept[GUAM][1]  # a selected edit's note says where it was applied
    merged = [e for e in step3 if e["fate"] == "merged"]  # the second minibatch proposed the same edits
    assert merged and all(e["note"].startswith("near-duplicate of: ") for e in merged)
    assert r.steps(run_id)[2]["n_proposed"] == len(step3)


def test_a_seed_worse_than_no_skill_is_not_where_training_starts(tmp_path):
    """The simulated target follows a wrong rule it is given (5% right) more badly than it
    guesses with no rule (25%): a seed of wrong rules scores below no skill, so the run
    starts from no skill, and says so."""
    from skillopt import runner
    from skillopt.store.writer import Store
    from skillopt.tasks.loader import load_task
    from tests.helpers import sim_config

    wrong = load_task("sim-rulebook").seed_skill.replace(
        "- When nothing special applies, the route is standard.",
        "- Orders to Alaska or Hawaii go ground.\n- PO Box addresses go courier.\n"
        "- Lithium batteries go air.\n- Saturday delivery goes postal.")
    db = tmp_path / "s.db"
    store = Store(db)
    run_id, status = runner.start(store, "sim-rulebook", sim_config("num_epochs=1", "max_steps_per_epoch=1",
                                                                    "selection_size=40"), seed_skill=wrong)
    store.close()
    r = Reader(db)
    state = json.loads(r.run(run_id)["state_json"])
    events = " | ".join(e["message"] for e in r.events(run_id, limit=200))
    assert status == "completed" and "training starts from no skill: it beats the seed" in events
    assert r.version(run_id, 0, "seed") == wrong  # the user's seed is kept and tested as given
    assert wrong not in state["best_skill"]
    baseline = r.q("SELECT COUNT(*) AS n FROM rollouts WHERE run_id = ? AND purpose = 'baseline'", (run_id,))
    assert baseline[0]["n"] == 40


def test_a_seed_at_least_as_good_as_no_skill_is_kept(sim_run):
    db, run_id = sim_run
    events = " | ".join(e["message"] for e in Reader(db).events(run_id, limit=500))
    assert "training starts from the seed" in events

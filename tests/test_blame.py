"""blame: per-line origin of a skill over its version chain (synthetic chains and a real simulated run)."""
from __future__ import annotations

from skillopt.skill import sha
from skillopt.ui.blame import BlameLine, EditRef, Version, VersionRef, blame, incumbent_chain, summary

SEED = "# Skill\n\n## Rules\n- be brief\n"
STEP1 = "# Skill\n\n## Rules\n- be brief\n- dates use ISO format\n- amounts in EUR\n"
STEP3 = "# Skill\n\n## Rules\n- be brief and exact\n- dates use ISO format\n- amounts in EUR\n"
EPOCH = STEP3 + "\n<!-- SLOW_UPDATE_START -->\nprefer short rules\n<!-- SLOW_UPDATE_END -->\n"


def test_chain_keeps_only_changes_and_ends_at_the_final_sha():
    refs = [VersionRef(0, "seed", "a"), VersionRef(1, "candidate", "b"), VersionRef(1, "current", "b"),
            VersionRef(2, "current", "b"), VersionRef(3, "epoch_end", "c"), VersionRef(3, "current", "b"),
            VersionRef(4, "current", "d")]
    chain = incumbent_chain(refs)
    assert [(r.step, r.kind) for r in chain] == [(0, "seed"), (1, "current"), (3, "epoch_end"), (4, "current")]
    assert [(r.step, r.kind) for r in incumbent_chain(refs, upto_step=3)][-1] == (3, "epoch_end")
    assert [(r.step, r.kind) for r in incumbent_chain(refs, upto_step=3, final_sha="b")][-1] == (1, "current")


def test_blame_attributes_lines_to_steps_and_edits():
    chain = [Version(0, "seed", SEED), Version(1, "current", STEP1), Version(3, "current", STEP3),
             Version(3, "epoch_end", EPOCH)]
    edits = [EditRef(1, 0, "add", "- dates use ISO format"), EditRef(1, 2, "add", "- amounts in EUR"),
             EditRef(3, 1, "replace", "- be brief and exact", target="- be brief")]
    deltas = {(1, "current"): 0.25, (3, "current"): 0.05, (3, "epoch_end"): 0.1}
    lines = blame(chain, EPOCH, edits, deltas)
    assert [ln.text for ln in lines] == EPOCH.splitlines()
    by_text = {ln.text: ln for ln in lines}
    assert by_text["# Skill"] == BlameLine(1, "# Skill", 0, "seed", None, "", None)
    assert (by_text["- dates use ISO format"].step, by_text["- dates use ISO format"].edit_idx) == (1, 0)
    assert (by_text["- amounts in EUR"].edit_idx, by_text["- amounts in EUR"].score_delta) == (2, 0.25)
    rewritten = by_text["- be brief and exact"]
    assert (rewritten.step, rewritten.kind, rewritten.edit_idx, rewritten.edit_op) == (3, "current", 1, "replace")
    assert (by_text["prefer short rules"].kind, by_text["prefer short rules"].score_delta) == ("epoch_end", 0.1)
    assert summary(lines) == [(0, "seed", 2), (1, "current", 2), (3, "current", 1), (3, "epoch_end", 3)]


def test_unpinnable_lines_and_inconsistent_final_text():
    chain = [Version(0, "seed", SEED), Version(1, "current", STEP1)]
    lines = blame(chain, STEP1, [EditRef(1, 0, "add", "something unrelated entirely")])
    assert all(ln.edit_idx is None for ln in lines if ln.step == 1)  # nothing resembles the content
    odd = blame(chain, STEP1 + "- a line no version has\n")
    assert (odd[-1].kind, odd[-1].step, odd[-1].text) == ("unknown", 1, "- a line no version has")
    assert blame([], "x\ny")[0].kind == "unknown"


def test_blame_of_a_real_run(sim_run):
    from skillopt.store.reader import Reader

    db, run_id = sim_run
    r = Reader(db)
    try:
        run = r.run(run_id)
        best = r.best_skill(run_id)
        refs = [VersionRef(v["step"], v["kind"], v["sha"]) for v in r.versions(run_id)]
        chain = [Version(x.step, x.kind, r.version(run_id, x.step, x.kind))
                 for x in incumbent_chain(refs, run["best_step"], sha(best))]
        applied = r.applied_edits(run_id)
        steps = {s["step"]: s for s in r.steps(run_id)}
        deltas = {(n, "current"): s["candidate_score"] - s["current_score"] for n, s in steps.items()
                  if s["candidate_score"] is not None}
        lines = blame(chain, best, [EditRef(e["step"], e["idx"], e["op"], e["content"]) for e in applied], deltas)
    finally:
        r.close()
    assert chain[0].kind == "seed" and chain[-1].text == best
    assert [ln.text for ln in lines] == best.splitlines()
    seed_lines = set(chain[0].text.splitlines())
    learned = [ln for ln in lines if ln.kind != "seed"]
    assert learned, "the fixture run accepted edits, so the best skill has learned lines"
    for ln in learned:
        assert 1 <= ln.step <= run["best_step"]
        assert steps[ln.step]["decision"].startswith("accept")
        assert ln.score_delta == steps[ln.step]["candidate_score"] - steps[ln.step]["current_score"] > 0
        if ln.text.strip():
            pinned = [e for e in applied if e["step"] == ln.step and e["idx"] == ln.edit_idx]
            assert pinned and ln.text.strip() in pinned[0]["content"]
    assert all(ln.text in seed_lines for ln in lines if ln.kind == "seed")

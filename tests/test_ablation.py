"""Seed ablation (skillopt/ablation.py): the seed's blocks, each removed once, gated alone."""
from __future__ import annotations

import json

from skillopt import ablation
from skillopt.skill import SLOW_END, SLOW_START
from skillopt.store.reader import Reader

SEED = ("# Waste sorting\n\nYou answer residents' questions.\nPick the one bin that fits.\n\n## Bins\n"
        "- paper: paper and cardboard\n- packaging: plastic and metal packaging, drinks cartons\n"
        "- glass: glass\n\nAnswer with the bin name only.\n")
BINS = "- paper: paper and cardboard\n- packaging: plastic and metal packaging, drinks cartons\n- glass: glass"


def test_blocks_are_runs_of_lines_between_blank_lines_and_headings():
    assert ablation.blocks(SEED) == ("You answer residents' questions.\nPick the one bin that fits.", BINS,
                                     "Answer with the bin name only.")
    assert ablation.blocks("# Title\n## Only headings\n") == ()
    fenced = "## Example\n```sh\n# a comment, not a heading\nrun it\n```\n"
    assert ablation.blocks(fenced) == ("```sh\n# a comment, not a heading\nrun it\n```",)
    spaced = "Intro.\n\n```py\nfirst()\n\nsecond()\n```\nAfter the code.\n\nLast."
    assert ablation.blocks(spaced) == ("Intro.", "```py\nfirst()\n\nsecond()\n```\nAfter the code.", "Last.")
    crlf = SEED.replace("\n", "\r\n")
    assert [b.replace("\r\n", "\n") for b in ablation.blocks(crlf)] == list(ablation.blocks(SEED))


def test_a_protected_block_is_never_a_block():
    skill = SEED + f"\n{SLOW_START}\n- guidance the slow update wrote\n{SLOW_END}\n"
    assert not any("guidance" in b for b in ablation.blocks(skill))


def test_the_longest_untried_block_is_removed_first_each_once():
    edit, items, text = ablation.for_step(SEED, SEED, (), 3, 0.85)
    assert (edit.op, edit.source, edit.target, items) == ("delete", "ablation", BINS, ())
    assert BINS not in text and "## Bins" in text and "Answer with the bin name only." in text
    assert "\n\n\n" not in text  # the block's blank line goes with it
    tried = (ablation.key(BINS),)
    edit, _, text = ablation.for_step(SEED, SEED, tried, 3, 0.85)
    assert edit.target.startswith("You answer") and BINS in text
    assert ablation.for_step(SEED, SEED, tried, 1, 0.85) is None  # the run's limit is reached


def test_only_seed_blocks_the_incumbent_holds_exactly_once_are_tried():
    grown = SEED.replace(BINS, BINS.replace("cardboard", "cardboard boxes")) + "\n- a rule a step added\n"
    edit, _, _ = ablation.for_step(grown, SEED, (), 3, 0.85)
    assert edit.target.startswith("You answer")  # the bins list changed since the seed: not the seed's block
    twice = SEED + "\nAnswer with the bin name only.\n"
    others = tuple(ablation.key(b) for b in ablation.blocks(SEED)[:2])
    assert ablation.for_step(SEED, SEED, others, 3, 0.85)[0].target == "Answer with the bin name only."
    assert ablation.for_step(twice, SEED, others, 3, 0.85) is None  # held twice: which one it means is unclear
    assert ablation.for_step("", SEED, (), 3, 0.85) is None  # a run that started from no skill has no seed block
    assert ablation.for_step("Only one paragraph.\n", "Only one paragraph.\n", (), 3, 0.85) is None  # no empty skill


WRONG = ("- Orders to Alaska or Hawaii go ground, whatever the carrier says.\n- PO Box addresses go courier, never "
         "postal.\n- Lithium batteries go air, packed by the warehouse team.\n- Saturday delivery goes postal on every "
         "order.\n- If the order code begins with Z, the route is courier, as the carrier asks.")


def _run(tmp_path, *overrides: str) -> tuple[Reader, str]:
    """A simulated run whose seed holds a block of wrong rules (the simulated target follows a
    wrong rule worse than it guesses) and whose optimizer gives no usable reply (the simulated
    target answers it), so every step is skipped and tries a trial: here seed ablations only."""
    from skillopt import runner
    from skillopt.store.writer import Store
    from skillopt.tasks.loader import load_task
    from tests.helpers import sim_config

    line = "- When nothing special applies, the route is standard."
    seed = load_task("sim-rulebook").seed_skill.replace(line, f"{line}\n\n{WRONG}")
    store = Store(tmp_path / "a.db")
    run_id, status = runner.start(store, "sim-rulebook", sim_config(
        "optimizer_model=sim/target", "num_epochs=1", "worked_examples=false", "clue_rules=false",
        "gate_seed_against_no_skill=false", *overrides), seed_skill=seed)
    store.close()
    assert status == "completed"
    return Reader(tmp_path / "a.db"), run_id


def test_a_seed_block_that_hurts_is_removed_by_its_trial_judged_on_train_items_too(tmp_path):
    # At alpha 0.5 (the step gate's level) the wrong rules' removal wins 11-3 on the 60
    # selection and 40 train items; at the default 0.2 the same record (11-7 when every item
    # is scored) is not enough, which test_trainer's default runs show as rejections.
    r, run_id = _run(tmp_path, "worked_examples_alpha=0.5")
    trials = [g for g in r.gate_decisions(run_id) if g["kind"] == "examples"]
    assert [g["trial"] for g in trials] == ["ablation"] * 3
    first = trials[0]
    assert first["step"] == 1 and first["decision"] == "accept_new_best" and first["wins"] > first["losses"]
    assert "train items the change was not made from" in first["reason"]
    edits = r.q("SELECT step, op, target, source, gate, note FROM edits WHERE run_id = ? AND source = 'ablation' "
                "ORDER BY step", (run_id,))
    assert [(e["step"], e["op"], e["target"], e["gate"]) for e in edits][0] == (1, "delete", WRONG, "accepted")
    assert "without one block of the seed" in edits[0]["note"]
    assert len({e["target"] for e in edits}) == 3 and all(e["target"] != WRONG for e in edits[1:])
    state = json.loads(r.run(run_id)["state_json"])
    assert WRONG not in state["best_skill"] and "Alaska or Hawaii go ground" not in state["skill"]
    assert len(state["ablated"]) == 3
    run = r.run(run_id)
    assert run["best_test"] > run["seed_test"]


def test_seed_ablations_limits_the_trials_and_zero_turns_them_off(tmp_path):
    r, run_id = _run(tmp_path, "seed_ablations=1")
    assert [g["trial"] for g in r.gate_decisions(run_id) if g["kind"] == "examples"] == ["ablation"]
    (tmp_path / "off").mkdir()
    r, run_id = _run(tmp_path / "off", "seed_ablations=0")
    assert not [g for g in r.gate_decisions(run_id) if g["kind"] == "examples"]

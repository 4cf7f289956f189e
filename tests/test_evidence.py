"""Rules checked against the train data before the gate: a label rule whose trigger words
mostly come with another answer is dropped as `contradicted`, with its counts, and with
`repair_contradicted` rewritten to the answer those tasks clearly have."""
from __future__ import annotations

from dataclasses import replace

from skillopt.evidence import Evidence, Example, asserted_label, contradiction, repair, triggers
from skillopt.store.reader import Reader
from tests.helpers import run_sim

LABELS = ("billing", "legal", "shipping", "account")
TICKETS = (
    [Example(f"Subject: legal notice {i}\nBody: our lawyer asks about the contract", "legal") for i in range(6)]
    + [Example(f"Subject: invoice {i}\nBody: I was charged twice", "billing") for i in range(5)]
    + [Example(f"Subject: parcel {i}\nBody: my parcel is late, please check", "shipping") for i in range(5)]
    + [Example("Subject: legal and invoice\nBody: the lawyer disputes the invoice", "billing")])
EVIDENCE = Evidence(labels=LABELS, examples=tuple(TICKETS))


def test_the_rules_answer_is_the_one_label_it_does_not_negate():
    assert asserted_label("If a task mentions legal, answer billing, not legal.", LABELS) == "billing"
    assert asserted_label("Lawyer questions go to legal.", LABELS) == "legal"
    assert asserted_label("Use billing or legal as needed.", LABELS) is None  # two answers: no single claim
    assert asserted_label("Be polite.", LABELS) is None


def test_template_words_and_answers_are_no_triggers():
    words = triggers("If the body mentions lawyer or subject, answer billing.", LABELS, TICKETS)
    assert words == ("lawyer",)  # "body"/"subject" are in every ticket; "billing" is an answer


def test_a_rule_the_data_contradicts_is_reported_with_its_counts():
    why = contradiction("If a task mentions lawyer, answer billing, not legal.", EVIDENCE)
    assert why == "lawyer appear in 7 train tasks seen so far, answered legal 6, billing 1; the rule says billing"


def test_a_rule_the_data_supports_passes():
    assert contradiction("If a task mentions lawyer, answer legal.", EVIDENCE) is None
    assert contradiction("Late parcels go to shipping.", EVIDENCE) is None


def test_too_little_evidence_is_no_contradiction():
    assert contradiction("If a task mentions disputes, answer legal.", EVIDENCE) is None  # one ticket only
    assert contradiction("Anything about refunds: billing.", EVIDENCE) is None  # no ticket mentions it


def test_a_precedence_rule_is_not_mistaken_for_a_wrong_one():
    # "lawyer" alone means legal (6 of 7), but lawyer AND invoice means billing: read with
    # "and" the rule holds; read with "or" it would not. Only a rule every reading contradicts goes.
    evidence = Evidence(labels=LABELS, examples=tuple(TICKETS) + tuple(
        Example(f"Subject: legal invoice {i}\nBody: lawyer on the invoice", "billing") for i in range(3)))
    assert contradiction("If a ticket mentions lawyer and invoice, answer billing.", evidence) is None


def test_tasks_without_labels_are_never_checked():
    assert contradiction("If a task mentions lawyer, answer billing.", Evidence(labels=(), examples=TICKETS)) is None


REPAIRING = replace(EVIDENCE, repair=True)


def test_a_contradicted_rule_is_rewritten_to_the_answer_its_tasks_clearly_have():
    # every lawyer ticket but one is legal: the clue is right, the answer was swapped
    assert repair("If a task mentions lawyer, answer billing, not legal.", REPAIRING) == \
        "If a task mentions lawyer, answer legal, not billing."
    assert repair("Lawyer letters: shipping.", REPAIRING) == "Lawyer letters: legal."
    assert repair("Lawyer letters: shipping.", EVIDENCE) is None  # repair_contradicted off: only dropped


def test_no_rewrite_without_a_clear_answer_or_a_contradiction():
    mixed = Evidence(labels=LABELS, examples=tuple(TICKETS) + tuple(
        Example(f"Subject: lawyer {i}\nBody: a parcel from our lawyer", "shipping") for i in range(3)), repair=True)
    assert contradiction("If a task mentions lawyer, answer billing.", mixed)  # legal 6, shipping 3, billing 1
    assert repair("If a task mentions lawyer, answer billing.", mixed) is None  # 6 of 10 is no clear answer
    assert repair("If a task mentions lawyer, answer legal.", REPAIRING) is None  # supported: nothing to repair
    assert repair("If a task mentions disputes, answer shipping.", REPAIRING) is None  # too little evidence


def test_a_run_with_repair_on_gates_the_rewritten_rule_and_stores_both(tmp_path):
    db = tmp_path / "s.db"
    on = run_sim(db, "num_epochs=2", "seed=1", "repair_contradicted=true")
    off = run_sim(db, "num_epochs=2", "seed=1")
    r = Reader(db)
    dropped = [e for e in r.edits(on) if "; rewritten to their answer" in e["note"]]
    assert dropped and all(e["fate"] == "dropped" and e["note"].startswith("contradicted: ") for e in dropped)
    rewritten = [e for e in r.edits(on) if e["rationale"].endswith("[answer rewritten to the train data's]")]
    # each rewritten rule is the dropped one with other labels, and goes on through the pipeline
    assert {e["step"] for e in rewritten} <= {e["step"] for e in dropped} and rewritten
    assert all("contradicted" not in e["note"] for e in rewritten)
    assert not [e for e in r.edits(off) if "rewritten" in e["note"] or "rewritten" in e["rationale"]]


def test_every_reading_of_the_trigger_must_clearly_share_the_answer():
    # read with "and", the lithium-battery orders are all ground; read with "or", ground is
    # only 5 of the 8 lithium orders, under the 80% a rewrite needs: dropped, not rewritten
    evidence = Evidence(labels=("air", "ground", "sea"), examples=tuple(
        [Example(f"Order {k}: lithium batteries", "ground") for k in range(5)]
        + [Example(f"Order {k}: lithium pallets", "sea") for k in range(3)]
        + [Example(f"Order {k}: flowers", "air") for k in range(10)]), repair=True)
    rule = "If a task mentions lithium or batteries, answer air."
    assert contradiction(rule, evidence)
    assert repair(rule, evidence) is None
    assert repair("If a task mentions batteries, answer air.", evidence) == "If a task mentions batteries, answer ground."

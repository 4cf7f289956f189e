"""Rules checked against the train data before the gate: a label rule whose trigger words
mostly come with another answer is dropped as `contradicted`, with its counts."""
from __future__ import annotations

from skillopt.evidence import Evidence, Example, asserted_label, contradiction, triggers

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

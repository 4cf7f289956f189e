"""Echo: optimizer text that copies its prompt's own wording back is told from a lesson."""
from __future__ import annotations

import pytest

from skillopt.echo import echoes
from skillopt.prompts import fixed_text, template

SLOW = fixed_text("slow_update")


@pytest.mark.parametrize("bullet", [
    # what the embedded model wrote back at an invoice-extraction slow update: the prompt's
    # example bullets with the placeholders' brackets removed
    "When a task has the telling detail these cases share, the answer is the expected answer, "
    "because what in the task decides it.",
    "For REGRESSED cases, which change broke them and what to do instead.",
    "What fixed cases, in one bullet, so it is kept.",
])
def test_a_prompt_bullet_copied_back_is_an_echo(bullet):
    assert echoes(bullet, SLOW)


@pytest.mark.parametrize("bullet", [
    "When a task mentions a refund over 500 EUR, the answer is billing, because large refunds need approval.",
    "Write the vendor's name in upper case without its legal form (GmbH, AG, S.A.).",
    "Reply with one JSON object; dates as YYYY-MM-DD.",
    "Answer only the bin's name.",  # shorter than one run of words: too little to tell
])
def test_a_lesson_in_the_cases_words_is_not_an_echo(bullet):
    assert not echoes(bullet, SLOW)


def test_a_restated_line_with_a_lesson_added_is_kept_and_the_bare_line_is_not():
    shared = "Extract the vendor, invoice_date, total, and currency from this invoice. Reply with one JSON object."
    assert echoes("Extract the vendor, invoice_date, total, and currency from this invoice.", shared)
    assert not echoes("Extract the vendor, invoice_date, total, and currency; write every date as YYYY-MM-DD and "
                      "the total without thousands separators.", shared)


def test_fixed_text_holds_the_wording_and_none_of_the_data():
    system, user = template("slow_update")
    assert "${improved}" in user
    assert "STILL FAILING CASES:" in SLOW and "worked examples" in SLOW and "${" not in SLOW
    # "improved ${improved}, regressed ${regressed}, still failing ...": the words either side
    # of a left-out slot never form a run, so this is not the prompt's wording
    assert not echoes("improved, regressed, still failing, still right", SLOW)
    opened = fixed_text("reflect_open", guidance="Read the Feedback of each case.")
    assert "Read the Feedback of each case." in opened and "HOW REPLIES ARE SCORED" in opened

"""skillopt.ui.table: cells shown as written (escaped HTML), numbers formatted, rows marked,
long tables boxed; read back through tests.helpers.table_frame as a browser shows them."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from skillopt.ui import table
from tests.helpers import table_frame, tables


@pytest.mark.parametrize("text", ["# Rules", "- use *x* and __y__", "<b>x</b>", "<script>alert(1)</script>",
                                  "a & b \"quoted\" 'single'", "two\nlines", "$5 and $6", "plain"])
def test_a_cell_shows_its_text_as_written(text):
    markup = table.markup([{"text": text}])
    assert table_frame(markup)["text"].tolist() == [text]
    assert "<script" not in markup and "<b>" not in markup  # markup only from this module


def test_numbers_are_formatted_and_missing_values_blank():
    frame = pd.DataFrame({"n": [1, 2, None], "x": [0.1 + 0.2, math.nan, 3.0], "flag": [True, False, None],
                          "cost": [0.0042, 1.5, np.nan]})
    shown = table_frame(table.markup(frame, {"cost": "$%.4f"}))
    assert list(shown["n"]) == ["1", "2", ""]  # pandas stored them as floats: shown as the integers they are
    assert list(shown["x"]) == ["0.3", "", "3"]
    assert list(shown["flag"]) == ["True", "False", ""]
    assert list(shown["cost"]) == ["$0.0042", "$1.5000", ""]


def test_row_labels_marked_rows_and_a_list_of_rows():
    markup = table.markup(pd.DataFrame({"a": ["x", "y"]}, index=["batch_size", "seed"]), index=True,
                          highlight=["seed"])
    shown = table_frame(markup)
    assert list(shown.index) == ["batch_size", "seed"] and shown.loc["seed", "a"] == "y"
    assert markup.count(table.MARKED) == 1 and f'<tr{table.MARKED}><th scope="row">seed' in markup
    rows = table_frame(table.markup([{"step": 1, "text": "- a"}, {"step": 2, "text": "## b"}]))
    assert list(rows["text"]) == ["- a", "## b"] and list(rows.columns) == ["step", "text"]
    assert table_frame(table.markup([])).empty


def test_only_long_tables_scroll_in_a_box():
    assert table.scrolled(table.SCROLL_ROWS) is None
    assert table.scrolled(table.SCROLL_ROWS + 1) == table.SCROLL_PX
    assert f"max-height:{table.SCROLL_PX}px" in table.markup([{"a": 1}], height=table.SCROLL_PX)
    assert "max-height" not in table.markup([{"a": 1}])


def _page():
    import pandas as pd

    from skillopt.ui import table

    table.show(pd.DataFrame({"line": ["# Heading", "- item"], "score": [0.5, 1.0]}, index=["a", "b"]),
               {"score": "%.2f"}, index=True, highlight=["b"])
    table.show([{"step": 1}])


def test_show_puts_one_static_element_per_table_on_the_page():
    at = AppTest.from_function(_page).run()
    assert not at.exception and not at.dataframe and not at.table
    first, second = tables(at)
    assert list(first["line"]) == ["# Heading", "- item"] and list(first["score"]) == ["0.50", "1.00"]
    assert list(first.index) == ["a", "b"] and second["step"].tolist() == ["1"]

"""Helpers the test files (and bench/ scripts) import: a simulated configuration and a
real simulated training run. Fixtures and pytest hooks stay in conftest.py, which pytest
loads by itself; test code imports from here (`from tests.helpers import run_sim`), which
works from every folder under tests/ because conftest.py puts the repository root on
sys.path (bench/ scripts put it there themselves).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

# The simulated target and optimizer: deterministic, offline, and free.
SIM = ("target_model=sim/target", "optimizer_model=sim/optimizer")


def sim_config(*overrides: str):
    from skillopt.config import load_config

    return load_config(None, [*SIM, *overrides])


def run_sim(db: Path, *overrides: str, task: str = "sim-rulebook", name: str = "") -> str:
    """Train on the simulated world into `db`; returns the run id."""
    from skillopt import runner
    from skillopt.store.writer import Store

    store = Store(db)
    try:
        run_id, _ = runner.start(store, task, sim_config(*overrides), name=name)
    finally:
        store.close()
    return run_id


def write_task(folder: Path, name: str, description: str, evaluator: str, seed_skill: str,
               item: Callable[[int], tuple[str, Any]], sizes: tuple[int, int, int] = (16, 8, 8)) -> Path:
    """A task folder with one input field, `question`: `evaluator` is the TOML body of its
    [evaluator] table, item(i) gives the i-th item's (question, answer) in every split, and
    `sizes` the train, selection and test item counts."""
    folder.mkdir()
    (folder / "task.toml").write_text(
        f'name = "{name}"\ndescription = "{description}"\nprompt = "{{question}}"\nanswer_field = "answer"\n'
        f'id_field = "id"\ninput_fields = ["question"]\n[evaluator]\n{evaluator}\n'
        '[splits]\ntrain = "train.jsonl"\nselection = "selection.jsonl"\ntest = "test.jsonl"\n')
    for split, n in zip(("train", "selection", "test"), sizes):
        rows = [dict(zip(("question", "answer"), item(i)), id=f"{split}-{i}") for i in range(n)]
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (folder / "seed_skill.md").write_text(seed_skill)
    return folder


# --- a routing skill and a scripted optimizer, shared by the reflection and advisor tests ------

ROUTING_SKILL = """# Routing

Route each order.

## House rules

- When nothing special applies, the route is standard.

## Answer format

Reply with the route only.
"""

# A scripted provider: the real LLM class (retries, complete_json's repair) in front of it.
_SCRIPTS: dict[str, object] = {}


def _handler(name, messages, settings, response_format):
    from skillopt.models.providers import HandlerResult

    text = _SCRIPTS[name](messages)
    if isinstance(text, Exception):
        raise text
    return HandlerResult(text, 10, 5)


def scripted(fn, name: str, **kwargs):
    """An optimizer (an LLM) whose reply to `messages` is fn(messages): a text, or an exception
    to raise."""
    from skillopt.models.llm import LLM
    from skillopt.models.providers import GenSettings, register_provider

    register_provider("h4script", _handler)
    _SCRIPTS[name] = fn
    return LLM(f"h4script/{name}", "optimizer", GenSettings(max_retries=0), **kwargs)


# --- a mini arithmetic task folder and a model reply, shared by the task tests (tests/tasks/) ---

TOML = """\
name = "mini"
description = "A tiny arithmetic task."
prompt = "Q: {question}"
answer_field = "expected"

[evaluator]
type = "normalized"

[splits]
train = "train.jsonl"
selection = "selection.jsonl"
test = "test.jsonl"
"""


def lines(prefix: str, n: int = 3) -> str:
    """JSON lines of n mini items whose ids start with `prefix`."""
    return "".join(json.dumps({"id": f"{prefix}{i}", "question": f"{i}+{i}?", "expected": str(2 * i)}) + "\n"
                   for i in range(1, n + 1))


def put(path: Path, value: str | bytes) -> Path:
    """Write text (UTF-8) or raw bytes, as a test's fixture file needs."""
    if isinstance(value, bytes):
        path.write_bytes(value)
    else:
        path.write_text(value, encoding="utf-8")
    return path


def make_task(folder: Path, toml: str = TOML, files: dict[str, str | bytes] | None = None) -> Path:
    """A valid mini task; `files` adds or replaces files by name."""
    folder.mkdir(parents=True, exist_ok=True)
    content = {"task.toml": toml, "train.jsonl": lines("t"), "selection.jsonl": lines("s"),
               "test.jsonl": lines("x"), "seed_skill.md": "# Mini\n\nAnswer the question.\n", **(files or {})}
    for name, value in content.items():
        put(folder / name, value)
    return folder


class Reply:
    """A model's reply as Task.rollout reads it: its text, or the error that ended the call."""

    def __init__(self, text: str = "", error: str = ""):
        self.text, self.error = text, error



def tables(at) -> list:
    """The static tables (skillopt.ui.table) an AppTest page shows, in page order, each as a
    DataFrame of the text its cells show (row labels as the index where the table has them)."""
    return [table_frame(h.proto.body) for h in at.get("html") if 'class="skillopt-table"' in h.proto.body]


def table_frame(markup: str):
    """A skillopt.ui.table HTML table read back as the text a browser shows in each cell."""
    from html.parser import HTMLParser

    import pandas as pd

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.head, self.rows, self.labels, self.cell, self.in_head, self.row_label = [], [], [], None, False, False

        def handle_starttag(self, tag, attrs):
            if tag == "thead":
                self.in_head = True
            elif tag == "tr" and not self.in_head:
                self.rows.append([])
            elif tag in ("td", "th"):
                self.cell, self.row_label = "", ("scope", "row") in attrs
            elif tag == "br" and self.cell is not None:
                self.cell += "\n"

        def handle_endtag(self, tag):
            if tag == "thead":
                self.in_head = False
            elif tag in ("td", "th") and self.cell is not None:
                if self.in_head:
                    self.head.append(self.cell)
                elif self.row_label:
                    self.labels.append(self.cell)
                else:
                    self.rows[-1].append(self.cell)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parser = Cells()
    parser.feed(markup)
    columns = parser.head[1:] if parser.labels else parser.head
    return pd.DataFrame(parser.rows, columns=columns, index=parser.labels or None)

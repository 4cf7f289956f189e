"""CSV import: preview problems, round trip into a task folder, no half-written folders."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from skillopt.tasks import csvimport
from skillopt.tasks.csvimport import import_csv, import_csv_bytes, preview_csv
from skillopt.errors import TaskError
from skillopt.tasks.loader import load_task, validate_task
from skillopt.tasks.task import SPLITS
from tests.helpers import put

MAPPING = {"subject": "Subject", "body": "Body"}


def tickets_csv(rows: int = 30, delimiter: str = ",") -> str:
    queues = ["billing", "technical", "legal"]
    lines = [delimiter.join(["Ticket", "Subject", "Body", "Queue"])]
    for n in range(rows):
        body = f'"Hello, my order {n} has a problem; ""urgent"""'
        lines.append(delimiter.join([f"T{n:03d}", f"Issue {n}", body, queues[n % 3]]))
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str | bytes, name: str = "tickets.csv") -> Path:
    return put(tmp_path / name, text)


def test_round_trip_into_a_valid_task(tmp_path):
    csv_path = write(tmp_path, tickets_csv(30))
    out = import_csv(csv_path, tmp_path / "imported", mapping=MAPPING, id_column="Ticket", answer_column="Queue",
                     evaluator="choice", ratio=(2, 1, 2), seed=3)
    assert validate_task(out) == []
    task = load_task(out)
    items = task.items()
    assert len(items) == 30 and [len(task.split(s)) for s in SPLITS] == [12, 6, 12]
    first = items["T000"]
    assert dict(first.input) == {"subject": "Issue 0", "body": 'Hello, my order 0 has a problem; "urgent"'}
    assert first.expected == "billing"
    assert task.render(first) == ('Subject: Issue 0\nBody: Hello, my order 0 has a problem; "urgent"\n'
                                  "Reply with the answer only.")
    toml = tomllib.loads((out / "task.toml").read_text(encoding="utf-8"))
    assert toml["evaluator"] == {"type": "choice", "labels": ["billing", "legal", "technical"]}
    assert toml["splits"] == {"file": "items.jsonl", "ratio": [2, 1, 2], "seed": 3}
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "tickets.csv" in readme and "sha256" in readme and "`Queue`" in readme
    assert task.seed_skill.strip()
    assert task.evaluate(first, "Billing").hard == 1.0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".imported-")]  # staging folder removed


def test_import_is_deterministic(tmp_path):
    csv_path = write(tmp_path, tickets_csv(20))
    a = import_csv(csv_path, tmp_path / "a", mapping=MAPPING, answer_column="Queue", name="same")
    b = import_csv(csv_path, tmp_path / "b", mapping=MAPPING, answer_column="Queue", name="same")
    for name in ("task.toml", "items.jsonl", "seed_skill.md", "README.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    rows = [json.loads(line) for line in (a / "items.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows[:2]] == ["row-00001", "row-00002"]  # no id column: row numbers


def test_semicolon_csv_custom_prompt_and_evaluator_table(tmp_path):
    csv_path = write(tmp_path, tickets_csv(10, delimiter=";"))
    out = import_csv(csv_path, tmp_path / "semi", mapping={"text": "Body"}, answer_column="Queue",
                     prompt="Ticket: {text}\nQueue?", evaluator={"type": "contains", "ignore_case": True},
                     ratio=(1, 1, 1), description="Semicolon tickets")
    task = load_task(out)
    assert task.description == "Semicolon tickets"
    item = next(iter(task.items().values()))
    assert task.render(item).startswith("Ticket: Hello, my order")


def test_bad_prompt_leaves_nothing_behind(tmp_path):
    csv_path = write(tmp_path, tickets_csv(10))
    with pytest.raises(TaskError, match="no input placeholder") as err:
        import_csv(csv_path, tmp_path / "bad", mapping=MAPPING, answer_column="Queue", prompt="Route it.")
    assert str(tmp_path / "bad" / "task.toml") in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tickets.csv"]


def test_refuses_to_overwrite_a_folder(tmp_path):
    csv_path = write(tmp_path, tickets_csv(10))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(TaskError, match="already exists"):
        import_csv(csv_path, tmp_path / "taken", mapping=MAPPING, answer_column="Queue")
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    assert load_task(import_csv(csv_path, tmp_path / "empty", mapping=MAPPING, answer_column="Queue")).name == "empty"


def test_numeric_answers_validate_through_the_evaluator(tmp_path):
    csv_path = write(tmp_path, "q,a\n1+1,2\n2+2,4\n3+3,six\n4+4,8\n")
    with pytest.raises(TaskError, match="must be a number"):
        import_csv(csv_path, tmp_path / "num", mapping={"question": "q"}, answer_column="a", evaluator="numeric",
                   ratio=(1, 1, 1))


def test_too_many_labels_for_choice(tmp_path, monkeypatch):
    monkeypatch.setattr(csvimport, "MAX_CHOICE_LABELS", 3)
    csv_path = write(tmp_path, "q,a\n" + "".join(f"x{n},label{n}\n" for n in range(6)))
    with pytest.raises(TaskError, match="6 distinct answers"):
        import_csv(csv_path, tmp_path / "c", mapping={"question": "q"}, answer_column="a", evaluator="choice")


def test_missing_csv_file(tmp_path):
    with pytest.raises(TaskError, match="CSV file not found"):
        import_csv(tmp_path / "nope.csv", tmp_path / "out", mapping=MAPPING, answer_column="Queue")


PREVIEW_CASES = [
    # (csv bytes, mapping, answer column, id column, words in the first problem)
    (b"", MAPPING, "Queue", None, "upload.csv:1: no header row"),
    (b"Subject,Queue\nhi,billing\n", MAPPING, "Queue", None, "column 'Body' not in the header"),
    (b"Subject,Body,Queue\nhi,there,billing\n", MAPPING, "Missing", None, "column 'Missing' not in the header"),
    (b"Subject,Body,Queue\nhi,there,billing\n", MAPPING, "Body", None, "also mapped as an input"),
    (b"Subject,Body,Queue\nhi,there,billing\n", {}, "Queue", None, "map at least one CSV column"),
    (b"Subject,Body,Queue\nhi,there,billing\n", {"id": "Subject"}, "Queue", None, "identifier other than id"),
    (b"Subject,Body,Queue\nhi,there,billing\n", {"two words": "Subject"}, "Queue", None, "identifier"),
    (b"Subject,Body,Queue\nhi,there,billing\n", MAPPING, "", None, "choose the column"),
    (b"Subject,Body,Queue\n", MAPPING, "Queue", None, "no data rows"),
    (b"Subject,Body,Queue\nhi,there\n", MAPPING, "Queue", None, "upload.csv:2: row has 2 cells, the header has 3"),
    (b"Subject,Body,Queue\nhi,there,\n", MAPPING, "Queue", None, "upload.csv:2: empty answer"),
    (b"Id,Subject,Body,Queue\n1,a,b,c\n1,d,e,f\n", MAPPING, "Queue", "Id", "upload.csv:3: duplicate id '1'"),
    (b"Id,Subject,Body,Queue\n,a,b,c\n", MAPPING, "Queue", "Id", "upload.csv:2: empty id"),
    (b"Subject,Subject,Body,Queue\na,b,c,d\n", MAPPING, "Queue", None, "header repeats column 'Subject'"),
    (b"Subject,Body,Queue\ncaf\xe9,x,billing\n", MAPPING, "Queue", None, "upload.csv:2: not UTF-8 (byte 0xe9)"),
    (b"Subject,Body,Queue\n\x00\x01,x,y\n", MAPPING, "Queue", None, "binary file"),
]


@pytest.mark.parametrize("data, mapping, answer, id_column, words", PREVIEW_CASES)
def test_preview_problems(data, mapping, answer, id_column, words):
    rows, problems = preview_csv(data, mapping, answer_column=answer, id_column=id_column)
    assert problems and words in problems[0], problems
    assert all(p.startswith("upload.csv") for p in problems)


def test_preview_returns_rows_and_skips_blank_lines():
    data = tickets_csv(4).replace("\n", "\n\n", 1).encode()
    rows, problems = preview_csv(data, MAPPING, answer_column="Queue", id_column="Ticket")
    assert problems == []
    assert rows[0] == {"id": "T000", "subject": "Issue 0", "body": 'Hello, my order 0 has a problem; "urgent"',
                       "expected": "billing"}
    assert len(rows) == 4


def test_preview_reports_every_bad_row():
    data = b"Subject,Body,Queue\na,b,\nc,d\ne,f,g\n"
    rows, problems = preview_csv(data, MAPPING, answer_column="Queue")
    assert len(problems) == 2 and len(rows) == 1


def test_upload_size_limit(monkeypatch):
    monkeypatch.setattr(csvimport, "MAX_UPLOAD_BYTES", 50)
    rows, problems = preview_csv(tickets_csv(5).encode(), MAPPING, answer_column="Queue")
    assert rows == [] and "the limit is" in problems[0]
    with pytest.raises(TaskError, match="the limit is"):
        import_csv_bytes(tickets_csv(5).encode(), "big.csv", "/nonexistent/out", mapping=MAPPING,
                         answer_column="Queue")


def test_import_bytes_names_the_upload(tmp_path):
    out = import_csv_bytes(tickets_csv(9).encode(), "my upload.csv", tmp_path / "up", mapping=MAPPING,
                           answer_column="Queue", ratio=(1, 1, 1))
    assert len(load_task(out).items()) == 9
    assert "my upload.csv" in (out / "README.md").read_text(encoding="utf-8")
    with pytest.raises(TaskError) as err:
        import_csv_bytes(b"Subject,Body,Queue\nhi,there,\n", "my upload.csv", tmp_path / "up2", mapping=MAPPING,
                         answer_column="Queue")
    assert str(err.value).startswith("my upload.csv:2: empty answer")


def test_toml_strings_survive_awkward_text(tmp_path):
    csv_path = write(tmp_path, tickets_csv(9))
    prompt = 'Say "hi" \\ then {subject}\ttab \x7f del'
    out = import_csv(csv_path, tmp_path / "odd", mapping=MAPPING, answer_column="Queue", prompt=prompt,
                     ratio=(1, 1, 1), name='Name with "quotes"')
    task = load_task(out)
    assert task.prompt == prompt and task.name == 'Name with "quotes"'


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_csv_reader_sniffs_the_delimiter_and_keeps_standard_quoting(delimiter):
    text = delimiter.join(["a", "b", "c"]) + "\n" + delimiter.join(["1", '"x, ""y"""', "3"]) + "\n"
    rows = list(csvimport.csv_reader(text))
    assert rows == [["a", "b", "c"], ["1", 'x, "y"', "3"]]

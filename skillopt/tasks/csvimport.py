"""Turn a CSV file into a task folder, with a column mapping.

    import_csv("tickets.csv", "data/tasks/my-tickets",
               mapping={"subject": "Subject", "body": "Text"}, answer_column="Queue",
               evaluator="choice")

The folder holds task.toml (one items file split by a seeded ratio), items.jsonl,
a naive seed_skill.md and a README.md naming the CSV and its sha256. It is written
to a temporary folder, validated with load_task, and only then moved into place,
so a bad CSV never leaves a half-written task behind.

preview_csv() parses uploaded bytes for the dashboard form and returns the rows it
would import plus every problem found, instead of raising on the first one.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ..errors import TaskError
from .loader import load_task
from .task import MAX_FILE_BYTES

MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # dashboard uploads: validated in memory, so kept small
RESERVED = ("id", "expected")  # the id and answer fields of the written items
MAX_CHOICE_LABELS = 50  # more distinct answers than this is not a classification task


def _toml(value: Any) -> str:
    """A TOML value. JSON strings are TOML basic strings once DEL is escaped too."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def csv_reader(text: str):
    """A csv.reader with a sniffed delimiter; quoting stays standard (the sniffer's guesses are unreliable)."""
    try:
        delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    return csv.reader(io.StringIO(text, newline=""), csv.excel, delimiter=delimiter)


def _decode(data: bytes, source: str, limit: int) -> tuple[str | None, str]:
    """(the CSV text, "") or (None, the one problem that stops it being read at all)."""
    if len(data) > limit:
        return None, f"{source}: file is {len(data) / 2**20:.1f} MB; the limit is {limit // 2**20} MB"
    if b"\x00" in data:
        return None, f"{source}: binary file (NUL byte); expected CSV text"
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"{source}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the CSV as UTF-8"


def _mapping_problems(source: str, mapping: Mapping[str, str], answer_column: str | None) -> list[str]:
    problems: list[str] = []
    if not mapping:
        problems.append(f"{source}: map at least one CSV column to a task field")
    for field, column in mapping.items():
        if not isinstance(field, str) or not field.isidentifier() or field in RESERVED:
            problems.append(f"{source}: task field name {field!r} must be an identifier other than id/expected")
    if not answer_column:
        problems.append(f"{source}: choose the column that holds the expected answer")
    elif answer_column in mapping.values():
        problems.append(f"{source}: answer column '{answer_column}' is also mapped as an input; "
                        "the model would see the answer")
    return problems


def _header_problems(source: str, header: list[str], columns: list[str | None]) -> list[str]:
    problems = [f"{source}:1: column '{column}' not in the header (columns: {', '.join(header)})"
                for column in columns if column and column not in header]
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        problems.append(f"{source}:1: header repeats column '{duplicated[0]}'")
    return problems


def _rows(reader, header: list[str], source: str, mapping: Mapping[str, str], id_column: str | None,
          answer_column: str, problems: list[str]) -> list[dict]:
    """The items under the header; each bad row is reported in problems and skipped."""
    at = {h: header.index(h) for h in header}
    rows: list[dict] = []
    seen: dict[str, int] = {}
    number = 0  # data rows so far: the id when the CSV has no id column
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            number += 1
            if len(row) != len(header):
                problems.append(f"{source}:{line}: row has {len(row)} cells, the header has {len(header)}")
                continue
            item_id = row[at[id_column]].strip() if id_column else f"row-{number:05d}"
            answer = row[at[answer_column]].strip()
            if not item_id:
                problems.append(f"{source}:{line}: empty id in column '{id_column}'")
            elif item_id in seen:
                problems.append(f"{source}:{line}: duplicate id '{item_id}' (first on line {seen[item_id]})")
            elif not answer:
                problems.append(f"{source}:{line}: empty answer in column '{answer_column}'")
            else:
                seen[item_id] = line
                rows.append({"id": item_id, **{f: row[at[c]].strip() for f, c in mapping.items()},
                             "expected": answer})
    except csv.Error as exc:
        problems.append(f"{source}:{reader.line_num}: bad CSV: {exc}")
    return rows


def _parse(data: bytes, source: str, mapping: Mapping[str, str], id_column: str | None,
           answer_column: str | None, limit: int) -> tuple[list[dict], list[str]]:
    """(items as they would be written, every problem as "source:line: problem")."""
    text, problem = _decode(data, source, limit)
    if text is None:
        return [], [problem]
    problems = _mapping_problems(source, mapping, answer_column)
    reader = csv_reader(text)
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error):
        return [], problems + [f"{source}:1: no header row"]
    problems += _header_problems(source, header, [*mapping.values(), answer_column, id_column])
    if problems:
        return [], problems
    rows = _rows(reader, header, source, mapping, id_column, answer_column, problems)
    if not rows and not problems:
        problems.append(f"{source}: no data rows under the header")
    return rows, problems


def preview_csv(data: bytes, mapping: Mapping[str, str], *, answer_column: str | None = None,
                id_column: str | None = None, source: str = "upload.csv") -> tuple[list[dict], list[str]]:
    """Rows the import would write and every problem found; uploads over 20 MB are refused."""
    return _parse(data, source, mapping, id_column, answer_column, MAX_UPLOAD_BYTES)


def _evaluator_table(evaluator: str | Mapping[str, Any], rows: list[dict], source: str) -> dict[str, Any]:
    table = {"type": evaluator} if isinstance(evaluator, str) else dict(evaluator)
    if table.get("type") == "choice" and "labels" not in table:
        labels = sorted({row["expected"] for row in rows})
        if len(labels) > MAX_CHOICE_LABELS:
            raise TaskError(f"{source}: {len(labels)} distinct answers is too many for a choice evaluator "
                            f"(at most {MAX_CHOICE_LABELS}); use normalized or exact")
        table["labels"] = labels
    return table


def _task_toml(name: str, description: str, prompt: str, evaluator: Mapping[str, Any], fields: list[str],
               ratio: tuple, seed: int) -> str:
    lines = [f"name = {_toml(name)}", f"description = {_toml(description)}", f"prompt = {_toml(prompt)}",
             'answer_field = "expected"', 'id_field = "id"', f"input_fields = {_toml(fields)}", "", "[evaluator]"]
    lines += [f"{key} = {_toml(value)}" for key, value in evaluator.items()]
    lines += ["", "[splits]", 'file = "items.jsonl"', f"ratio = {_toml(list(ratio))}", f"seed = {seed}", ""]
    return "\n".join(lines)


def import_csv(csv_path: str | Path, out_dir: str | Path, *, mapping: Mapping[str, str], answer_column: str,
               id_column: str | None = None, ratio: tuple[float, float, float] = (2, 1, 7), seed: int = 0,
               evaluator: str | Mapping[str, Any] = "normalized", prompt: str | None = None,
               name: str | None = None, description: str = "") -> Path:
    """Write a validated task folder from a CSV; raises TaskError naming the file and line."""
    csv_path, out_dir = Path(csv_path), Path(out_dir)
    if not csv_path.is_file():
        raise TaskError(f"{csv_path}: CSV file not found")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise TaskError(f"{out_dir}: already exists and is not empty; choose a new task folder")
    data = csv_path.read_bytes()
    rows, problems = _parse(data, str(csv_path), mapping, id_column, answer_column, MAX_FILE_BYTES)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise TaskError(problems[0] + more)
    fields = list(mapping)
    name = name or out_dir.name
    if prompt is None:
        prompt = "\n".join(f"{f.replace('_', ' ').capitalize()}: {{{f}}}" for f in fields) + \
                 "\nReply with the answer only."
    table = _evaluator_table(evaluator, rows, str(csv_path))
    digest = hashlib.sha256(data).hexdigest()
    files = {
        "task.toml": _task_toml(name, description or f"Imported from {csv_path.name}.", prompt, table, fields,
                                tuple(ratio), seed),
        "items.jsonl": "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
        "seed_skill.md": f"# {name}\n\nAnswer each item using the fields given. Reply with the answer only.\n",
        "README.md": (f"# {name}\n\nImported from `{csv_path.name}` (sha256 `{digest}`, {len(rows)} rows) by "
                      "`skillopt.tasks.csvimport.import_csv`.\n\n"
                      + "".join(f"- task field `{f}` <- CSV column `{c}`\n" for f, c in mapping.items())
                      + f"- expected answer <- CSV column `{answer_column}`\n"
                      + (f"- id <- CSV column `{id_column}`\n" if id_column else "- id: row number\n")
                      + f"\nSplit train:selection:test = {':'.join(f'{r:g}' for r in ratio)}"
                      + f" by a hash of (seed {seed}, id).\n"
                      + "The seed skill is a placeholder; edit it before training.\n"),
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        for filename, content in files.items():
            (staging / filename).write_text(content, encoding="utf-8", newline="\n")
        try:
            load_task(staging)
        except TaskError as exc:  # name the folder the user asked for, not the staging one
            raise TaskError(str(exc).replace(str(staging), str(out_dir))) from None
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def import_csv_bytes(data: bytes, source: str, out_dir: str | Path, **options: Any) -> Path:
    """import_csv for dashboard uploads: the bytes go through the same validation."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise TaskError(f"{source}: file is {len(data) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_BYTES // 2**20} MB")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (Path(source).name or "upload.csv")
        path.write_bytes(data)
        try:
            return import_csv(path, out_dir, **options)
        except TaskError as exc:
            raise TaskError(str(exc).replace(str(path), source)) from None

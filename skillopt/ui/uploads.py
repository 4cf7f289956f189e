"""The New run page's tasks and uploads: where imported tasks go, which task is preselected,
turning an uploaded JSONL or CSV file into a task folder (through csvimport), and checking
the import's split ratio and names. No streamlit here.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from skillopt.errors import TaskError
from skillopt.tasks.csvimport import MAX_UPLOAD_BYTES, csv_reader, import_csv_bytes
from skillopt.tasks.loader import BUILTIN_DIR

UPLOADS_ENV = "SKILLOPT_UPLOADS_DIR"  # where imported tasks go; default data/tasks/uploads
DEFAULT_TASK = "ticket-routing"  # preselected: a real task the embedded model learns in minutes
# The evaluators an uploaded table can use without options.
EVALUATORS = ("normalized", "exact", "choice", "contains", "numeric")


def uploads_dir() -> Path:
    return Path(os.environ.get(UPLOADS_ENV) or BUILTIN_DIR / "uploads")


def task_ref(info) -> str:
    """Built-ins by name (short, portable command line); uploads by folder."""
    return info.name if Path(info.path).parent == BUILTIN_DIR else str(info.path)


def default_task_index(names: list[str]) -> int:
    return names.index(DEFAULT_TASK) if DEFAULT_TASK in names else 0


def upload_table(name: str, data: bytes) -> tuple[bytes, list[str]]:
    """An uploaded JSONL or CSV file as (CSV bytes, column names)."""
    csv_bytes = jsonl_to_csv(name, data) if name.endswith(".jsonl") else data
    return csv_bytes, csv_columns(name, csv_bytes)


def default_inputs(columns: list[str], answer: str, id_choice: str) -> list[str]:
    """The input columns to preselect: all but the answer, the id and the usual label names."""
    return [c for c in columns
            if c not in (answer, id_choice) and c.lower() not in ("id", "label", "answer", "expected")]


def split_ratio(text: str) -> tuple[float, ...]:
    """"2:1:7" -> (2.0, 1.0, 7.0): the train:selection:test proportions of an import.

    Three finite numbers, none negative, each split given a share: "inf" or "nan" parse as
    floats but cannot split anything."""
    try:
        parts = tuple(float(p) for p in text.split(":"))
    except ValueError:
        parts = ()
    if len(parts) != 3 or not all(math.isfinite(p) and p >= 0 for p in parts) or not sum(parts):
        raise TaskError(f"split ratio '{text}': give three non-negative numbers like 2:1:7")
    if not all(parts):
        empty = ", ".join(name for name, p in zip(("train", "selection", "test"), parts) if not p)
        raise TaskError(f"split ratio '{text}': give every split a share (empty: {empty})")
    return parts


def import_upload(csv_bytes: bytes, file_name: str, name: str, ratio: str, **columns: Any) -> Path:
    """Import an uploaded table as the task `name` under uploads_dir(); `columns` are
    csvimport's mapping, answer_column, id_column and evaluator. Returns its folder."""
    parts = split_ratio(ratio)
    folder = task_name(name)
    return import_csv_bytes(csv_bytes, file_name, uploads_dir() / folder, ratio=parts, name=folder, **columns)


def check_upload(name: str, data: bytes) -> None:
    if len(data) > MAX_UPLOAD_BYTES:
        raise TaskError(f"{name}: {len(data) / 1e6:.1f} MB is over the 20 MB upload limit")
    if not data.strip():
        raise TaskError(f"{name}: the file is empty")


def jsonl_to_csv(name: str, data: bytes) -> bytes:
    """JSONL rows as CSV, so one column-mapping form (and csvimport) serves both formats."""
    check_upload(name, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{name}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise TaskError(f"{name}:{number}: each line must be a JSON object")
        rows.append(row)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in row.items()})
    return out.getvalue().encode("utf-8")


def csv_columns(name: str, data: bytes) -> list[str]:
    """The header of an uploaded CSV, read with the same delimiter sniffing as csvimport."""
    check_upload(name, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{name}: not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None
    try:
        columns = [c.strip() for c in next(csv_reader(text))]
    except (StopIteration, csv.Error):
        raise TaskError(f"{name}:1: no header row") from None
    if any(not c for c in columns):
        raise TaskError(f"{name}:1: the header row has an empty column name")
    return columns


def field_name(column: str) -> str:
    """The task field (a Python identifier, not id/expected) a CSV column becomes."""
    name = re.sub(r"\W+", "_", column.strip().lower()).strip("_") or "field"
    if name[0].isdigit():
        name = "f_" + name
    return name + "_text" if name in ("id", "expected") else name


def mapping_for(columns: list[str]) -> dict[str, str]:
    """task field -> CSV column for the chosen input columns; repeated field names get a number."""
    out: dict[str, str] = {}
    for column in columns:
        field, n = field_name(column), 2
        while field in out:
            field, n = f"{field_name(column)}_{n}", n + 1
        out[field] = column
    return out


def task_name(text: str) -> str:
    """A safe folder name for an uploaded task: lowercase letters, digits and dashes."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]
    if not name:
        raise TaskError("task name: use at least one letter or digit")
    return name

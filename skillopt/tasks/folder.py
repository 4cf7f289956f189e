"""Task folder: reading and validating a task folder on disk (task.toml, JSONL, splits).

A task is a folder:

    my-task/
      task.toml        what the task is (below)
      train.jsonl      one JSON object per line (or one items file + a seeded ratio)
      selection.jsonl
      test.jsonl
      seed_skill.md    the starting skill: honestly naive, UTF-8, not empty
      README.md        where the data came from and how it was made
      generate.py      (built-in tasks) regenerates the JSONL byte-identically

task.toml:

    name = "ticket-routing"                       # required, non-empty
    description = "Route support tickets ..."     # one line for listings
    prompt = '''Route this ticket.
    Subject: {subject}
    Body: {body}'''                               # str.format placeholders = item input
                                                  # fields; at least one; {{ }} for braces
    answer_field = "queue"        # JSONL field with the expected answer (default "expected")
    id_field = "id"               # default "id"; ids are unique across all splits
    input_fields = ["subject", "body"]   # optional; default: every field but id and answer;
                                  # other JSONL fields (provenance such as "kind") are then ignored
    seed_skill = "seed_skill.md"  # optional, default shown
    plugin = "module:factory"     # optional, see below
    simulated = true              # optional, default false; only such a task accepts sim/ models

    [evaluator]                   # see skillopt/tasks/evaluators.py for every type's options
    type = "choice"
    labels = ["billing", "technical"]

    [splits]                      # either three files ...
    train = "train.jsonl"
    selection = "selection.jsonl"
    test = "test.jsonl"
    # ... or one file split by a seeded ratio (train:selection:test):
    # file = "items.jsonl"
    # ratio = [2, 1, 7]
    # seed = 0

The ratio split orders items by a hash of (seed, id), so it does not depend on line
order and never uses global random state. Limits: an item file over 50 MB or a line
over 1 MB is rejected; every file must be UTF-8. Paths stay inside the task folder.

Plug-ins: `plugin = "module:factory"` loads module.py from the task folder (or an
importable module of that name, never another path) and calls factory(task) with the
loaded Task (usercode.apply_plugin); it returns a TaskProtocol, usually a wrapper whose rollout() runs several turns.

Why a module of its own: turning user files into a Task is the part of the engine
that meets untrusted input, so every check (encoding, sizes, TOML keys, ids, answer
fields, placeholders, paths inside the folder) lives here, behind one entry point,
build_task(folder, Problems). Problems either raises on the first problem
(load_task) or collects them all (validate_task), so both report the same
"file:line: problem" messages. task.py keeps the data types and the limits, and
loader.py the entry points (load_task, validate_task, list_tasks) built on this one.
"""
from __future__ import annotations

import hashlib
import json
import re
import string
import tomllib
from pathlib import Path
from typing import Any

from . import task as _task  # MAX_FILE_BYTES / MAX_LINE_BYTES are read at call time, so lowering them there applies
from ..errors import SkillError, TaskError
from .evaluators import Scorer, build_evaluator
from .replies import reply_template
from ..skill import validate as validate_skill
from .task import SPLITS, Item, Task, TaskProtocol
from .usercode import apply_plugin

NUL, NEWLINE = b"\x00", b"\n"
TOML_KEYS = ("name", "description", "prompt", "answer_field", "id_field", "input_fields", "seed_skill",
             "plugin", "evaluator", "splits", "simulated")


class Problems:
    """Collect problems (validate_task) or raise on the first one (load_task)."""

    def __init__(self, fail_fast: bool):
        self.fail_fast = fail_fast
        self.found: list[str] = []

    def add(self, where: str, problem: str) -> None:
        self.add_line(f"{where}: {problem}")

    def add_line(self, message: str) -> None:
        if self.fail_fast:
            raise TaskError(message)
        self.found.append(message)


def _key_line(text: str, key: str) -> int | None:
    """Line of `key = ...` in a TOML text (tomllib keeps no positions)."""
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line) or line.strip() == f"[{key}]":
            return number
    return None


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n} bytes"


def _read_text(path: Path, problems: Problems, what: str) -> str | None:
    """UTF-8 text or a problem naming the file and the line of the first bad byte."""
    if not path.is_file():
        problems.add(str(path), f"{what} not found")
        return None
    if path.stat().st_size > _task.MAX_FILE_BYTES:
        problems.add(str(path), f"file is {_size(path.stat().st_size)}; the limit is {_size(_task.MAX_FILE_BYTES)}")
        return None
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # Excel and Notepad exports
        problems.add(f"{path}:1", "UTF-16 text; re-save the file as UTF-8")
        return None
    if NUL in data:
        line = data[: data.index(NUL)].count(NEWLINE) + 1
        problems.add(f"{path}:{line}", "binary file (NUL byte); expected UTF-8 text")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.add(f"{path}:{line}", f"not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the file as UTF-8")
        return None


def _records(path: Path, problems: Problems) -> list[tuple[int, dict]] | None:
    """(line number, object) for each non-blank JSONL line; None when the file is unreadable."""
    text = _read_text(path, problems, "item file")
    if text is None:
        return None
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line.encode("utf-8")) > _task.MAX_LINE_BYTES:
            problems.add(f"{path}:{number}", f"line is over {_task.MAX_LINE_BYTES // 2**20} MB")
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}:{number}", f"bad JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(record, dict):
            problems.add(f"{path}:{number}", f"each line must be a JSON object, got {type(record).__name__}")
            continue
        out.append((number, record))
    return out


def _inside(folder: Path, relative: Any, problems: Problems, where: str) -> Path | None:
    if not isinstance(relative, str) or not relative.strip():
        problems.add(where, f"file name must be a non-empty string, got {relative!r}")
        return None
    candidate = (folder / relative).resolve()
    if Path(relative).is_absolute() or not candidate.is_relative_to(folder.resolve()):
        problems.add(where, f"'{relative}' must be a path inside the task folder")
        return None
    return folder / relative


def _ratio_split(folder: Path, splits: dict, id_field: str, problems: Problems, where) -> list | None:
    path = _inside(folder, splits["file"], problems, where("file"))
    ratio, seed = splits.get("ratio", [2, 1, 7]), splits.get("seed", 0)
    if not (isinstance(ratio, list) and len(ratio) == 3 and all(
            isinstance(r, (int, float)) and not isinstance(r, bool) and r >= 0 for r in ratio) and sum(ratio) > 0):
        problems.add(where("ratio"), f"ratio must be three non-negative numbers (train:selection:test), got {ratio!r}")
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        problems.add(where("seed"), f"seed must be an integer, got {seed!r}")
        return None
    if path is None:
        return None
    records = _records(path, problems)
    if records is None:
        return None
    n, total = len(records), sum(ratio)
    sizes = [round(n * ratio[0] / total), round(n * ratio[1] / total)]
    sizes.append(n - sum(sizes))
    for name, size in zip(SPLITS, sizes):
        if size <= 0:
            problems.add(where("ratio"), f"ratio {ratio} leaves split '{name}' empty with {n} items in {path.name}")
            return None
    # Rank by a hash of (seed, id): the split survives reordering the file and needs no RNG state.
    ranked = sorted(records, key=lambda pair: hashlib.sha256(f"{seed}:{pair[1].get(id_field)}".encode()).hexdigest())
    bounds = (sizes[0], sizes[0] + sizes[1], n)
    chunks = (ranked[:bounds[0]], ranked[bounds[0]:bounds[1]], ranked[bounds[1]:])
    return [(name, path, sorted(chunk, key=lambda pair: pair[0])) for name, chunk in zip(SPLITS, chunks)]


def _split_files(folder: Path, data: dict, toml: str, problems: Problems, tpath: Path, id_field: str):
    """[(split, path, [(line, record)])] from [splits]; None when unusable."""
    def where(key: str) -> str:
        line = _key_line(toml, key)
        return f"{tpath}:{line}" if line else str(tpath)

    splits = data.get("splits")
    if not isinstance(splits, dict):
        problems.add(where("splits"), "needs a [splits] table (train/selection/test files, or file + ratio)")
        return None
    if "file" in splits:
        extra = sorted(set(splits) - {"file", "ratio", "seed"})
        if extra:
            problems.add(where(extra[0]), f"[splits] with 'file' takes only file, ratio, seed; got '{extra[0]}'")
        return _ratio_split(folder, splits, id_field, problems, where)
    extra = sorted(set(splits) - set(SPLITS))
    if extra:
        problems.add(where(extra[0]), f"unknown split '{extra[0]}' in [splits] (use {', '.join(SPLITS)} or file)")
    result = []
    for name in SPLITS:
        if name not in splits:
            problems.add(where("splits"), f"[splits] has no '{name}' file")
            continue
        path = _inside(folder, splits[name], problems, where(name))
        if path is not None:
            result.append((name, path, _records(path, problems)))
    return result if len(result) == len(SPLITS) else None


def _placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def _check_prompt(data: dict, toml: str, tpath: Path, problems: Problems, input_fields) -> str | None:
    prompt = data.get("prompt")
    where = f"{tpath}:{_key_line(toml, 'prompt') or 1}"
    if not isinstance(prompt, str) or not prompt.strip():
        problems.add(where, "needs a non-empty 'prompt' template with {field} placeholders")
        return None
    try:
        names = _placeholders(prompt)
    except ValueError as exc:
        problems.add(where, f"prompt template is not valid str.format syntax: {exc} (write {{{{ }}}} for braces)")
        return None
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        problems.add(where, f"prompt placeholder {{{bad[0]}}} must be a plain field name")
        return None
    if not names:
        problems.add(where, "prompt template has no input placeholder like {question}: the model never sees the item")
        return None
    if input_fields is not None:
        unknown = [n for n in names if n not in input_fields]
        if unknown:
            problems.add(where, f"prompt placeholder {{{unknown[0]}}} is not in input_fields {input_fields}")
            return None
    return prompt


def _string_key(data: dict, key: str, default: str | None, toml: str, tpath: Path, problems: Problems) -> str | None:
    value = data.get(key, default)
    if not isinstance(value, str) or not value.strip():
        problems.add(f"{tpath}:{_key_line(toml, key) or 1}", f"'{key}' must be a non-empty string, got {value!r}")
        return None
    return value


def _load_toml(tpath: Path, problems: Problems) -> tuple[str, dict] | None:
    """(text, table) of task.toml, its unknown keys reported; None when it is unreadable."""
    toml = _read_text(tpath, problems, "task.toml")
    if toml is None:
        return None
    try:
        data = tomllib.loads(toml)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        problems.add(f"{tpath}:{line.group(1)}" if line else str(tpath), f"bad TOML: {str(exc).split(' (at')[0]}")
        return None
    for key in sorted(set(data) - set(TOML_KEYS)):
        problems.add(f"{tpath}:{_key_line(toml, key) or 1}", f"unknown key '{key}' (known: {', '.join(TOML_KEYS)})")
    return toml, data


def _optional(data: dict, key: str, default: str | bool, toml: str, tpath: Path, problems: Problems):
    """An optional key of its default's type, else the default (a string "false" must not read as true)."""
    value = data.get(key, default)
    if type(value) is not type(default):
        kind = "a string" if isinstance(default, str) else "true or false"
        problems.add(f"{tpath}:{_key_line(toml, key) or 1}", f"'{key}' must be {kind}")
        return default
    return value


def _input_fields(data: dict, toml: str, tpath: Path, problems: Problems) -> list[str] | None:
    input_fields = data.get("input_fields")
    if input_fields is not None and not (isinstance(input_fields, list) and input_fields
                                         and all(isinstance(f, str) and f for f in input_fields)):
        problems.add(f"{tpath}:{_key_line(toml, 'input_fields') or 1}", "'input_fields' must be a list of field names")
        return None
    return input_fields


def _evaluator(data: dict, folder: Path, toml: str, tpath: Path, problems: Problems) -> Scorer | None:
    try:
        return build_evaluator(data.get("evaluator"), folder)
    except TaskError as exc:
        problems.add(f"{tpath}:{_key_line(toml, 'evaluator') or 1}", str(exc))
        return None


def _seed_skill(data: dict, folder: Path, toml: str, tpath: Path, problems: Problems) -> str | None:
    skill_name = _string_key(data, "seed_skill", "seed_skill.md", toml, tpath, problems)
    skill_path = _inside(folder, skill_name, problems, str(tpath)) if skill_name else None
    if skill_path is None:
        return None
    seed_skill = _read_text(skill_path, problems, "seed skill")
    if seed_skill is None:
        return None
    if not seed_skill.strip():
        problems.add(str(skill_path), "seed skill is empty; write at least one line describing the task")
        return None
    try:  # the same checks a skill passed with --seed-skill gets (size, control characters, markers)
        validate_skill(seed_skill, str(skill_path))
    except SkillError as exc:
        problems.add_line(str(exc))
        return None
    return seed_skill


def build_task(folder: Path, problems: Problems) -> TaskProtocol | None:
    """The task a folder holds (a plug-in's wrapper when it names one); None once its problems are reported."""
    tpath = folder / "task.toml"
    loaded = _load_toml(tpath, problems)
    if loaded is None:
        return None
    toml, data = loaded
    name = _string_key(data, "name", None, toml, tpath, problems)
    description = _optional(data, "description", "", toml, tpath, problems)
    simulated = _optional(data, "simulated", False, toml, tpath, problems)
    answer_field = _string_key(data, "answer_field", "expected", toml, tpath, problems)
    id_field = _string_key(data, "id_field", "id", toml, tpath, problems)
    input_fields = _input_fields(data, toml, tpath, problems)
    prompt = _check_prompt(data, toml, tpath, problems, input_fields)
    evaluator = _evaluator(data, folder, toml, tpath, problems)
    seed_skill = _seed_skill(data, folder, toml, tpath, problems)
    files = _split_files(folder, data, toml, problems, tpath, id_field or "id")
    splits = _items(files, answer_field or "expected", id_field or "id", input_fields,
                    _placeholders(prompt) if prompt else [], evaluator, problems)
    if None in (name, answer_field, id_field, prompt, evaluator, seed_skill, splits):
        return None
    # Item content is hashed per item by the eval cache; the template changes every output.
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    task = Task(name, description.strip(), folder, seed_skill, f"{evaluator.version}-{digest}", prompt,
                evaluator, splits, simulated, reply_template(evaluator))
    plugin = data.get("plugin")
    if plugin is None:
        return task
    try:
        return apply_plugin(task, plugin, folder, f"{tpath}:{_key_line(toml, 'plugin') or 1}")
    except TaskError as exc:
        problems.add_line(str(exc))
        return None


def _items(files, answer_field: str, id_field: str, input_fields, placeholders: list[str], evaluator,
           problems: Problems) -> dict[str, tuple[Item, ...]] | None:
    if files is None:
        return None
    needs_expected = evaluator is None or evaluator.needs_expected
    seen: dict[str, str] = {}
    out: dict[str, tuple[Item, ...]] = {}

    def make(where: str, record: dict, split: str) -> Item | None:
        raw_id = record.get(id_field)
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id).strip() == "":
            problems.add(where, f"missing or empty id field '{id_field}' (a non-empty string or integer)")
            return None
        item_id = str(raw_id)
        if item_id in seen:
            problems.add(where, f"duplicate id '{item_id}' (first at {seen[item_id]})")
            return None
        seen[item_id] = where
        if answer_field not in record and needs_expected:
            problems.add(where, f"missing answer field '{answer_field}'")
            return None
        expected = record.get(answer_field)
        problem = evaluator.check(expected) if evaluator is not None and answer_field in record else ""
        if problem:
            problems.add(where, problem)
            return None
        names = input_fields or [k for k in record if k not in (id_field, answer_field)]
        missing = [n for n in dict.fromkeys([*names, *placeholders]) if n not in record]
        if missing:
            problems.add(where, f"missing input field '{missing[0]}' used by the prompt or input_fields")
            return None
        return Item(item_id, {n: record[n] for n in names}, expected, split)

    for split, path, records in files:
        made = [make(f"{path}:{line}", record, split) for line, record in records or ()]
        out[split] = tuple(item for item in made if item is not None)
        if records == []:  # None: the file itself was already reported
            problems.add(str(path), f"split '{split}' has no items")
    return out if all(out.get(name) for name in SPLITS) else None

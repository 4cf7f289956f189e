"""Bad input: every broken task folder, config, seed skill and upload in tests/fixtures/bad/
(plus a few too big to commit, generated here) is refused with ONE line naming the file
and the problem, a non-zero exit, no traceback, and no run left in the store.

The CLI cases run `python -m skillopt` in subprocesses, a few at a time; uploads go
through the same functions the New run page calls (skillopt.ui.uploads, skillopt.tasks.csvimport).
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillopt.tasks import csvimport
from skillopt.errors import UserError
from skillopt.skill import MAX_CHARS
from skillopt.store.reader import Reader
from skillopt.ui import uploads

ROOT = Path(__file__).resolve().parent.parent
BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
SIM = ("--set", "target_model=sim/target", "--set", "optimizer_model=sim/optimizer")
WORKERS = 4


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]  # after `python -m skillopt`
    names: str  # the file (or folder) the error must name
    problem: str  # a phrase of the problem the error must state ("" = checked by another case)


# What each config and skill fixture must be told, in its own words.
CONFIG_PROBLEMS = {
    "unknown-key.toml": "unknown config key 'num_epoch'",
    "unknown-key.yaml": "unknown config key 'numepochs'",
    "table-instead-of-keys.toml": "unknown config key 'models'",
    "wrong-type-string.toml": "'num_epochs' must be int",
    "wrong-type-float-for-int.toml": "'batch_size' must be int",
    "wrong-type-bool.yaml": "'use_gate' must be bool",
    "wrong-type-list.toml": "'lr_scheduler' must be str",
    "out-of-range-negative.toml": "'max_calls' must not be negative",
    "out-of-range-zero.toml": "'learning_rate' must be at least 1",
    "out-of-range-threshold.toml": "'dedupe_threshold' must be between 0 and 1",
    "out-of-range-temperature.yaml": "'temperature' must be between 0 and 2",
    "out-of-range-alpha.toml": "'gate_alpha' must be in (0, 1]",
    "contradictory-learning-rates.toml": "min_learning_rate (4) > learning_rate (2)",
    "unknown-choice.toml": "'gate_mode' must be one of strict, paired",
    "unparseable.toml": "cannot parse config",
    "unparseable.yaml": "cannot parse config",
    "duplicate-key.toml": "cannot parse config",
    "non-mapping.yaml": "config must be a mapping",
    "scalar.yaml": "config must be a mapping",
    "key-instead-of-variable-name.toml": "must name an environment variable, not hold a key",
    "empty-model.toml": "must not be empty",
    "latin1.toml": "not UTF-8",
}
SKILL_PROBLEMS = {
    "empty.md": "skill is empty",
    "whitespace.md": "skill is empty",
    "nul-bytes.md": "binary",
    "image.png.md": "not UTF-8",
    "latin1.md": "not UTF-8",
    "control-characters.md": "binary",
    "unclosed-protected-block.md": "is never closed",
    "end-marker-without-start.md": "without a matching",
    "nested-protected-blocks.md": "nested",
}


def generated(tmp: Path) -> list[Case]:
    """Inputs too big (or too absent) to commit."""
    huge_skill = tmp / "huge-skill.md"
    huge_skill.write_text("# Skill\n\n" + "- Route every order by its house rule.\n" * (MAX_CHARS // 38 + 10),
                          encoding="utf-8")
    giant_skill = tmp / "giant-skill.md"
    giant_skill.write_text("x" * 1_100_000, encoding="utf-8")
    huge_line = valid_task(tmp / "huge-line-task")
    with open(huge_line / "train.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "big", "question": "' + "q" * (1024 * 1024 + 10) + '", "expected": "1"}\n')
    unclosed = valid_task(tmp / "seed-skill-unclosed-block")  # the task loader checks markers: train and validate-task
    (unclosed / "seed_skill.md").write_text("# Fixture\n\nAnswer.\n\n<!-- SLOW_UPDATE_START -->\nNever closed.\n",
                                            encoding="utf-8")
    missing = tmp / "no-such-file"
    return [
        Case("skill/over 200k characters", ("train", "--task", "sim-rulebook", "--seed-skill", str(huge_skill), *SIM),
             str(huge_skill), "the limit is 200,000"),
        Case("skill/over 1 MB", ("train", "--task", "sim-rulebook", "--seed-skill", str(giant_skill), *SIM),
             str(giant_skill), "over 1 MB"),
        Case("skill/missing", ("train", "--task", "sim-rulebook", "--seed-skill", str(missing), *SIM),
             str(missing), "not found"),
        Case("config/missing", ("train", "--task", "sim-rulebook", "--config", str(missing.with_suffix(".toml"))),
             str(missing.with_suffix(".toml")), "not found"),
        Case("task/huge line train", ("train", "--task", str(huge_line), *SIM), str(huge_line / "train.jsonl"),
             "over"),
        Case("task/huge line validate", ("validate-task", str(huge_line)), str(huge_line / "train.jsonl"), "over"),
        Case("task/missing folder", ("train", "--task", str(missing), *SIM), str(missing), "no such task"),
        Case("task/seed skill with an unclosed protected block train", ("train", "--task", str(unclosed), *SIM),
             str(unclosed), "is never closed"),
        Case("task/seed skill with an unclosed protected block validate", ("validate-task", str(unclosed)),
             str(unclosed), "is never closed"),
    ]


def valid_task(folder: Path) -> Path:
    """A copy of a small fixture task with its one flaw (a Latin-1 line) repaired."""
    shutil.copytree(BAD / "tasks" / "latin1-encoded", folder)
    train = folder / "train.jsonl"
    train.write_text(train.read_bytes().decode("latin-1").replace("\xe9", "e"), encoding="utf-8")
    return folder


def cases(tmp: Path) -> list[Case]:
    out = []
    for folder in sorted(p for p in (BAD / "tasks").iterdir() if p.is_dir()):
        rel = str(folder.relative_to(ROOT))
        out.append(Case(f"task/{folder.name} train", ("train", "--task", rel, *SIM), rel, ""))
        out.append(Case(f"task/{folder.name} validate", ("validate-task", rel), rel, ""))
    for path in sorted((BAD / "configs").iterdir()):
        rel = str(path.relative_to(ROOT))
        out.append(Case(f"config/{path.name}", ("train", "--task", "sim-rulebook", "--config", rel), rel,
                        CONFIG_PROBLEMS[path.name]))
    for path in sorted((BAD / "skills").iterdir()):
        rel = str(path.relative_to(ROOT))
        out.append(Case(f"skill/{path.name}", ("train", "--task", "sim-rulebook", "--seed-skill", rel, *SIM), rel,
                        SKILL_PROBLEMS[path.name]))
    return out + generated(tmp)


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    runs: int  # run rows in the case's database afterwards


def run_case(case: Case, db: Path) -> Outcome:
    env = dict(os.environ, SKILLOPT_DB=str(db), PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "skillopt", *case.argv, *(("--db", str(db)) if case.argv[0] == "train"
                                                                           else ())],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    runs = 0
    if db.exists():
        reader = Reader(db)
        try:
            runs = len(reader.runs())
        except sqlite3.OperationalError:  # the file exists but holds no tables
            runs = 0
        finally:
            reader.close()
    return Outcome(proc.returncode, proc.stdout, proc.stderr, runs)


def problems_of(case: Case, out: Outcome) -> list[str]:
    """Every way a case was not rejected cleanly (empty = clean); shared with bench/faults.py."""
    found = []
    lines = out.stderr.strip().splitlines()
    if out.code == 0:
        found.append("exit code 0")
    if "Traceback" in out.stdout + out.stderr:
        found.append("a traceback was printed")
    if len(lines) != 1:
        found.append(f"stderr has {len(lines)} lines, not one: {out.stderr[:300]!r}")
    if out.runs:
        found.append(f"{out.runs} run row(s) left in the store")
    said = out.stderr if case.argv[0] == "train" else out.stdout + out.stderr
    if case.names not in said:
        found.append(f"the error does not name {case.names}")
    if case.problem and case.problem not in said:
        found.append(f"the error does not say {case.problem!r}")
    if case.argv[0] == "validate-task":
        listed = out.stdout.strip().splitlines()
        if not listed or not all(case.names in line for line in listed):
            found.append("validate-task must list each problem on a line naming the file")
    return found


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, tuple[Case, Outcome]]:
    tmp = tmp_path_factory.mktemp("bad")
    all_cases = cases(tmp)

    def one(n_case):
        n, case = n_case
        return case.name, (case, run_case(case, tmp / f"case{n}.db"))

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(one, enumerate(all_cases)))


def test_the_corpus_is_large_and_covers_every_kind(outcomes):
    kinds = {name.split("/")[0] for name in outcomes}
    assert kinds == {"task", "config", "skill"}
    distinct_inputs = {c.names for c, _ in outcomes.values()}
    assert len(distinct_inputs) >= 30 + 10  # CLI inputs; uploads are counted below
    assert set(CONFIG_PROBLEMS) == {p.name for p in (BAD / "configs").iterdir()}
    assert set(SKILL_PROBLEMS) == {p.name for p in (BAD / "skills").iterdir()}


def test_every_bad_input_is_rejected_cleanly(outcomes):
    failures = {name: problems_of(case, out) for name, (case, out) in outcomes.items()}
    assert {name: p for name, p in failures.items() if p} == {}


def test_train_names_the_same_first_problem_as_validate_task(outcomes):
    for name, (case, out) in outcomes.items():
        if name.startswith("task/") and name.endswith(" train") and name[: -len(" train")] + " validate" in outcomes:
            validate = outcomes[name[: -len(" train")] + " validate"][1]
            first = validate.stdout.strip().splitlines()[0]
            assert out.stderr.strip().startswith("error: " + first), name


def test_a_planted_key_in_a_config_is_not_echoed(outcomes):
    _, out = outcomes["config/key-instead-of-variable-name.toml"]
    assert "sk-planted" not in out.stdout + out.stderr


# ---- dashboard uploads ------------------------------------------------------------------------------

def upload_problems(name: str, data: bytes, mapping: dict | None = None, answer: str | None = None,
                    id_column: str | None = None) -> list[str]:
    """The New run page's upload flow: convert, read the header, preview; every problem it shows."""
    try:
        csv_bytes = uploads.jsonl_to_csv(name, data) if name.endswith(".jsonl") else data
        columns = uploads.csv_columns(name, csv_bytes)
    except UserError as exc:
        return [str(exc)]
    answer = answer or columns[-1]
    if mapping is None:
        mapping = uploads.mapping_for([c for c in columns if c not in (answer, id_column)])
    _, problems = csvimport.preview_csv(csv_bytes, mapping, answer_column=answer, id_column=id_column, source=name)
    return problems


# file -> (mapping, answer column, id column, phrase of the problem). The page never passes an
# upload with problems on to import_csv_bytes; CSV uploads are also fed to it directly (below),
# except those the page stops at the header (NO_DIRECT_IMPORT): there is nothing to import.
NO_DIRECT_IMPORT = ("empty-header-name.csv", "bad-line.jsonl", "line-not-an-object.jsonl", "utf16.jsonl")
UPLOADS = {
    "missing-mapped-column.csv": ({"subject": "subject", "text": "Body"}, "queue", None, "column 'Body' not in the header"),
    "empty.csv": (None, None, None, "the file is empty"),
    "header-only.csv": (None, None, None, "no data rows"),
    "latin1.csv": (None, None, None, "not UTF-8"),
    "nul-bytes.csv": (None, None, None, "binary file"),
    "ragged-row.csv": (None, None, None, "row has 2 cells, the header has 3"),
    "duplicate-ids.csv": (None, None, "id", "duplicate id 't1'"),
    "empty-header-name.csv": (None, None, None, "empty column name"),
    "empty-answer.csv": (None, None, None, "empty answer"),
    "bad-line.jsonl": (None, None, None, "bad-line.jsonl:2: not valid JSON"),
    "line-not-an-object.jsonl": (None, None, None, "each line must be a JSON object"),
    "utf16.jsonl": (None, None, None, "not UTF-8"),
    "answer-is-an-input.csv": ({"queue": "queue"}, "queue", None, "the model would see the answer"),
}


def upload_cases(tmp: Path) -> dict[str, tuple[bytes, tuple]]:
    out = {}
    for name, spec in UPLOADS.items():
        source = BAD / "uploads" / ("missing-mapped-column.csv" if name == "answer-is-an-input.csv" else name)
        out[name] = (source.read_bytes(), spec)
    big = b"subject,queue\n" + b"a fairly long subject line for padding,billing\n" * (21 * 1024 * 1024 // 46)
    out["over-20-MB.csv"] = (big, (None, None, None, "MB"))
    return out


def upload_rejected_cleanly(name: str, data: bytes, spec: tuple, out_dir: Path) -> list[str]:
    """Every way an upload was not refused cleanly (empty = clean); shared with bench/faults.py."""
    mapping, answer, id_column, phrase = spec
    found = []
    shown = upload_problems(name, data, mapping, answer, id_column)
    if not shown:
        found.append("no problem shown")
    elif not all(name in p and "\n" not in p for p in shown):
        found.append(f"a problem does not name {name} on one line: {shown[:2]}")
    elif not any(phrase in p for p in shown):
        found.append(f"no problem says {phrase!r}: {shown[:2]}")
    target = out_dir / "task"
    if name in NO_DIRECT_IMPORT:
        return found
    try:
        csvimport.import_csv_bytes(data, name, target, mapping=mapping or {"subject": "subject"},
                                   answer_column=answer or "queue", id_column=id_column)
        found.append("import_csv_bytes accepted it")
    except UserError as exc:
        if name not in str(exc):
            found.append(f"import error does not name {name}: {exc}")
    if target.exists() or (out_dir.exists() and any(out_dir.iterdir())):
        found.append("a partial task folder was left behind")
    return found


def test_upload_corpus_has_every_kind():
    assert {p.name for p in (BAD / "uploads").iterdir()} <= set(UPLOADS)


@pytest.mark.parametrize("name", [*UPLOADS, "over-20-MB.csv"])
def test_bad_upload_is_refused_before_use(tmp_path, name):
    data, spec = upload_cases(tmp_path)[name]
    assert upload_rejected_cleanly(name, data, spec, tmp_path / "uploads") == []


def test_upload_size_limit_is_checked_before_parsing():
    with pytest.raises(UserError, match="over the 20 MB upload limit"):
        uploads.check_upload("x.csv", b"a" * (csvimport.MAX_UPLOAD_BYTES + 1))
    rows, problems = csvimport.preview_csv(b"a,b\n" + b"1,2\n" * (csvimport.MAX_UPLOAD_BYTES // 4 + 1), {"a": "a"},
                                           answer_column="b", source="big.csv")
    assert rows == [] and len(problems) == 1 and problems[0].startswith("big.csv: file is")

"""The benchmark figures in README.md and bench/README.md are written from bench/results/ only.

A hand edit of a figure, or a result saved without refreshing the READMEs, fails here; a bench
without a saved result shows as "not measured", never as an older number. Also checked: the
saved results say where they come from, the statistics, and the calls bench's counting rule
(a test evaluation of a skill text already tested in the run is counted once)."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import benchkit  # noqa: E402  (bench/ on sys.path, as when a bench runs)
import report  # noqa: E402


def copy_readmes(tmp_path: Path) -> Path:
    (tmp_path / "bench").mkdir()
    for rel in report.BLOCKS:
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def test_the_readmes_match_the_saved_results():
    for path, (old, new) in report.rendered().items():
        assert old == new, f"{path.relative_to(ROOT)} differs from bench/results/: run python bench/report.py"


def blocks(text: str) -> str:
    """Everything between the bench markers of a README."""
    return "\n".join(re.findall(r"<!-- bench:\w+:begin -->\n(.*?)<!-- bench:\w+:end -->", text, re.S))


def test_a_hand_edited_figure_is_caught(tmp_path):
    root = copy_readmes(tmp_path)
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    head, sep, rest = text.partition("<!-- bench:performance:begin -->")
    edited = re.sub(r"\d", lambda m: str((int(m.group(0)) + 1) % 10), rest, count=1)
    if edited == rest or edited.index("<!-- bench:performance:end -->") < re.search(r"\d", rest).start():
        edited = rest.replace("<!-- bench:performance:end -->", "| made up | 0.1× |\n<!-- bench:performance:end -->")
    readme.write_text(head + sep + edited, encoding="utf-8")
    old, new = report.rendered(root)[readme]
    assert old != new and new == (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("missing", report.BENCHES)
def test_a_missing_result_shows_as_not_measured(tmp_path, missing):
    results = {k: v for k, v in report.load().items() if k != missing}
    root = copy_readmes(tmp_path)
    generated = "\n".join(blocks(new) for _, new in report.rendered(root, results).values())
    rows = [line for line in generated.splitlines() if f"bench/{missing}.py" in line]
    if missing == "faults":
        rows += [line for line in generated.splitlines() if line.startswith("Fault sweeps")]
    assert rows and all(report.NOT_MEASURED in row for row in rows)
    # no figure left over: the figures cell says only that, and the measured cell is empty
    assert all(row.split(" | ")[2] == report.NOT_MEASURED and row.endswith("| — |") for row in rows
               if row.startswith("| "))
    if missing == "calls":
        assert "Model calls in detail: not measured." in generated


def test_without_any_result_every_row_is_not_measured(tmp_path):
    root = copy_readmes(tmp_path)
    text = report.rendered(root, {})[root / "README.md"][1]
    rows = [line for line in blocks(text).splitlines() if line.startswith("| ") and "bench/" in line]
    assert len(rows) == 5 and all(report.NOT_MEASURED in row for row in rows)


def test_saved_results_say_where_they_come_from_and_stay_small():
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        assert result["bench"] == path.stem and path.stem in report.BENCHES
        assert re.fullmatch(r"[0-9a-f]{40}", result["commit"]) and isinstance(result["dirty"], bool)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", result["date"])
        assert result["command"].startswith(f"python bench/{path.stem}.py")
        assert path.stat().st_size < 20_000


def test_finish_prints_and_saves_the_same_stamped_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(benchkit, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "bench" / "calls.py"), "--seeds", "2"])
    benchkit.finish("calls", {"x": 1})
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert (tmp_path / "calls.json").read_text(encoding="utf-8").strip() == line
    saved = json.loads(line)
    assert saved["figures"] == {"x": 1} and saved["command"] == "python bench/calls.py --seeds 2"
    benchkit.finish("calls", {"x": 2}, save=False)
    assert json.loads((tmp_path / "calls.json").read_text(encoding="utf-8"))["figures"] == {"x": 1}


def test_the_interval_is_students_t():
    stat = benchkit.interval([1.0, 2.0, 3.0])
    assert stat["mean"] == 2.0 and stat["high"] - 2.0 == pytest.approx(4.303 / 3 ** 0.5, rel=1e-4)
    assert benchkit.t95(40) == pytest.approx(2.021, abs=2e-3) and benchkit.t95(10_000) == pytest.approx(1.96, abs=1e-3)
    assert benchkit.interval([0.5])["low"] is None


def test_a_repeated_test_of_the_same_skill_text_is_counted_once(tmp_path):
    import calls
    from skillopt.store.reader import Reader

    overrides = ("target_model=sim/target", "optimizer_model=sim/optimizer", *calls.REFERENCE, "num_epochs=1",
                 "max_steps_per_epoch=1")
    row = calls.measure(tmp_path / "runs.db", overrides, seed=7)
    reader = Reader(tmp_path / "runs.db")
    (run,) = reader.runs()
    tests = reader.tests(run["id"])
    made = reader.one("SELECT COUNT(*) AS n FROM llm_calls WHERE run_id = ? AND role = 'target' AND cached = 0",
                      (run["id"],))["n"]
    shas = [tests[w]["skill_sha"] for w in ("seed", "best", "final")]
    repeats = sum(sha in shas[:i] for i, sha in enumerate(shas))
    assert repeats >= 1  # best == final at least, or the scenario tests nothing
    assert row["repeat_test_calls"] == repeats * tests["seed"]["n_items"]
    assert row["target_calls"] == made - row["repeat_test_calls"]
    assert row["stages"]["test"] == (3 - repeats) * tests["seed"]["n_items"]

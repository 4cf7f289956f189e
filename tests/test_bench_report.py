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
import learning_tables  # noqa: E402
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


# A trial (learning-NAME: an option tried with the learning bench) has no row of its own to
# mark "not measured": without its file the README simply shows no trial.
@pytest.mark.parametrize("missing", [b for b in report.BENCHES if "-" not in b])
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
    assert len(rows) == 8 and all(report.NOT_MEASURED in row for row in rows)


def test_saved_results_say_where_they_come_from_and_stay_small():
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        assert result["bench"] == path.stem and path.stem in report.BENCHES
        assert re.fullmatch(r"[0-9a-f]{40}", result["commit"]) and isinstance(result["dirty"], bool)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", result["date"])
        assert result["command"].startswith(f"python bench/{path.stem.split('-')[0]}.py")
        # summaries, never per-item data: 20 kB a file, or 4 kB a task row where a result has rows
        # (a learning row carries its trial log, about 0.9 kB)
        rows = (result["figures"].get("tasks") or {}) if isinstance(result["figures"], dict) else {}
        assert path.stat().st_size < max(20_000, 4_000 * len(rows))
        assert all(len(json.dumps(row)) < 4_000 for row in rows.values() if isinstance(row, dict))


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
    shas = [tests[w]["skill_sha"] for w in ("seed", "best", "final", "none")]
    repeats = sum(sha in shas[:i] for i, sha in enumerate(shas))
    assert repeats >= 1  # best == final at least, or the scenario tests nothing
    assert row["repeat_test_calls"] == repeats * tests["seed"]["n_items"]
    assert row["target_calls"] == made - row["repeat_test_calls"]
    assert row["stages"]["test"] == (4 - repeats) * tests["seed"]["n_items"]


def real_model_result(mode: str, calls: float, wall: float, test_diff: float) -> dict:
    arm = {"target_calls": 400, "optimizer_calls": 30, "tokens": 200_000, "wall_s": 3600.0,
           "test": {"seed": 0.5, "best": 0.6, "final": 0.6}}
    new = {**arm, "target_calls": 400 * calls, "wall_s": 3600 * wall,
           "test": {**arm["test"], "best": 0.6 + test_diff}}
    return {"bench": "real_model", "commit": "0" * 40, "dirty": False, "date": "2026-12-01 00:00 UTC",
            "command": "python bench/real_model.py", "figures": {
                "mode": mode, "task": "ticket-routing", "target": "local/qwen2.5-coder-1.5b", "seed": 42,
                "arms": {"reference": arm, "defaults": new}, "test_diff": test_diff,
                "ratio": {"target_calls": calls, "optimizer_calls": 1.0, "tokens": 0.5, "wall_s": wall},
                "met": calls <= 0.6 and wall <= 0.5 and test_diff >= 0}}


def test_the_real_model_row_shows_a_full_run_only_and_names_each_miss():
    quick = report.real_model_row({"real_model": real_model_result("quick", 0.5, 0.3, 0.0)})
    assert quick.split(" | ")[2] == report.NOT_MEASURED and "15–35 minutes on 2 cores" in quick
    met = report.real_model_row({"real_model": real_model_result("full", 0.55, 0.4, 0.01)})
    assert "**0.55× target calls**" in met and "**0.40× wall time**" in met and met.split(" | ")[3].endswith(": met")
    missed = report.real_model_row({"real_model": real_model_result("full", 0.7, 0.6, -0.02)})
    assert "**missed** (calls above 0.6×, wall time above 0.5×, test score lower)" in missed
    import calls

    published = real_model_result("full", 0.7, 0.6, 0.0)
    published["figures"]["reference"] = list(calls.REFERENCE)
    assert "Reference (strict gate, no cache, none of the project's additions)" in report.real_model_row(
        {"real_model": published})
    published["figures"]["reference"] = ["gate_mode=strict", "use_cache=false", "check_evidence=false"]
    assert "the project's additions then on by default ran in it too" in report.real_model_row({"real_model": published})


def test_the_embedded_model_row_misses_when_reuse_changes_a_reply():
    figures = {"cached_per_min": 20.0, "uncached_per_min": 5.0, "speedup": 4.0, "load_s": 1.0,
               "skill_tokens": 684, "items": 8, "skill": "trained"}
    result = {"commit": "abc1234", "dirty": False, "date": "2026-12-06 10:00 UTC"}
    same = report.local_model_row({"local_model": {**result, "figures": {**figures, "replies_differ": 0, "met": True}}})
    assert "(replies that differ: 0 of 8)" in same and same.split(" | ")[3].endswith(": met")
    changed = report.local_model_row({"local_model": {**result, "figures": {**figures, "replies_differ": 1, "met": False}}})
    assert "(replies that differ: 1 of 8)" in changed and "**missed**" in changed.split(" | ")[3]


def test_the_browser_row_shows_every_page_and_the_slow_ones():
    dashboard = json.loads((ROOT / "bench" / "results" / "dashboard.json").read_text(encoding="utf-8"))
    figures = {k: v for k, v in dashboard["figures"].items() if not k.startswith("browser_")}
    without = report.browser_row({"dashboard": {**dashboard, "figures": figures}})
    assert without.split(" | ")[2] == report.NOT_MEASURED and without.endswith("| — |")
    browser = {"browser_first_s": {"Home": 1.5, "Monitor": 2.5}, "browser_rerender_s": {"Home": 0.5, "Monitor": 0.4},
               "browser_first_target_s": 2.0, "browser_rerender_target_s": 1.0, "browser_met": False}
    row = report.browser_row({"dashboard": {**dashboard, "figures": {**figures, **browser}}})
    assert "Home 1.5 / 0.5 s, Monitor 2.5 / 0.4 s" in row and row.endswith(f"**missed** (over: Monitor) | "
                                                                          f"{report.when(dashboard)} |")
    assert "floor" not in row  # a result measured before the floor was: nothing invented for it
    floor = {"browser_floor_first_s": {"Streamlit floor: text": 1.2, "Streamlit floor: chart": 1.6},
             "browser_floor_rerender_s": {"Streamlit floor: text": 0.3, "Streamlit floor: chart": 0.45}}
    row = report.browser_row({"dashboard": {**dashboard, "figures": {**figures, **browser, **floor}}})
    assert "Monitor 2.5 / 0.4 s; Streamlit's own floor" in row and ": text 1.2 / 0.3 s, chart 1.6 / 0.5 s |" in row
    assert row.endswith(f"**missed** (over: Monitor) | {report.when(dashboard)} |")  # the floor is no excuse


def test_the_floor_is_kept_apart_from_the_pages_and_their_verdict():
    import browser_render

    samples = {"Home": [(1.9, 0.5), (1.5, 0.4), (1.7, 0.9)], "Streamlit floor: text": [(2.5, 1.5)] * 3}
    f = browser_render.figures(samples)
    assert f["browser_first_s"] == {"Home": 1.7} and f["browser_rerender_s"] == {"Home": 0.5}
    assert f["browser_floor_first_s"] == {"Streamlit floor: text": 2.5} and f["browser_met"] is True
    assert f["browser_repeats"] == 3 and "Streamlit floor: text" not in f["browser_samples"]
    edge = browser_render.figures({"Home": [(1.9996, 0.5)] * 3})
    assert edge["browser_first_s"] == {"Home": 2.0} and edge["browser_met"] is False  # judged as shown


def test_the_overhead_verdict_needs_a_median_of_five_runs():
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "bench" / "overhead.py"), "--repeats", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "at least 5 runs" in done.stderr


def test_the_real_model_bench_compares_both_arms_and_a_quick_run_saves_nothing():
    """The script end to end on the simulated world (the embedded model takes an hour)."""
    import subprocess

    saved = ROOT / "bench" / "results" / "real_model.json"
    before = saved.read_bytes() if saved.exists() else None
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "real_model.py"), "--quick", "--task", "sim-rulebook",
                           "--target", "sim/target", "--optimizer", "sim/optimizer"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])["figures"]
    ref, new = figures["arms"]["reference"], figures["arms"]["defaults"]
    assert figures["mode"] == "quick" and ref["status"] == new["status"] == "completed"
    assert 0 < new["target_calls"] and 0 < ref["target_calls"]
    assert all(sum(arm["stages"].values()) == arm["target_calls"] for arm in (ref, new))  # every call has a stage
    assert ref["stages"]["examples"] == 0  # the published behaviour tries no model-free trial
    assert figures["ratio"]["target_calls"] == round(new["target_calls"] / ref["target_calls"], 3)
    assert (saved.read_bytes() if saved.exists() else None) == before


def test_the_window_table_lists_every_prompt_sent_and_what_it_left_out():
    calls = [{"prompt_tokens": 4245, "reply_room": -149, "error": "context: Requested tokens (4245) exceed "
              "context window of 4096", "note": "", "repaired": False},
             {"prompt_tokens": 3651, "reply_room": 445, "error": "", "repaired": False,
              "note": "prompt fitted to the context window: cases clipped to 300 chars"}]
    fitted = [{"prompt_tokens": 2538, "reply_room": 1558, "error": "", "repaired": True,
               "note": "prompt fitted to the context window: cases clipped to 300 chars, skill lines clipped to 160 "
                       "chars; invalid_json: truncated (repair asked)"}]
    figures = {"task": "invoice-extraction", "skill_tokens": 2034, "failures": 6, "rollouts": 8, "room": 3584,
               "arms": [{"arm": "reference", "minibatches": 1, "usable": 1, "edits": 1, "calls": calls},
                        {"arm": "fitted", "minibatches": 1, "usable": 1, "edits": 2, "calls": fitted}]}
    text = learning_tables.window({"window": {"figures": figures, "date": "2026-12-02", "commit": "abc1234"}})
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| arm")]
    assert rows == [
        "| reference | 1 | 4245 (-149) | failed: context: Requested tokens (4245) exceed context window of 4096 | "
        "nothing |  |",
        "|  | 2 | 3651 (445) | answered | cases clipped to 300 chars | 1 / 1 usable, 1 edit(s) |",
        "| fitted | 1 | 2538 (1558) | answered after a repair re-ask | cases clipped to 300 chars, skill lines "
        "clipped to 160 chars | 1 / 1 usable, 2 edit(s) |"]
    assert "2034 tokens; 6 of 8 rollouts failed; a prompt may take 3584 tokens" in text
    assert learning_tables.window({}).endswith(f"{report.NOT_MEASURED}.")

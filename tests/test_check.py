"""`python -m skillopt check`: real exit codes on real (simulated) scores, JUnit and Markdown
reports, pinned items, and the example GitHub Actions workflow's command line."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from skillopt import cli
from skillopt.check import CheckResult, ItemResult
from skillopt.checkreport import markdown
from skillopt.config import load_config
from skillopt.models.limits import Meter
from skillopt.models.llm import build_models
from skillopt.plan import Plan
from skillopt.rollout import Evaluator
from skillopt.store.writer import Store
from skillopt.tasks.loader import BUILTIN_DIR, load_task
from tests.helpers import SIM

ROOT = Path(__file__).resolve().parent.parent
SEED = (BUILTIN_DIR / "sim-rulebook" / "seed_skill.md").read_text()
RULES = ["- Items with lithium batteries decide the route: ground.",
         "- Any chargeback history on the account means route hold.",
         "- Orders from wholesale customers always get route consolidate.",
         "- Orders to Tacoma, WA (our warehouse city): route pickup.",
         "- Ship-to addresses with a P.O. Box get route postal.",
         "- If any item is engraved, the route is split.",
         "- Saturday delivery requests get route courier.",
         "- Orders shipping to Alaska (AK) or Hawaii (HI): route air.",
         "- Order codes starting with Z are bulky goods: route freight.",
         "- Orders with a total above $2,500: route review."]
DROPPED = RULES[3:5]  # the regressed skill forgot the Tacoma and PO Box rules


def skill_with(rules: list[str]) -> str:
    anchor = "- When nothing special applies, the route is standard.\n"
    return SEED.replace(anchor, anchor + "".join(f"{r}\n" for r in rules))


GOOD, REGRESSED = skill_with(RULES), skill_with([r for r in RULES if r not in DROPPED])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("check")
    (d / "good.md").write_text(GOOD)
    (d / "regressed.md").write_text(REGRESSED)
    return d


@pytest.fixture(scope="module")
def scores(files):
    """item id -> (hard under GOOD, hard under REGRESSED) for every item, scored directly."""
    config = load_config(None, SIM)
    task = load_task("sim-rulebook")
    store = Store(files / "scores.db")
    models = build_models(config, store, "", Meter(0, 0))
    ev = Evaluator(task, models.target, judge=None, cache=None, use_cache=False, workers=4, run_id="",
                   emit=lambda e: None)
    items = list(task.items().values())
    good = ev.run(GOOD, items, step=0, split="test", purpose="eval", stage="test").by_item
    bad = ev.run(REGRESSED, items, step=0, split="test", purpose="eval", stage="test").by_item
    ev.close()
    store.close()
    test_ids = [i.id for i in Plan.make(task, config).test]
    return {i.id: (good[i.id].evaluation.hard, bad[i.id].evaluation.hard) for i in items}, test_ids


def check(args: list[str], db: Path) -> list[str]:
    return ["check", "--db", str(db), "--task", "sim-rulebook", *[a for s in SIM for a in ("--set", s)], *args]


def junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot().find("testsuite")


def test_a_regressed_skill_exits_1_with_reports(files, scores, tmp_path):
    per_item, test_ids = scores
    broken = sum(per_item[i][0] > per_item[i][1] for i in test_ids)
    fixed = sum(per_item[i][0] < per_item[i][1] for i in test_ids)
    assert broken > 5, "forgetting two rules loses test items"
    args = check(["--skill", str(files / "regressed.md"), "--baseline", str(files / "good.md"),
                  "--junit", str(tmp_path / "out.xml"), "--markdown", str(tmp_path / "out.md")], tmp_path / "c.db")
    done = subprocess.run([sys.executable, "-m", "skillopt", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    drop = (broken - fixed) / len(test_ids)
    assert done.stdout.startswith("check regressed: sim-rulebook")
    assert f"({-drop:+.3f}, tolerance 0.020, {len(test_ids)} items)" in done.stdout
    suite = junit(tmp_path / "out.xml")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "1", "0")
    md = (tmp_path / "out.md").read_text()
    assert md.startswith("## ❌ SkillOpt check regressed: `sim-rulebook`")
    assert f"### Flips on the test split: {fixed} fixed, {broken} broken" in md
    assert "```diff\n" + "\n".join(f"-{r}" for r in DROPPED) + "\n```" in md


def test_a_better_skill_passes_with_its_pinned_items(files, scores, tmp_path):
    per_item, test_ids = scores
    passing = [i for i in test_ids if per_item[i][0] == 1.0][:3]
    (tmp_path / "pins.txt").write_text("# guarded\n" + "\n".join(passing) + "\n\n")
    code = cli.main(check(["--skill", str(files / "good.md"), "--pinned", str(tmp_path / "pins.txt"),
                           "--junit", str(tmp_path / "j.xml")], tmp_path / "c.db"))
    assert code == 0
    suite = junit(tmp_path / "j.xml")
    assert [c.get("name") for c in suite.findall("testcase")][1:] == passing
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")


def test_a_failing_pinned_item_fails_the_check_even_within_tolerance(files, scores, tmp_path, capsys):
    per_item, _ = scores
    lost = next(i for i, (good, bad) in per_item.items() if good == 1.0 and bad < 1.0)
    kept = next(i for i, (good, bad) in per_item.items() if bad == 1.0)
    (tmp_path / "pins.txt").write_text(f"{kept}\n{lost}  # the PO Box order from the incident\n")
    code = cli.main(check(["--skill", str(files / "regressed.md"), "--baseline", str(files / "good.md"),
                           "--pinned", str(tmp_path / "pins.txt"), "--tolerance", "1", "--junit",
                           str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "r.md")], tmp_path / "c.db"))
    assert code == 1
    assert f"pinned item {lost} fails" in capsys.readouterr().out
    failing = [c.get("name") for c in junit(tmp_path / "j.xml").findall("testcase") if c.find("failure") is not None]
    assert failing == [lost]
    assert "### Pinned items: 1 of 2 pass" in (tmp_path / "r.md").read_text()


def test_the_task_folders_pinned_txt_is_used_by_default(files, scores, tmp_path, capsys):
    per_item, _ = scores
    lost = next(i for i, (good, bad) in per_item.items() if good == 1.0 and bad < 1.0)
    task = tmp_path / "rulebook"
    shutil.copytree(BUILTIN_DIR / "sim-rulebook", task)
    (task / "pinned.txt").write_text(f"{lost}\n")
    args = check(["--skill", str(files / "regressed.md"), "--tolerance", "1"], tmp_path / "c.db")
    args[args.index("sim-rulebook")] = str(task)
    assert cli.main(args) == 1
    assert f"pinned item {lost} fails" in capsys.readouterr().out


def test_an_unknown_pinned_id_is_a_one_line_error(files, tmp_path, capsys):
    (tmp_path / "pins.txt").write_text("tes-001\nno-such-item\n")
    pinned = ["--pinned", str(tmp_path / "pins.txt")]
    code = cli.main(check(["--skill", str(files / "good.md"), *pinned], tmp_path / "c.db"))
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path / 'pins.txt'}:2: item 'no-such-item' is not in the task"


def test_model_errors_leave_the_check_not_verified(files, tmp_path):
    out = tmp_path / "j.xml"
    code = cli.main(["check", "--db", str(tmp_path / "c.db"), "--task", "sim-rulebook", "--skill",
                     str(files / "good.md"), "--set", "target_model=sim/target?timeout=1", "--set", "max_retries=0",
                     "--set", "optimizer_model=sim/optimizer", "--junit", str(out)])
    assert code == 3
    suite = junit(out)
    assert (suite.get("failures"), suite.get("errors")) == ("0", "1")


def result(**changes) -> CheckResult:
    base = dict(task="t", metric="hard", skill_name="s.md", baseline_name="b.md", score=0.8, baseline_score=0.8,
                tolerance=0.02, n_items=10, n_errors=0, baseline_errors=0, complete=True, pinned=(),
                pinned_source="", flips=(), changed=())
    return CheckResult(**{**base, **changes})


@pytest.mark.parametrize("score,code", [(0.78, 0), (0.7799, 1), (0.9, 0)])
def test_the_tolerance_is_a_drop_of_at_most(score, code):
    assert result(score=score).exit_code == code


def test_markdown_keeps_untrusted_text_inside_its_cells():
    evil = ItemResult(item_id="x|<img src=y>", expected="a\nb", baseline=1.0, skill=0.0, passed=False,
                      output="`rm` | **bold** <script>alert(1)</script> [link](http://z)")
    md = markdown(result(pinned=(evil,), pinned_source="p.txt", flips=(evil,), changed=("+```", "-old")))
    assert "<script>" not in md and "<img" not in md and "[link](" not in md
    rows = [line for line in md.splitlines() if line.startswith("| x")]
    assert len(rows) == 2 and all(line.replace("\\|", "").count("|") in (5, 6) for line in rows)
    assert "````diff\n+```\n-old\n````" in md  # a fence longer than any backtick run inside it


def test_the_example_workflow_runs_a_check_this_parser_accepts():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "skill-check.yml").read_text())
    commands = [line for job in workflow["jobs"].values() for step in job["steps"]
                for line in str(step.get("run", "")).replace("\\\n", " ").splitlines()
                if "python -m skillopt check" in line]
    assert commands, "the workflow runs the check"
    for line in commands:
        argv = shlex.split(line.split("python -m skillopt", 1)[1])
        args = cli.parser().parse_args(argv)
        assert args.fn is cli.cmd_check and args.junit and args.markdown

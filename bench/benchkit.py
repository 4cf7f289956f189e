"""What every bench shares: the saved result (stamped with commit, date and command) and the statistics.

Each bench ends by printing one JSON line and saving that same object to
bench/results/<bench>.json (the latest run overwrites it). bench/report.py writes the figures
in README.md and bench/README.md from those files only, so the two READMEs cannot disagree
with each other or with what was measured, and a slow bench need not be re-run to refresh them.
"""
from __future__ import annotations

import datetime
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (no scipy needed).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def stamp(argv: list[str] | None = None) -> dict:
    """Where a figure comes from: the commit, whether tracked files differed from it, the date, the command."""
    argv = sys.argv if argv is None else argv
    script = Path(argv[0]).resolve()
    try:
        shown = script.relative_to(ROOT).as_posix()
    except ValueError:
        shown = script.name
    return {"commit": _git("rev-parse", "HEAD") or "unknown",
            # bench/results/ left out: a bench that saves after each task has written there itself
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results")),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python", shown, *argv[1:]])}


def save_result(bench: str, figures: dict) -> str:
    """Save figures + stamp as the bench's result; returns the JSON line."""
    line = json.dumps({"bench": bench, **stamp(), "figures": figures}, separators=(",", ":"))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{bench}.json").write_text(line + "\n", encoding="utf-8")
    return line


def finish(bench: str, figures: dict, save: bool = True) -> dict:
    """Print the bench's last line (figures + stamp, one JSON object) and save it as its result."""
    result = {"bench": bench, **stamp(), "figures": figures}
    print(json.dumps(result, separators=(",", ":")))
    if save:
        save_result(bench, figures)
    return result


def t95(df: int) -> float:
    """The two-sided 95% Student t quantile (a Cornish-Fisher expansion past 30 degrees of freedom)."""
    if df < 1:
        return math.inf
    if df <= len(_T95):
        return _T95[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def interval(values: list[float]) -> dict:
    """Mean and 95% t-interval of independent per-seed values."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": mean, "low": None, "high": None, "n": len(values)}  # one value has no spread
    half = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": len(values)}

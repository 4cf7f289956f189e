"""The public API of `skillopt`: every exported name resolves, and the README's quick start runs."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import skillopt

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_name_resolves():
    for name in skillopt.__all__:
        assert getattr(skillopt, name) is not None, name


def test_unknown_names_are_attribute_errors():
    try:
        skillopt.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_importing_the_package_loads_no_heavy_dependency():
    code = ("import sys, skillopt, skillopt.skill, skillopt.gate, skillopt.schedules;"
            "print(sorted(m for m in ('sqlite_utils', 'litellm', 'streamlit', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_quick_start_runs_and_exports_the_best_skill(tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"### Python quick start\n+```python\n(.*?)```", readme, re.S)
    assert block, "README has no Python quick start block"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 5
    assert all(not line.startswith("from ") or line.startswith("from skillopt import ")
               for line in code.splitlines()), "the quick start uses only the public API"
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    best = (tmp_path / "out" / "best_skill.md").read_text()
    assert best.strip()
    assert (tmp_path / "out" / "steps.csv").read_text().startswith("step,")

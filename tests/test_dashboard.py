"""`python -m skillopt dashboard` (skillopt/dashboard.py): streamlit run app.py with the pages'
libraries loaded before the server serves. The browser tests start every server this way
(tests/browser_util.py), so every page they check renders through it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skillopt import cli, dashboard

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_the_pages_import_is_found_at_any_depth(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("from __future__ import annotations\nimport json, csv as c\n")
    (tmp_path / "pages" / "1_A.py").write_text(textwrap.dedent("""
        from skillopt.ui import common
        from . import relative_is_skipped

        def later():
            import difflib
            from skillopt.gate import PairedGate
    """))
    names = dashboard.imported(dashboard.scripts(tmp_path))
    assert names == ["json", "csv", "skillopt.ui", "skillopt.ui.common", "difflib", "skillopt.gate",
                     "skillopt.gate.PairedGate"]


def test_loading_skips_names_that_are_attributes_and_fails_on_a_module_that_breaks(monkeypatch, tmp_path):
    assert dashboard.load(["json", "skillopt.gate", "skillopt.gate.PairedGate", "no_such_module"]) == \
        ["json", "skillopt.gate"]
    (tmp_path / "broken_page_lib.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_module_nobody_has"):  # a real problem is not hidden
        dashboard.load(["broken_page_lib"])


def test_the_real_pages_libraries_load_and_include_pandas_and_the_dashboards_modules():
    names = dashboard.imported(dashboard.scripts())
    assert {"streamlit", "pandas", "skillopt.ui.common", "skillopt.ui.monitor"} <= set(names)
    code = ("import sys; from skillopt import dashboard as d; d.load(d.imported(d.scripts())); d.warm_figures(); "
            "print(sorted(m for m in ('pandas', 'plotly.graph_objects', 'skillopt.ui.evolution') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "['pandas', 'plotly.graph_objects', 'skillopt.ui.evolution']"
    assert "No runtime found" not in out.stderr  # the cache decorators' warning is kept out of the log


def test_streamlit_options_reach_streamlit_run_and_no_other_command_takes_unknown_options(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(dashboard, "main", lambda options: seen.setdefault("options", options) and 0)
    monkeypatch.delenv("SKILLOPT_DB", raising=False)
    cli.main(["dashboard", "--db", "x.db", "--server.port", "8502"])
    assert seen["options"] == ["--server.port", "8502"]
    assert dashboard.command(seen["options"]) == ["streamlit", "run", str(ROOT / "app.py"), "--server.port", "8502"]
    assert os.environ.pop("SKILLOPT_DB") == str(Path("x.db").resolve())
    with pytest.raises(SystemExit) as exc:
        cli.main(["runs", "--server.port", "8502"])
    assert exc.value.code == 2 and "unrecognized arguments: --server.port 8502" in capsys.readouterr().err

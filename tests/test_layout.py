"""Size limits that keep the code readable in one sitting: no module over 400 lines, no
function over 60 lines and no line over 120 characters in skillopt/, pages/ and app.py (a
page's top-level script counts as one function: its logic belongs in skillopt/ui/)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_LINE_CHARS = 120


def sources() -> list[Path]:
    return sorted((ROOT / "skillopt").rglob("*.py")) + sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]


def long_functions(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_module_is_too_long():
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, "modules over 400 lines: " + ", ".join(long)


def test_no_function_is_too_long():
    long = [f for p in sources() for f in long_functions(p)]
    assert not long, "functions over 60 lines: " + ", ".join(long)


def test_the_checker_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    path = tmp_path / "probe.py"
    path.write_text(f"def short():\n    return 1\n\n\ndef probe():\n{body}\n")
    assert long_functions(path, tmp_path) == ["probe.py:5 probe (62 lines)"]


def test_no_line_is_too_long():
    long = [f"{p.relative_to(ROOT)}:{i}" for p in sources()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if len(line) > MAX_LINE_CHARS]
    assert not long, f"lines over {MAX_LINE_CHARS} characters: " + ", ".join(long)

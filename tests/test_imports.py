"""The import graph, read statically (every .py file parsed with `ast`, nothing imported).

The layers only work if the arrows point one way: the pure modules (text, edits,
schedules, the gate's statistics, configuration, the plan, the training state, the
vocabulary) must run and be tested without a model client, a database or a UI; only
skillopt/models talks to litellm; and no two skillopt modules need each other at import
time, not even through an import deferred into a function. Every import counts for the first
two rules, those inside functions (they run sooner or later) and under `if TYPE_CHECKING:` (a
type from a heavy layer still ties a module to it); every import that runs, at module level
or inside a function, counts for cycles (a deferred import is how a cycle hides).
"""
from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "skillopt"

PURE = ("skill", "patch", "anchor", "schedules", "transforms", "gate", "spread", "config", "plan", "state",
        "vocabulary")
HEAVY = ("litellm", "sqlite3", "sqlite_utils", "streamlit", "llama_cpp")


@dataclass
class Imports:
    """What one file imports: `every` holds all imports (lazy ones included); `eager` only
    those that run when the module is imported (module level, outside TYPE_CHECKING);
    `runtime` those that run at all (eager or inside a function, outside TYPE_CHECKING)."""
    every: set[str] = field(default_factory=set)
    eager: set[str] = field(default_factory=set)
    runtime: set[str] = field(default_factory=set)


def module_name(path: Path, root: Path = ROOT) -> str:
    """skillopt/store/writer.py -> skillopt.store.writer; pages and app.py keep their path."""
    rel = path.relative_to(root)
    if rel.parts[0] != PACKAGE:
        return rel.as_posix()
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, eager: bool, runs: bool = True):
    """(import node, runs at import time?, runs at all?) for every import under `node`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, eager, runs
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, False, runs)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), False, False)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), eager, runs)
        else:
            yield from _walk(child, eager, runs)


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules an import statement loads: skillopt modules by full name, others by top-level name."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = importer if is_package else importer.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # `from package import name` loads package.name when that is a module, else only the package.
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    out = set()
    for name in names:
        if name.split(".")[0] != PACKAGE:
            out.add(name.split(".")[0])
            continue
        while name and name not in modules:  # `import skillopt.x.y` names a module; keep the deepest known
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def scan(root: Path = ROOT) -> dict[str, Imports]:
    """Imports of every skillopt module, every page and app.py under `root`."""
    files = sorted((root / PACKAGE).rglob("*.py")) + sorted((root / "pages").glob("*.py"))
    if (root / "app.py").exists():
        files.append(root / "app.py")
    modules = {module_name(f, root) for f in files if f.is_relative_to(root / PACKAGE)}
    graph = {}
    for f in files:
        name = module_name(f, root)
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        imports = Imports()
        for node, eager, runs in _walk(tree, True):
            targets = _targets(node, name, f.name == "__init__.py", modules)
            targets.discard(name)
            imports.every |= targets
            if eager:
                imports.eager |= targets
            if runs:
                imports.runtime |= targets
        # Importing a submodule runs its packages' __init__ first.
        parents = {name.rsplit(".", n)[0] for n in range(1, name.count(".") + 1)} if name.startswith(PACKAGE) else set()
        imports.every |= parents
        graph[name] = imports
    return graph


def chain_to(graph: dict[str, Imports], start: str, bad: set[str]) -> list[str] | None:
    """The shortest import chain from `start` to any module in `bad`, following every import."""
    seen, queue = {start: [start]}, deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(graph[node].every if node in graph else ()):
            if target in seen:
                continue
            seen[target] = seen[node] + [target]
            if target in bad:
                return seen[target]
            queue.append(target)
    return None


def cycles(graph: dict[str, Imports], *, deferred: bool = True) -> list[list[str]]:
    """Shortest cycles of imports among skillopt modules (module-level ones only, or also those
    deferred into functions): one through each module that no cycle found so far passes through."""
    edges = {m: sorted(t for t in (imp.runtime if deferred else imp.eager) if t in graph)
             for m, imp in graph.items() if m.startswith(PACKAGE)}
    found, done = [], set()
    for start in sorted(edges):
        if start in done:
            continue
        back = {start: [start]}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for target in edges.get(node, ()):
                if target == start:
                    cycle = back[node] + [start]
                    found.append(cycle)
                    done.update(cycle)
                    queue.clear()
                    break
                if target not in back:
                    back[target] = back[node] + [target]
                    queue.append(target)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, Imports]:
    return scan()


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_import_no_client_database_or_ui(graph, module):
    name = f"{PACKAGE}.{module}"
    assert name in graph, f"{PACKAGE}/{module}.py is missing"
    chain = chain_to(graph, name, set(HEAVY))
    assert chain is None, f"{name} imports {chain[-1]}: {' -> '.join(chain)}"


def test_only_the_model_layer_imports_litellm(graph):
    offenders = sorted(m for m, imp in graph.items() if "litellm" in imp.every
                       and not m.startswith(f"{PACKAGE}.models.") and m != f"{PACKAGE}.models")
    assert not offenders, "litellm imported outside skillopt/models: " + ", ".join(f"{m} -> litellm" for m in offenders)


def test_no_import_cycle_among_skillopt_modules(graph):
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


# ---- the scanner itself: each rule above must be able to fail ---------------------------

def test_scanner_sees_lazy_relative_and_type_checking_imports(tmp_path):
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from ..pure import X\n")
    (pkg / "pure.py").write_text("from .sub.leaf import thing\n")
    (pkg / "lazy.py").write_text("def f():\n    import litellm\n    from .sub import leaf\n    from . import lazy_b\n")
    (pkg / "lazy_b.py").write_text("from . import lazy\n")
    (pkg / "loop_a.py").write_text("from . import loop_b\n")
    (pkg / "loop_b.py").write_text("import skillopt.loop_a\n")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "1_Page.py").write_text("import sqlite3\nfrom skillopt.sub.leaf import y\n")
    g = scan(tmp_path)
    assert g["skillopt.lazy"].every >= {"litellm", "skillopt.sub.leaf"} and not g["skillopt.lazy"].eager
    assert g["skillopt.sub"].eager == {"skillopt.sub.leaf"}
    assert "skillopt.pure" in g["skillopt.sub.leaf"].every and "skillopt.pure" not in g["skillopt.sub.leaf"].eager
    assert chain_to(g, "pages/1_Page.py", {"sqlite3"}) == ["pages/1_Page.py", "sqlite3"]
    assert chain_to(g, "skillopt.pure", {"litellm"}) is None
    (pkg / "sub" / "leaf.py").write_text("import litellm\n")
    g = scan(tmp_path)
    assert chain_to(g, "skillopt.pure", {"litellm"}) == ["skillopt.pure", "skillopt.sub.leaf", "litellm"]
    assert cycles(g) == [["skillopt.lazy", "skillopt.lazy_b", "skillopt.lazy"],
                         ["skillopt.loop_a", "skillopt.loop_b", "skillopt.loop_a"]]
    assert cycles(g, deferred=False) == [["skillopt.loop_a", "skillopt.loop_b", "skillopt.loop_a"]]

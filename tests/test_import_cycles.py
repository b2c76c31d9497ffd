"""Tests that the package's modules import each other without a circle (issue 30 item 2).

Every import statement counts, also one inside a function (a local import that only postpones a
circle is still one); an import under ``if TYPE_CHECKING:`` does not (it never runs). The
circles this removed: ``state.grid``/``state.model`` (the grid now sits below the model),
``solver.pricing``/``solver._kernels`` (both deleted since with the column generation),
``store.timeouts``/``store._psycopg_deadline`` (the watchdog moved to ``store.watchdog``) and
``tools_adapter.sessions.session``/``sessions.store`` (the lazy ``session.SessionStore``
re-export is gone). Type-only back references (a lower module naming an upper one's class in
an annotation) remain allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "smartflow_engine"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(module: str, node: ast.ImportFrom | ast.Import, is_pkg: bool, known: set[str]):
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level == 0:
        base = node.module or ""
    else:
        pkg = module.split(".") if is_pkg else module.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join([*pkg, node.module] if node.module else pkg)
    out = set()
    for alias in node.names:
        name = f"{base}.{alias.name}"
        if name in known:
            out.add(name)  # ``from . import module``
        elif base in known:
            out.add(base)
    return out


def _runtime_imports(module: str, path: Path, known: set[str]) -> set[str]:
    """What ``module`` imports when its code runs (any depth, not under TYPE_CHECKING)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(_targets(module, node, is_pkg, known))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: _runtime_imports(m, p, known) for m, p in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_package_has_no_import_circle() -> None:
    """Tests that no set of the package's modules imports itself round, counting local imports
    inside functions and leaving out imports for the type checker only."""
    graph = _graph()
    assert len(graph) > 50 and graph["smartflow_engine.state.model"], "the scan found nothing"
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    """Tests the finder itself on a graph with a two-module and a three-module circle."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b"], ["c", "d", "e"]]


def test_a_local_import_counts_and_a_type_checking_one_does_not(tmp_path: Path) -> None:
    """Tests that an import inside a function is an edge and one under TYPE_CHECKING is not."""
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg import typed\n"
        "def f():\n"
        "    from pkg import local\n",
        encoding="utf-8",
    )
    known = {"pkg", "pkg.typed", "pkg.local", "pkg.m"}
    assert _runtime_imports("pkg.m", path, known) == {"pkg.local"}


def test_every_import_of_ours_names_a_module_that_exists() -> None:
    """Tests that each ``from .x import y`` / ``from smartflow_engine.x import y`` (also under
    TYPE_CHECKING) names a module of the package: mypy, told to ignore missing imports, would
    otherwise type a name from a mistyped relative path as ``Any`` without a word."""
    modules = _modules()
    known = set(modules)
    broken = []
    for module, path in sorted(modules.items()):
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0 and not (node.module or "").startswith("smartflow_engine"):
                continue
            if not _targets(module, node, is_pkg, known):
                broken.append(f"{module}: {ast.unparse(node)}")
    assert broken == []

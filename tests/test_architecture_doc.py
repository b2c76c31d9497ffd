"""Tests that docs/architecture.md describes the code as it is: every module it names exists,
every test it cites exists, and every package of smartflow_engine appears in its package table
(issue 30, item 5)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "smartflow_engine"
DOC = ROOT / "docs" / "architecture.md"


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _module_paths(text: str) -> set[str]:
    """Module paths the document names in code spans: `solver/placement.py`, `rules.py`."""
    return set(re.findall(r"`([a-z_][a-z0-9_/]*\.py)`", text))


def _test_citations(text: str) -> list[tuple[str, str]]:
    """(file, test name) pairs; `::name` alone continues the last cited file, as the doc writes."""
    cites: list[tuple[str, str]] = []
    last_file = ""
    for span in re.findall(r"`((?:tests/[^`:]+)?::[A-Za-z0-9_]+|tests/[^`:]+\.py)`", text):
        path, _, name = span.partition("::")
        if path:
            last_file = path
        if name:
            cites.append((last_file, name))
    return cites


def _defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _resolve(module: str) -> Path | None:
    """A named module path, relative to the package or to any of its sub-packages."""
    candidates = [PACKAGE / module, ROOT / module]
    candidates += [sub / module for sub in PACKAGE.iterdir() if sub.is_dir()]
    candidates += [sub / module for sub in PACKAGE.glob("*/*") if sub.is_dir()]
    return next((c for c in candidates if c.is_file()), None)


def test_every_named_module_exists():
    """Tests that every `*.py` path the document names resolves to a file of the package."""
    missing = sorted(m for m in _module_paths(_doc()) if _resolve(m) is None)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_cited_test_exists():
    """Tests that every `tests/…::name` the document cites is a test defined in that file."""
    cites = _test_citations(_doc())
    assert cites
    missing = []
    for file, name in cites:
        path = ROOT / file
        if not path.is_file() or name not in _defined_tests(path):
            missing.append(f"{file}::{name}")
    assert not missing, f"docs/architecture.md cites tests that do not exist: {missing}"


def test_every_package_appears_in_the_table():
    """Tests that every sub-package (and top-level module) of smartflow_engine has a row."""
    doc = _doc()
    names = [p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    names += [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    missing = sorted(n for n in names if f"`smartflow_engine.{n}`" not in doc)
    assert not missing, f"docs/architecture.md has no row for: {missing}"


def test_the_checks_catch_a_stale_document():
    """Tests that the three readers above find a module, a test and a package that are not
    there (so the checks cannot pass vacuously)."""
    stale = "`solver/no_such_module.py` and `tests/state/test_model.py::no_such_test`"
    assert any(_resolve(m) is None for m in _module_paths(stale))
    cites = _test_citations(stale)
    assert cites == [("tests/state/test_model.py", "no_such_test")]
    assert "no_such_test" not in _defined_tests(ROOT / cites[0][0])

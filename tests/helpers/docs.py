"""The docs generator as a module (scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def gen_tools_doc() -> ModuleType:
    """``scripts/gen_tools_doc.py``, loaded."""
    spec = importlib.util.spec_from_file_location(
        "gen_tools_doc", ROOT / "scripts" / "gen_tools_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

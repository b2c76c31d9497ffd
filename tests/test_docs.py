"""Tests that the README's Python examples and the notebooks run as written."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).parent.parent


def test_readme_python_blocks_run():
    """Tests that every ```python block of the README executes without error."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_quickstart_notebook_executes():
    """Tests that notebooks/quickstart.ipynb runs top to bottom in a fresh kernel."""
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={
        "metadata": {"path": str(ROOT)}}).execute()
    outputs = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "规划窗口共14天" in outputs


def test_cohort_notebook_executes():
    """Tests that notebooks/cohort.ipynb runs a batch on its small cohort (one broken window) and
    draws its four charts."""
    nb = nbformat.read(ROOT / "notebooks" / "cohort.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={
        "metadata": {"path": str(ROOT)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code"
               for out in cell.get("outputs", [])]
    text = "".join(out.get("text", "") for out in outputs)
    assert "windows: 19, errors: 1" in text
    assert "infeasible" in text and "closing rate overall:" in text
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 4

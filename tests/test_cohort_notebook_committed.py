"""Tests that the cohort notebook is committed with its outputs (text and its four charts), as
the quickstart is, so it reads on a code-hosting page without being run."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def test_cohort_notebook_is_committed_with_its_outputs():
    """Tests that every code cell of notebooks/cohort.ipynb carries outputs, the report's
    figures among them, and that no output names a local path."""
    nb = nbformat.read(ROOT / "notebooks" / "cohort.ipynb", as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.get("outputs") for cell in code)
    outputs = [out for cell in code for out in cell.outputs]
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 4
    text = "".join(out.get("text", "") for out in outputs)
    assert "windows: 19, errors: 1" in text and "closing rate overall:" in text
    assert "/work/" not in nbformat.writes(nb) and "/home/" not in nbformat.writes(nb)

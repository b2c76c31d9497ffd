"""Tests that the cohort notebook is committed with its outputs (text and its four charts), as
the quickstart is, so it reads on a code-hosting page without being run, and that those outputs
are the ones the notebook gives now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "cohort.ipynb"


def _streams(nb: Any) -> list[str]:
    """Each code cell's printed text."""
    return [
        "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
        for cell in nb.cells
        if cell.cell_type == "code"
    ]


def _execute(nb: Any) -> None:
    """Run ``nb`` afresh (its outputs dropped first) from the repository's root."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()


def test_cohort_notebook_is_committed_with_its_outputs():
    """Tests that every code cell of notebooks/cohort.ipynb carries outputs, the report's
    figures among them, and that no output names a local path."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.get("outputs") for cell in code)
    outputs = [out for cell in code for out in cell.outputs]
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 4
    text = "".join(out.get("text", "") for out in outputs)
    assert "windows: 19, errors: 1" in text and "closing rate overall:" in text
    assert "/work/" not in nbformat.writes(nb) and "/home/" not in nbformat.writes(nb)


@pytest.mark.slow
def test_the_committed_outputs_are_current():
    """Tests that running the notebook now prints what the committed copy shows for the figures
    that do not depend on the machine: the cohort and its errors, the proven feasibility
    verdicts, and the extra days needed (when every search finished; an unproven one, on a
    loaded machine, is not compared). Runtimes and the closing rate (proposals cut by the wall
    clock) may differ between runs and are not compared."""
    committed = _streams(nbformat.read(NOTEBOOK, as_version=4))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    _execute(nb)
    fresh = _streams(nb)
    assert fresh[0] == committed[0]  # windows: 19, errors: 1
    if "unproven" not in fresh[1]:
        assert fresh[1] == committed[1]  # feasible / infeasible counts
    if "unproven" not in fresh[2]:
        assert fresh[2] == committed[2]  # extra days needed


@pytest.mark.slow
def test_the_notebook_reads_the_table_a_batch_wrote(tmp_path):
    """Tests that the notebook reports on the Parquet file a ``smartflow batch`` run wrote (its
    ``RESULTS``), not on a cohort of its own: pointed at a batch's table of five windows, it
    reports those five windows (issue 45 item 8)."""
    from typer.testing import CliRunner

    from smartflow_engine.cli import app
    from tests.helpers.batch_windows import tiny_cohort

    folder = tmp_path / "windows"
    folder.mkdir()
    for i, state in enumerate(tiny_cohort(5)):
        (folder / f"w{i}.json").write_text(state.to_json(), encoding="utf-8")
    results = tmp_path / "results.parquet"
    ran = CliRunner().invoke(
        app, ["batch", str(folder), "--out", str(results), "--engine", "loop", "--time-limit", "1"]
    )
    assert ran.exit_code == 0, ran.output
    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert "RESULTS = None" in first.source and "read_table(RESULTS)" in first.source
    first.source = first.source.replace("RESULTS = None", f"RESULTS = Path({str(results)!r})")
    _execute(nb)
    assert _streams(nb)[0].startswith("windows: 5, errors: 0")

"""Tests of ``smartflow eval``: the scripted policy on a small subset reproduces the committed
baseline table's rows, and bad input gets a clear message and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from smartflow_engine.cli import app
from smartflow_engine.evalkit import load_tasks

runner = CliRunner()
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results_eval.md"
README = RESULTS.parents[1] / "README.md"
# one of each request; edits on frozen days of a 30-day unclosable and a 60-day closable window
# (no solver call: their rows do not hang on a wall-clock limit under load)
SUBSET = [
    "13d-plain-s0-first_full",
    "13d-plain-s0-edit1",
    "13d-tight-s2-negotiate",
    "30d-dense-s3-edit1",
    "60d-plain-s3-edit1",
]


def _rows(text: str) -> dict[str, list[str]]:
    """Per-task rows of a results table: task id -> cells."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in {t.id for t in load_tasks()}:
            out[cells[0]] = cells
    return out


def test_scripted_eval_on_a_subset_reproduces_the_committed_rows(tmp_path):
    """Tests that ``smartflow eval --policy scripted --k 2`` on five tasks writes the
    Parquet and markdown tables and that its per-task rows (kind, request, days, passed of
    trials, failed goal parts) are the committed baseline's."""
    out = tmp_path / "eval"
    result = runner.invoke(
        app,
        [
            "eval",
            "--policy",
            "scripted",
            "--k",
            "2",
            "--tasks",
            ",".join(SUBSET),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    trials = pd.read_parquet(out.with_suffix(".parquet"))
    assert len(trials) == 2 * len(SUBSET)
    assert set(trials["task_id"]) == set(SUBSET)
    mine = _rows(out.with_suffix(".md").read_text(encoding="utf-8"))
    committed = _rows(RESULTS.read_text(encoding="utf-8"))
    for tid in SUBSET:
        assert mine[tid][:7] == committed[tid][:7], (
            tid
        )  # id, kind, request, days, passed, trials, failed


def _table(text: str, first: str) -> list[list[str]]:
    """The rows (cells) of the first markdown table in ``text`` whose header starts ``first``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_readme_quotes_the_committed_baseline():
    """Tests that the README's baseline table (tasks, pass^1, pass^2, tool calls median / max,
    refused writes per kind) is the committed ``results_eval.md`` summary."""
    section = README.read_text(encoding="utf-8").split("## Evaluating your own model")[1]
    quoted = {r[0]: r[1:] for r in _table(section, "kind")}
    committed = _table(RESULTS.read_text(encoding="utf-8"), "kind")
    for kind, tasks, _trials, p1, p2, _rounds, med, top, refused, *_ in committed:
        if kind == "all":
            continue
        assert quoted[kind] == [tasks, p1, p2, f"{int(float(med))} / {top}", refused], kind
    assert set(quoted) == {r[0] for r in committed} - {"all"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "claude"], "unknown policy"),  # not a policy
        (["--policy", "openai"], "needs --model"),  # no model named
        (["--k", "0"], "at least 1"),  # no trial
        (["--tasks", "nope"], "unknown task id"),  # not in the set
        (["--kinds", "easy"], "unknown kind"),  # not a kind
        (["--tasks-file", "missing.json"], "missing.json"),  # no such file
        (["--tasks-file", "LIST"], "not a task set"),  # JSON, but not a task set
    ],
)
def test_bad_input_is_a_clear_message_and_exit_2(tmp_path, args, message):
    """Tests that each bad option gets one clear line, exit code 2, and writes nothing."""
    out = tmp_path / "eval"
    (tmp_path / "list.json").write_text("[1, 2]")
    args = [str(tmp_path / a) if a.endswith(".json") else a for a in args]
    args = [str(tmp_path / "list.json") if a == "LIST" else a for a in args]
    result = runner.invoke(app, ["eval", *args, "--out", str(out)])
    assert result.exit_code == 2
    assert message in result.output
    assert not out.with_suffix(".md").exists()

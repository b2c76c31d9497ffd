"""Tests of ``smartflow eval``: the committed baseline is what ``make eval`` writes, notes
included; the scripted policy on a small subset reproduces its rows; bad input gets a clear
message and exit code 2."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from smartflow_engine.cli import app
from smartflow_engine.evalkit import load_tasks, markdown, summary

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results_eval.md"
README = ROOT / "README.md"
MAKEFILE = ROOT / "Makefile"
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


def _baseline_args() -> list[str]:
    """The options ``make eval`` passes (the Makefile's EVAL_BASELINE)."""
    line = next(ln for ln in MAKEFILE.read_text().splitlines() if ln.startswith("EVAL_BASELINE"))
    return line.split(":=", 1)[1].split()


def test_the_committed_baseline_is_what_make_eval_writes():
    """Tests that benchmarks/results_eval.md is, byte for byte, what ``make eval`` writes from
    the committed trials (benchmarks/results_eval.parquet): the summary, the per-task rows and
    the notes kept in results_eval_notes.md at its end; and that nothing in either file hangs
    on the wall clock (no seconds column; the clock_cuts column says which rows would)."""
    args = _baseline_args()
    assert "--baseline" in args
    k = int(args[args.index("--k") + 1])
    notes = (ROOT / args[args.index("--notes") + 1]).read_text(encoding="utf-8")
    trials = pd.read_parquet(RESULTS.with_suffix(".parquet"))
    assert "seconds" not in trials.columns and "clock_cuts" in trials.columns
    title = f"Eval kit: scripted, k={k}, {trials['task_id'].nunique()} tasks"
    written = markdown(summary(trials, k), trials, title, notes)
    assert written == RESULTS.read_text(encoding="utf-8")


def test_scripted_eval_on_a_subset_reproduces_the_committed_rows(tmp_path):
    """Tests that ``smartflow eval`` with ``make eval``'s options on five tasks writes the
    Parquet and markdown tables, and that every trial the wall clock cut in neither run is the
    committed baseline's row exactly (all columns, goal details included); the edits call no
    solver, so their rows are always compared. With --baseline a cut trial is exit code 1."""
    out = tmp_path / "eval"
    args = [a for a in _baseline_args() if a != "--notes"]
    args = [a for a in args if not a.endswith(".md")]
    result = runner.invoke(app, ["eval", *args, "--tasks", ",".join(SUBSET), "--out", str(out)])
    trials = pd.read_parquet(out.with_suffix(".parquet"))
    cut = trials["clock_cuts"] > 0
    assert result.exit_code == (1 if cut.any() else 0), result.output
    assert len(trials) == 2 * len(SUBSET) and set(trials["task_id"]) == set(SUBSET)
    committed = pd.read_parquet(RESULTS.with_suffix(".parquet")).set_index(["task_id", "trial"])
    mine = trials.set_index(["task_id", "trial"])
    compared = [
        key
        for key in mine.index
        if mine.loc[key, "clock_cuts"] == 0 and committed.loc[key, "clock_cuts"] == 0
    ]
    assert {tid for tid, _ in compared} >= {t for t in SUBSET if "edit" in t}
    for key in compared:
        assert mine.loc[key].to_dict() == committed.loc[key].to_dict(), key


def test_a_solver_reply_the_clock_cut_is_counted():
    """Tests that the eval's clock-cut pattern matches every solver tool's words for an answer
    the wall clock ended (a cut search, a start-only proposal, an unproven feasibility check, a
    re-optimisation that could not finish) and no answer the work budget ended."""
    from types import SimpleNamespace

    from smartflow_engine.evalkit.runner import CLOCK_CUT
    from smartflow_engine.solver import check_feasibility
    from smartflow_engine.solver.budget import Deadline
    from smartflow_engine.tools_adapter.tools import solver as tools

    clock = Deadline.start(2.0)
    cut = SimpleNamespace(start_only=False, wall_limited=True)
    start_only = SimpleNamespace(start_only=True, wall_limited=True)
    whole = SimpleNamespace(start_only=False, wall_limited=False)
    state = load_tasks()[0].initial_state()
    report = check_feasibility(state, time_limit_s=5.0)
    unproven = dataclasses.replace(
        report,
        is_feasible=None,
        proven=False,
        feasible_slots=None,
        capacity_gap=None,
        reason_code="unknown",
    )
    unknown = SimpleNamespace(status="unknown")
    assert CLOCK_CUT.search(tools._cut_text(cut, clock))
    assert CLOCK_CUT.search(tools._cut_text(start_only, clock))
    assert CLOCK_CUT.search(tools.feasibility_text(state, unproven, time_limit_s=2.0))
    assert CLOCK_CUT.search(tools._moves_reply(None, "spread_even", unknown, unchanged="", head=""))
    assert not CLOCK_CUT.search(tools._cut_text(whole, clock))
    assert not CLOCK_CUT.search(tools.feasibility_text(state, report, time_limit_s=2.0))


def test_notes_that_cannot_be_read_stop_before_any_task(tmp_path):
    """Tests that --notes naming a missing file is one line and exit code 2, nothing run."""
    out = tmp_path / "eval"
    missing = tmp_path / "nope.md"
    result = runner.invoke(app, ["eval", "--notes", str(missing), "--out", str(out)])
    assert result.exit_code == 2
    assert f"cannot read --notes {missing}" in result.output
    assert "#1" not in result.output and not out.with_suffix(".md").exists()


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

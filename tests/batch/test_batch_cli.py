"""Tests of `smartflow batch`: files and database cohorts, the summary table, commit, refusals."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from smartflow_engine.batch import read_table
from smartflow_engine.cli import app
from smartflow_engine.store import Store
from tests.helpers.batch_windows import tiny_cohort

runner = CliRunner()


@pytest.fixture
def window_dir(tmp_path):
    folder = tmp_path / "windows"
    folder.mkdir()
    for i, state in enumerate(tiny_cohort(5)):
        (folder / f"w{i}.json").write_text(state.to_json(), encoding="utf-8")
    (folder / "w9.json").write_text("{oops", encoding="utf-8")
    return folder


def test_batch_files_to_parquet_with_summary(window_dir, tmp_path):
    """Tests that `smartflow batch DIR --out x.parquet` writes one row per file and prints the
    closing summary (feasible / infeasible / unproven / errors, gap, median runtime)."""
    out = tmp_path / "results.parquet"
    res = runner.invoke(
        app, ["batch", str(window_dir), "--out", str(out), "--engine", "loop", "--time-limit", "3"]
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    df = read_table(out)
    assert len(df) == 6 and df["error"].notna().sum() == 1
    for text in (
        "feasible",
        "infeasible (proven)",
        "unproven",
        "errors",
        "total capacity gap",
        "median runtime",
        "results written to",
    ):
        assert text in res.stdout
    infeasible = int((df["is_feasible"] == False).sum())  # noqa: E712
    shown = re.search(r"infeasible \(proven\)\s*\S\s*(\d+)", res.stdout)
    assert infeasible >= 1 and shown is not None and int(shown.group(1)) == infeasible
    errors = re.search(r"errors\s*\S\s*(\d+)", res.stdout)
    assert errors is not None and int(errors.group(1)) == 1


def test_neither_source_nor_db_does_not_say_not_both(tmp_path):
    """Tests that `smartflow batch` with neither SOURCE nor --db says what to give, not "not
    both" (issue 45 item 8)."""
    res = runner.invoke(app, ["batch", "--out", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "not both" not in res.stderr
    assert "give SOURCE" in res.stderr and "--db URL" in res.stderr


def test_batch_prints_progress_lines_when_not_on_a_terminal(window_dir, tmp_path):
    """Tests that out of a terminal (a log, a pipe: CliRunner's output is not a terminal) the
    batch still reports progress, one plain line on stderr per tenth of the cohort, the last
    one the whole cohort (issue 45 item 8)."""
    res = runner.invoke(
        app,
        [
            *("batch", str(window_dir), "--out", str(tmp_path / "r.csv"), "--engine", "loop"),
            *("--jobs", "feasibility", "--time-limit", "3"),
        ],
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("batch: ")]
    done = [int(re.match(r"batch: (\d+)/6 windows", ln).group(1)) for ln in lines]  # type: ignore[union-attr]
    assert done == sorted(done) and done[-1] == 6 and len(done) >= 2
    assert "failures 1" in lines[-1]


def test_batch_no_negotiation_and_work_limit(window_dir, tmp_path):
    """Tests that `--no-negotiation` runs the check alone (negotiation columns empty, verdicts
    and gaps as with them) and `--work-limit` reaches the proposals' work budget."""
    full, bare = tmp_path / "full.csv", tmp_path / "bare.csv"
    common = [
        str(window_dir),
        "--engine",
        "loop",
        "--time-limit",
        "3",
        "--jobs",
        "feasibility,proposal",
        "--work-limit",
        "0.05",
    ]
    for out, extra in ((full, []), (bare, ["--no-negotiation"])):
        res = runner.invoke(app, ["batch", *common, "--out", str(out), *extra])
        assert res.exit_code == 0, res.stdout + res.stderr
    a, b = read_table(full), read_table(bare)
    infeasible = a["is_feasible"] == False  # noqa: E712
    assert infeasible.any()
    assert a["extra_days_needed"][infeasible].notna().any()
    assert b["extra_days_needed"].isna().all()
    assert list(a["is_feasible"]) == list(b["is_feasible"])
    assert list(a["capacity_gap"].fillna(-1)) == list(b["capacity_gap"].fillna(-1))
    assert list(a["obj_weighted_total"].fillna(-1)) == list(b["obj_weighted_total"].fillna(-1))
    res = runner.invoke(app, ["batch", *common[:-1], "0", "--out", str(bare)])
    assert res.exit_code == 2 and "work_limit_s" in res.stderr


def test_batch_database_commit_to_csv(tmp_path):
    """Tests `smartflow batch --db URL --weeks 1-1 --users 1-3 --commit --out x.csv`: the users'
    feasible proposals are committed and the table says so."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    store = Store.from_url(url)
    for user, state in enumerate(tiny_cohort(4), start=1):
        store.seed_from_state(user, state, keep_ids=False)
    store.dispose()
    out = tmp_path / "results.csv"
    res = runner.invoke(
        app,
        [
            "batch",
            "--db",
            url,
            "--users",
            "1-3",
            "--weeks",
            "1-1",
            "--commit",
            "--engine",
            "loop",
            "--time-limit",
            "3",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    df = pd.read_csv(out)
    assert list(df["user_id"]) == [1, 2, 3]
    assert (df["commit_status"] == "committed").all()
    assert "commit: committed" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x.parquet"], "give SOURCE (a directory, glob or .jsonl file"),  # neither
        (["DIR", "--db", "sqlite://", "--out", "x.parquet"], "not both"),  # both
        (["DIR", "--commit", "--out", "x.parquet"], "need --db"),  # commit without a database
        (["DIR", "--out", "x.txt"], ".parquet or .csv"),  # unknown sink
        (["DIR", "--out", "x.csv", "--engine", "spark"], "unknown engine"),  # unknown engine
        (["DIR", "--out", "x.csv", "--jobs", "feasibility,magic"], "unknown job"),  # unknown job
        (["--db", "sqlite://", "--users", "9-1", "--out", "x.csv"], "empty"),  # empty range
        (["MISSING", "--out", "x.csv"], "no such file"),  # a path that does not exist
    ],
)
def test_batch_refusals_exit_2_with_one_line(window_dir, tmp_path, args, message):
    """Tests that bad command lines exit with code 2 and a one-line reason, writing nothing."""
    args = [
        str(window_dir)
        if a == "DIR"
        else str(tmp_path / "missing")
        if a == "MISSING"
        else str(tmp_path / a)
        if a.startswith("x.")
        else a
        for a in args
    ]
    res = runner.invoke(app, ["batch", *args])
    assert res.exit_code == 2, res.stdout
    assert message in res.stderr
    assert not any(tmp_path.glob("x.*"))

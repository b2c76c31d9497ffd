"""Tests of the operator's commands: `smartflow gen` (synthetic windows to a directory) and
`smartflow seed` (tables + users from window files), end to end with `batch --db` on SQLite and
PostgreSQL; refusals write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from smartflow_engine import ScheduleState
from smartflow_engine.cli import app
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.store import Store
from tests.helpers.store import stored

runner = CliRunner()


def _gen(out: Path, *extra: str) -> list[Path]:
    res = runner.invoke(app, ["gen", str(out), *extra])
    assert res.exit_code == 0, res.stdout + res.stderr
    return sorted(out.glob("window_*.json"))


def test_gen_writes_reproducible_windows(tmp_path):
    """Tests that `gen` writes N windows of the asked size and variant, each the seeded
    synthetic window (so the same command writes the same files)."""
    files = _gen(tmp_path / "a", "-n", "3", "--days", "9", "--variant", "mixed", "--seed", "5")
    assert [f.name for f in files] == ["window_0001.json", "window_0002.json", "window_0003.json"]
    third = ScheduleState.from_json(files[2])
    assert third.num_days == 9
    assert stored(third) == stored(synthetic_window(7, 9, variant="fragmented"))
    again = _gen(tmp_path / "b", "-n", "3", "--days", "9", "--variant", "mixed", "--seed", "5")
    assert [f.read_text() for f in files] == [f.read_text() for f in again]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variant", "odd"], "unknown --variant"),  # not a generator variant
        (["--count", "0"], "--count"),  # nothing to write
        (["--days", "0"], "--days"),  # no days
        (["--days", "1001"], "--days"),  # beyond the engine's window length
    ],
)
def test_gen_refuses_bad_options(tmp_path, args, message):
    """Tests that bad `gen` options exit 2 with one line and write nothing."""
    res = runner.invoke(app, ["gen", str(tmp_path / "w"), *args])
    assert res.exit_code == 2 and message in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "w").exists()


def _seed_and_batch(url: str, tmp_path: Path, first: int) -> pd.DataFrame:
    files = _gen(tmp_path / "w", "-n", "3", "--days", "7", "--variant", "mixed", "--task-classes")
    res = runner.invoke(app, ["seed", url, *map(str, files), "--first-user", str(first)])
    assert res.exit_code == 0, res.stdout + res.stderr
    users = f"{first}-{first + 2}"
    out = tmp_path / "results.csv"
    res = runner.invoke(
        app,
        [
            *("batch", "--db", url, "--users", users, "--engine", "loop", "--time-limit", "2"),
            *("--jobs", "feasibility,health", "--out", str(out)),
        ],
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    return pd.read_csv(out)


def test_seed_then_batch_on_sqlite(tmp_path):
    """Tests gen → seed → batch --db on a SQLite file: one result row per seeded user, and the
    windows loaded back from the tables match the files' tasks."""
    url = f"sqlite:///{tmp_path / 'cohort.db'}"
    df = _seed_and_batch(url, tmp_path, 1)
    assert list(df["user_id"]) == [1, 2, 3]
    store = Store.from_url(url)
    try:
        expected = ScheduleState.from_json(tmp_path / "w" / "window_0002.json")
        loaded = store.load_window(2, expected.window.day_mapping)
        assert sorted(t.name for t in loaded.tasks) == sorted(t.name for t in expected.tasks)
    finally:
        store.dispose()


def test_seed_then_batch_on_postgresql(tmp_path, pg_database):
    """Tests gen → seed → batch --db on the running PostgreSQL (this run's own database)."""
    df = _seed_and_batch(pg_database, tmp_path, 7001)
    assert list(df["user_id"]) == [7001, 7002, 7003]


def test_seed_refusals_write_nothing(tmp_path):
    """Tests that `seed` refuses a window without a day mapping, a file whose second window the
    tables cannot take, and users that already have rows, each in one line, and that the
    database is left exactly as before (no user half-seeded)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    good = _gen(tmp_path / "w", "-n", "1", "--days", "7")[0]
    data = json.loads(good.read_text())
    no_mapping = tmp_path / "no_mapping.json"
    no_mapping.write_text(json.dumps({**data, "window": {"total_days": 7}}), encoding="utf-8")
    bad_item = json.loads(good.read_text())
    for task in bad_item["tasks"]:
        if task["source"] == "task_item":
            task["category_id"] = None
            break
    bad = tmp_path / "bad_item.json"
    bad.write_text(json.dumps(bad_item), encoding="utf-8")

    res = runner.invoke(app, ["seed", url, str(good), str(no_mapping)])
    assert res.exit_code == 2 and "day_mapping" in res.stderr
    res = runner.invoke(app, ["seed", url, str(good), str(bad)])
    assert res.exit_code == 2 and "nothing written" in res.stderr and "Traceback" not in res.stderr
    store = Store.from_url(url)
    try:
        assert not any(store.row_counts().values())
        res = runner.invoke(app, ["seed", url, str(good)])
        assert res.exit_code == 0
        before = store.row_counts()
        res = runner.invoke(app, ["seed", url, str(good)])
        assert res.exit_code == 2 and "already have rows" in res.stderr
        assert store.row_counts() == before
    finally:
        store.dispose()
    res = runner.invoke(app, ["seed", "nosuchdb://x", str(good)])
    assert res.exit_code == 2 and "cannot open" in res.stderr

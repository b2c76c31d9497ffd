"""Tests of the command line's first-contact fixes (issue 45 items 7 and 8): ``smartflow call
--db``, the feasibility command's exit code and ``--json``, JSON file errors that name the
file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from smartflow_engine import ScheduleState
from smartflow_engine.cli import app, sample_window_path
from smartflow_engine.state import place
from smartflow_engine.store import Store, window_days

runner = CliRunner()
WINDOW = ["--user", "1", "--from", "7-1", "--to", "8-7"]


@pytest.fixture
def seeded(tmp_path: Path) -> str:
    """An SQLite file holding the sample window as user 1."""
    url = f"sqlite:///{tmp_path / 'smartflow.db'}"
    result = runner.invoke(app, ["seed", url, str(sample_window_path())])
    assert result.exit_code == 0, result.output
    return url


def _window(url: str) -> ScheduleState:
    store = Store.from_url(url)
    try:
        return store.load_window(1, window_days((7, 1), (8, 7)))
    finally:
        store.dispose()


def _a_place(url: str) -> tuple[int, str]:
    """A pending task of the database's window and a legal place for it, as --args."""
    state = _window(url)
    task_id, day, start = next(
        (t.state_id, d, s)
        for t in state.pending_tasks()
        for d, s, _ in state.grid.free_runs(t.need())
        if place(state.copy_state(), t.state_id, d, s).ok
    )
    return task_id, json.dumps({"task_id": task_id, "day": day, "slot_start": start})


def _status(url: str, task_id: int) -> str:
    task = _window(url).task(task_id)
    assert task is not None
    return task.status


def test_call_reads_a_window_of_the_database(seeded):
    """Tests that ``smartflow call TOOL --db URL --user --from --to`` answers on the database's
    window (the same reply as on the file it was seeded from)."""
    result = runner.invoke(app, ["call", "get_overview", "--db", seeded, *WINDOW])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("规划窗口共14天")


def test_call_commits_a_write_only_when_the_user_confirms(seeded):
    """Tests that a write with --commit is written to the database in one transaction with --yes
    (the task is then existing, applied, when the window is loaded again), and that without --yes the
    commit is held (exit 1) and the database keeps the task pending; without --commit nothing is
    written."""
    task_id, args = _a_place(seeded)
    call = ["call", "place", "--db", seeded, *WINDOW, "--args", args]
    plain = runner.invoke(app, call)
    assert plain.exit_code == 0, plain.output
    assert _status(seeded, task_id) == "pending"
    held = runner.invoke(app, [*call, "--commit"])
    assert held.exit_code == 1 and "待确认" in held.stdout
    assert _status(seeded, task_id) == "pending"
    done = runner.invoke(app, [*call, "--commit", "--yes"])
    assert done.exit_code == 0, done.output
    assert "已提交 1 项修改到数据库" in done.stdout and _status(seeded, task_id) == "existing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --state FILE or --db URL"),  # neither
        (["--commit", "--state", "STATE"], "need --db"),  # --commit on a file
        (["--db", "DB", "--state", "STATE", *WINDOW], "not both"),  # both
        (["--db", "DB", "--from", "7-1", "--to", "7-7"], "--db needs --user"),  # no user
    ],
)
def test_call_with_a_wrong_source_is_one_line_and_exit_2(seeded, args, message):
    """Tests that each wrong combination of --state / --db / --commit is one line, exit 2."""
    args = [seeded if a == "DB" else str(sample_window_path()) if a == "STATE" else a for a in args]
    result = runner.invoke(app, ["call", "get_overview", *args])
    assert result.exit_code == 2 and message in result.output, result.output


# ---------------------------------------------------------------------------------- files
@pytest.mark.parametrize(
    "text",
    [
        "{not json",  # not JSON at all
        '{"window": ',  # cut short
        "[1, 2]",  # JSON, not a window
    ],
)
@pytest.mark.parametrize("command", ["call get_overview --state", "feasibility", "propose"])
def test_an_unreadable_window_file_is_named(tmp_path, text, command):
    """Tests that a window file that is not JSON (or not a window) is refused in one line that
    names the file, exit 2, for each command reading one."""
    bad = tmp_path / "broken_window.json"
    bad.write_text(text, encoding="utf-8")
    result = runner.invoke(app, [*command.split(), str(bad)])
    assert result.exit_code == 2, result.output
    assert str(bad) in result.output and "Traceback" not in result.output


# ---------------------------------------------------------------------------------- feasibility
def _infeasible(tmp_path: Path) -> Path:
    """The sample window with every pending task 12 periods long: 144 periods needed, 107 free
    (proven infeasible, insufficient capacity)."""
    data = json.loads(sample_window_path().read_text(encoding="utf-8"))
    for task in data["tasks"]:
        if task.get("status") == "pending":
            task["duration"] = 12
    path = tmp_path / "infeasible.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_feasibility_exit_codes_say_the_verdict(tmp_path):
    """Tests ``smartflow feasibility``'s exit codes: 0 proven feasible, 3 proven infeasible (a
    script can branch on it without parsing Chinese), and the text reply either way."""
    ok = runner.invoke(app, ["feasibility", str(sample_window_path())])
    assert ok.exit_code == 0 and ok.stdout.startswith("可行性：可行（已证明）")
    bad = runner.invoke(app, ["feasibility", str(_infeasible(tmp_path))])
    assert bad.exit_code == 3, bad.output
    assert bad.stdout.startswith("可行性：不可行（已证明）")


def test_feasibility_json_is_the_report(tmp_path):
    """Tests ``smartflow feasibility --json``: one JSON object with the report's figures (the
    public FeasibilityReport fields but the witness), the same verdict and exit code."""
    ok = runner.invoke(app, ["feasibility", str(sample_window_path()), "--json"])
    data = json.loads(ok.stdout)
    assert ok.exit_code == 0 and data["is_feasible"] is True and data["proven"] is True
    assert data["capacity_gap"] == 0 and data["required_task_slots"] == data["feasible_slots"]
    bad = runner.invoke(app, ["feasibility", str(_infeasible(tmp_path)), "--json"])
    report = json.loads(bad.stdout)
    assert bad.exit_code == 3 and report["is_feasible"] is False and report["capacity_gap"] > 0
    assert report["reason_code"] in ("insufficient_capacity", "fragmented", "class_window")
    assert "witness" not in report

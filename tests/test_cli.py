"""Tests of the `smartflow` command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from smartflow_engine import ScheduleState
from smartflow_engine.cli import app

DATA = Path(__file__).parent / "data"
runner = CliRunner()


def test_call_read_tool():
    """Tests `smartflow call` on a read tool prints the reply."""
    res = runner.invoke(app, ["call", "get_task_info", "--state", str(DATA / "spec_example.json"),
                              "--args", '{"task_id": 1}'])
    assert res.exit_code == 0
    assert res.stdout.startswith("[1]高等数学\n类别：课程 | 状态：已安排（固定）")


def test_call_write_tool_writes_state(tmp_path):
    """Tests `smartflow call place --out` writes the changed state."""
    out = tmp_path / "after.json"
    res = runner.invoke(app, ["call", "place", "--state", str(DATA / "spec_example.json"),
                              "--args", '{"task_id": 3, "day": 5, "slot_start": 1}',
                              "--out", str(out)])
    assert res.exit_code == 0 and "已将 [3]复习线代 放到第5天第1-3节。" in res.stdout
    after = ScheduleState.from_json(out)
    assert after.task(3).status == "suggested" and after.task(3).slots[0].day == 5


def test_call_refusal_is_a_reply_not_an_error():
    """Tests that a refused write prints the refusal and exits 0 (it is an answer)."""
    res = runner.invoke(app, ["call", "move", "--state", str(DATA / "spec_example.json"),
                              "--args", '{"task_id": 1, "new_day": 3, "new_slot_start": 1}'])
    assert res.exit_code == 0 and "不可移动" in res.stdout


def test_bad_state_file_and_args(tmp_path):
    """Tests one-line errors and exit code 2 for a missing file, invalid state and bad --args."""
    missing = runner.invoke(app, ["call", "get_overview", "--state", str(tmp_path / "no.json")])
    assert missing.exit_code == 2 and "cannot read state file" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"window": {"total_days": 0}, "tasks": []}), encoding="utf-8")
    invalid = runner.invoke(app, ["call", "get_overview", "--state", str(bad)])
    assert invalid.exit_code == 2 and "total_days" in invalid.stderr
    args = runner.invoke(app, ["call", "get_overview", "--state", str(DATA / "spec_example.json"),
                               "--args", "{oops"])
    assert args.exit_code == 2 and "--args is not JSON" in args.stderr


def test_demo_runs_on_sample_window(tmp_path):
    """Tests that `smartflow demo` walks the sample window through SQLite and commits the result."""
    res = runner.invoke(app, ["demo", "--workdir", str(tmp_path)])
    assert res.exit_code == 0, res.stdout
    for text in ("规划窗口共14天", "已将 [11]复习线代 放到第6天第1-3节。", "放置失败：第1天第1-2节已被 [1]高等数学 占用。",
                 "嵌入到第3天第3节", "移动失败：[1]高等数学 是固定课程，不可移动。"):
        assert text in res.stdout
    assert "未知工具" not in res.stdout and "内部错误" not in res.stdout
    assert "reloaded window equals the session's: True" in res.stdout
    for picture in ("schedule_before.png", "schedule_after.png"):  # drawn before/after
        assert (tmp_path / picture).read_bytes().startswith(b"\x89PNG")
    final = ScheduleState.from_json(tmp_path / "state_after_demo.json")
    assert final.task(11).slots[0].day == 7
    # the committed database holds the session's result
    from smartflow_engine.store import Store

    store = Store.from_url(f"sqlite:///{tmp_path / 'smartflow.db'}")
    loaded = store.load_window(1, final.window.day_mapping)
    assert loaded.to_dict() == final.to_dict()

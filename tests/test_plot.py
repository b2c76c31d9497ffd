"""Tests of the window picture (smartflow_engine.plot) and the `show` / `propose` commands."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.cli import app, sample_window_path
from smartflow_engine.plot import _CJK, plot_window, save_window, window_picture
from smartflow_engine.rules import threshold
from smartflow_engine.state.synthetic import synthetic_window

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def sample() -> ScheduleState:
    return ScheduleState.from_json(sample_window_path())


def test_picture_holds_courses_water_guests_tasks_and_banned(sample: ScheduleState) -> None:
    """Tests that the picture's data has every kind of block with its status and lock, a guest
    inside its water course, and the free periods a task class bans (only free ones)."""
    tb = Toolbox(sample)
    assert "嵌入" in tb.call("place", {"task_id": 15, "day": 3, "slot_start": 3})
    pic = window_picture(sample)
    by_id = {(b.task_id, b.day): b for b in pic.blocks}
    assert by_id[(1, 1)].kind == "course" and by_id[(1, 1)].locked
    assert by_id[(6, 3)].kind == "water" and not by_id[(6, 3)].locked
    guest = by_id[(15, 3)]
    assert guest.kind == "guest" and guest.status == "suggested"
    assert (guest.slot_start, guest.category) == (3, "复习")
    assert by_id[(9, 1)].kind == "task" and by_id[(9, 1)].status == "suggested"
    assert by_id[(10, 2)].status == "existing"
    # 复习 (days 1-14) bans period 12, 项目 (days 3-14) bans 11 and 12; 英语单词打卡 holds 2/11.
    assert pic.banned[(1, 12)] == ["复习"]
    assert sorted(pic.banned[(5, 12)]) == ["复习", "项目"]
    assert (1, 11) not in pic.banned and (3, 11) in pic.banned
    assert (2, 11) not in pic.banned  # occupied periods are not drawn as banned
    # loads: day 1 holds [1] 1-2, [3] 5-6 (courses) and [9] 9-10 (a task) of 12 periods
    assert pic.course_share[0] == pytest.approx(4 / 12)
    assert pic.utilization[0] == pytest.approx(6 / 12)
    # a guest adds no load to its host's day
    assert pic.utilization[2] == pytest.approx(7 / 12)


def test_flagged_days_are_the_health_issue_days() -> None:
    """Tests that the marked days are exactly the days of critical/warning health issues, the
    most severe one winning."""
    state = synthetic_window(3, 14, occupancy=0.7, pending=10, with_task_classes=True)
    expected: dict[int, str] = {}
    for issue in analyze_health(state).issues:
        if (
            issue.day is not None
            and issue.severity in ("critical", "warning")
            and expected.get(issue.day) != "critical"
        ):
            expected[issue.day] = issue.severity
    assert "critical" in expected.values() and "warning" in expected.values()
    assert window_picture(state).day_severity == expected


@pytest.mark.parametrize("level", ["strict", "normal", "relaxed"])
def test_load_lines_come_from_the_threshold_table(sample: ScheduleState, level: str) -> None:
    """Tests that the warning/critical utilisation lines drawn are the analyzers' thresholds at
    the requested level (not constants)."""
    fig = plot_window(sample, level=level, issues=False)
    lines = {
        ln.get_gid(): ln.get_ydata()[0] for ax in fig.axes for ln in ax.get_lines() if ln.get_gid()
    }
    assert lines["warning_line"] == threshold(
        "load", "day_utilization", "warning", "utilization", level
    )
    assert lines["critical_line"] == threshold(
        "load", "day_utilization", "critical", "utilization", level
    )


def test_without_cjk_font_no_chinese_text_and_no_missing_glyphs(sample: ScheduleState) -> None:
    """Tests the fallback: with no CJK font the picture has no Chinese text (ids and English
    category names instead) and rendering warns of no missing glyph."""
    fig = plot_window(sample, cjk=False)
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert any(t.startswith("[11]") or t == "[1]" for t in texts)
    assert not [t for t in texts if _CJK.search(t)]
    assert {"review", "homework"} <= set(texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    assert buf.getvalue().startswith(PNG)


def test_save_window_writes_png(tmp_path: Path, sample: ScheduleState) -> None:
    """Tests that save_window writes a PNG at the given path."""
    out = save_window(sample, tmp_path / "sub" / "w.png")
    assert out.read_bytes().startswith(PNG)


def test_show_command(tmp_path: Path) -> None:
    """Tests `smartflow show STATE --out FILE` writes a PNG, and refuses a bad level or a bad
    state file with a message and exit code 2."""
    out = tmp_path / "schedule.png"
    res = runner.invoke(app, ["show", str(sample_window_path()), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(PNG)
    bad = runner.invoke(
        app, ["show", str(sample_window_path()), "--out", str(out), "--level", "lax"]
    )
    assert bad.exit_code == 2 and "unknown --level" in bad.stderr
    missing = runner.invoke(app, ["show", str(tmp_path / "nope.json"), "--out", str(out)])
    assert missing.exit_code == 2 and "cannot read state file" in missing.stderr


def test_propose_shows_status_line_above_one_second() -> None:
    """Tests that `smartflow propose` with a limit above a second reports the solver's stages,
    best objective and bound on stderr (stdout holds only the reply), and nothing at 1 s."""
    res = runner.invoke(app, ["propose", str(sample_window_path()), "--time-limit", "1.5"])
    assert res.exit_code == 0, res.output
    assert "solver: max periods" in res.stderr and "solver: one search" in res.stderr
    done = [ln for ln in res.stderr.splitlines() if ln.startswith("solver: done")]
    assert len(done) == 1 and "best " in done[0] and "bound " in done[0]
    assert "solver:" not in res.stdout and res.stdout.startswith("粗排方案")
    quick = runner.invoke(app, ["propose", str(sample_window_path()), "--time-limit", "1"])
    assert quick.exit_code == 0 and "solver:" not in quick.stderr


def test_call_apply_proposal_shows_status_line_above_one_second(tmp_path: Path) -> None:
    """Tests that `smartflow call apply_proposal` (default limit 2 s) reports the solver's stages
    on stderr, as `smartflow propose` does, and a read tool shows none."""
    res = runner.invoke(
        app,
        [
            "call",
            "apply_proposal",
            "--state",
            str(sample_window_path()),
            "--out",
            str(tmp_path / "after.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "solver: max periods" in res.stderr
    assert sum(ln.startswith("solver: done") for ln in res.stderr.splitlines()) == 1
    assert "solver:" not in res.stdout
    read = runner.invoke(app, ["call", "get_overview", "--state", str(sample_window_path())])
    assert read.exit_code == 0 and "solver:" not in read.stderr

"""Tests that the schedule picture draws Chinese task names with the CJK font the project's
set-up installs (Debian's fonts-wqy-microhei), found even when matplotlib's font cache predates
it."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator

import pytest

from smartflow_engine import ScheduleState, plot
from smartflow_engine.cli import sample_window_path


@pytest.fixture
def sample() -> ScheduleState:
    return ScheduleState.from_json(sample_window_path())


@pytest.fixture
def fresh_font_lookup() -> Iterator[None]:
    plot.cjk_font.cache_clear()
    yield
    plot.cjk_font.cache_clear()


def test_a_cjk_font_is_installed_and_draws_task_names(sample, fresh_font_lookup):
    """Tests that a CJK font is found and that the picture shows 复习线代 (with its id below),
    not [11] alone, rendering with no missing glyph."""
    assert plot.cjk_font() is not None, "no CJK font: the Makefile's set-up installs one"
    fig = plot.plot_window(sample)
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert "高等数学\n[1]" in texts
    assert "复习" in texts and "作业" in texts  # categories in Chinese in the legend
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    placed = sample.model_copy(deep=True)
    from smartflow_engine import Toolbox

    tb = Toolbox(placed)
    tb.call("place", {"task_id": 11, "day": 6, "slot_start": 1})
    texts = [
        t.get_text() for t in plot.plot_window(tb.state).findobj(lambda a: hasattr(a, "get_text"))
    ]
    assert "复习线代\n[11]" in texts


def test_a_font_installed_after_matplotlibs_cache_is_found(fresh_font_lookup):
    """Tests that a CJK font missing from matplotlib's cached font list (installed after the
    cache was built) is found among the system's font files."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    saved = list(manager.ttflist)
    manager.ttflist[:] = [f for f in saved if plot._probe([f]) is None]  # no CJK font known
    try:
        family = plot.cjk_font()
        assert family is not None
        assert any(f.name == family for f in manager.ttflist)
    finally:
        manager.ttflist[:] = saved


def test_long_names_are_shortened_and_short_blocks_have_one_line():
    """Tests the block labels: at most NAME_CHARS characters, the id on a second line only for
    blocks of two periods or more, the id alone without a CJK font."""
    block = plot.Block(16, 1, 3, 6, "task", "项目", "suggested", False, "程序设计大作业")
    assert plot.block_label(block, True) == "程序设计…\n[16]"
    one = plot.Block(21, 1, 8, 8, "task", "项目", "suggested", False, "项目周报")
    assert plot.block_label(one, True) == "项目周报"
    assert plot.block_label(one, False) == "[21]"

"""Fixtures of the analyzer tests; the window builders live in analyzer_windows.py."""

from __future__ import annotations

from typing import Any

import pytest

from smartflow_engine import ScheduleState
from tests.helpers.analyzer_windows import build


@pytest.fixture
def balanced_window() -> ScheduleState:
    """Seven days, a course and a study block every day, nothing pending: no issue at all."""
    items: list[Any] = []
    for day in range(1, 8):
        items.append(("course", "课程", day, 1, 2))
        items.append(("task", "复习" if day % 2 else "作业", day, 5, 6))
    return build(7, items)

"""The test windows: ``tests/data/<name>.json`` (the one loader every test uses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smartflow_engine import ScheduleState

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE_WINDOW = "spec_tools_window"  # tool-layer-design.md's example window


def load_window(name: str = EXAMPLE_WINDOW) -> ScheduleState:
    """Load ``tests/data/<name>.json``."""
    return ScheduleState.from_json(DATA / f"{name}.json")


def window_dict(name: str = EXAMPLE_WINDOW) -> dict[str, Any]:
    """``tests/data/<name>.json`` as the JSON object."""
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def study_window(num_days: int, tasks: list[dict[str, Any]]) -> ScheduleState:
    """A window of ``num_days`` x 12 periods holding only study tasks (suggested 复习 tasks
    ``1..n``, each row's fields over those defaults)."""
    rows = [
        {
            "state_id": i,
            "name": f"任务{i}",
            "source": "task_item",
            "category": "复习",
            "status": "suggested",
            **t,
        }
        for i, t in enumerate(tasks, start=1)
    ]
    return ScheduleState.from_json(
        {"window": {"total_days": num_days, "slots_per_day": 12}, "tasks": rows}
    )

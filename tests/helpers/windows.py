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

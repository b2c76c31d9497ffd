"""Shared fixtures: fixed windows from tests/data, hypothesis profiles, self-check on."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from smartflow_engine import ScheduleState, Toolbox

# The running database and Redis servers (one database / key prefix per run): see db_servers.py.
from tests.helpers.db_servers import (  # noqa: F401
    mariadb_database,
    pg_database,
    redis_prefix,
    server_stores,
)
from tests.helpers.windows import load_window

os.environ.setdefault("SMARTFLOW_SELF_CHECK", "1")

settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def spec_example_window() -> ScheduleState:
    """The spec's §3.1 example, verbatim."""
    return load_window("spec_example")


@pytest.fixture
def spec_tools_window() -> ScheduleState:
    """The window behind the spec's §4/§5 reply examples (tasks [1]-[10])."""
    return load_window("spec_tools_window")


@pytest.fixture
def sample_window() -> ScheduleState:
    """The bundled two-week student timetable used by `smartflow demo`."""
    return load_window("sample_window")


@pytest.fixture
def tools(spec_tools_window: ScheduleState) -> Toolbox:
    """A self-checking Toolbox over the spec's tool-example window."""
    return Toolbox(spec_tools_window, self_check=True)

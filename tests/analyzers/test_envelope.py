"""The envelope of every analysis tool: shape, JSON, schema coverage, every error path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.analyzers import (
    analyze_context,
    analyze_health,
    analyze_load,
    analyze_subjects,
    analyze_tolerance,
)
from smartflow_engine.analyzers.common import WRITE_TOOLS
from tests.helpers.analyzer_windows import build, random_window

ENVELOPE = [
    "tool",
    "success",
    "metric_schema",
    "metrics",
    "issues",
    "next_actions",
    "error",
    "error_code",
]
ISSUE_KEYS = {
    "issue_id",
    "dimension",
    "severity",
    "rule",
    "day",
    "category",
    "trigger",
    "conditions",
    "impact_score",
}
ACTION_KEYS = {
    "action_id",
    "priority",
    "intent_code",
    "target_filter",
    "slot_filter",
    "candidate_scope",
    "required_reads",
    "success_criteria",
    "candidate_write_tools",
    "issue_ids",
}
TOOLS = [
    "analyze_load",
    "analyze_subjects",
    "analyze_context",
    "analyze_tolerance",
    "analyze_health",
]
FULL_ARGS: dict[str, dict[str, Any]] = {
    "analyze_load": {"detail": "full"},
    "analyze_subjects": {"detail": "full"},
    "analyze_context": {"detail": "day_detail", "hard_categories": ["复习", "作业"]},
    "analyze_tolerance": {"detail": "full"},
    "analyze_health": {"detail": "full"},
}


def check_envelope(reply: str, tool: str, *, success: bool) -> dict[str, Any]:
    data = json.loads(reply)
    keys = ENVELOPE + (["feasibility"] if tool == "analyze_health" and success else [])
    assert list(data) == keys
    assert data["tool"] == tool and data["success"] is success
    assert isinstance(data["metric_schema"], dict) and isinstance(data["metrics"], dict)
    assert isinstance(data["issues"], list) and isinstance(data["next_actions"], list)
    if not success:
        assert data["error"] and data["error_code"]
        assert data["metrics"] == {} and data["issues"] == [] and data["next_actions"] == []
        return data
    assert data["error"] == "" and data["error_code"] == ""
    assert data["metric_schema"], "metric_schema describes every metric"
    for row in data["metric_schema"].values():
        assert set(row) == {"meaning", "unit", "direction"}
        assert row["direction"] in ("lower_better", "higher_better", "neutral")
    for issue in data["issues"]:
        assert set(issue) >= ISSUE_KEYS
        assert issue["severity"] in ("critical", "warning", "info")
        assert set(issue["trigger"]) == {"metric", "operator", "threshold", "actual"}
        assert issue["trigger"] == issue["conditions"][0]
    for priority, act in enumerate(data["next_actions"], start=1):
        assert set(act) >= ACTION_KEYS
        assert act["priority"] == priority
        assert set(act["candidate_write_tools"]) <= WRITE_TOOLS
        assert "min_context_switch" not in json.dumps(act)
        assert set(act["candidate_scope"]) == {"day_range", "categories", "task_pool"}
    return data


def metric_paths(node: Any, prefix: str = "") -> set[str]:
    """Leaf paths of the metrics, ``days[].total_used`` style."""
    if isinstance(node, dict):
        out: set[str] = set()
        for key, value in node.items():
            out |= metric_paths(value, f"{prefix}.{key}" if prefix else key)
        return out or {prefix}
    if isinstance(node, list) and node and isinstance(node[0], dict):
        return set().union(*(metric_paths(v, prefix + "[]") for v in node))
    return {prefix}


def covered(path: str, schema: dict[str, Any]) -> bool:
    """``path`` is a schema key, or lies under one (``<part>`` matches any key)."""
    parts = path.replace("[]", "").split(".")
    for key in schema:
        keys = key.replace("<part>", "*").replace("[]", "").split(".")
        if len(parts) < len(keys):
            continue
        if all(k in ("*", p) for k, p in zip(keys, parts, strict=False)):
            return True
    return False


WINDOWS = {
    "spec_tools": lambda: ScheduleState.from_json("tests/data/spec_tools_window.json"),
    "sample": lambda: ScheduleState.from_json("tests/data/sample_window.json"),
    "random": lambda: random_window(7, 20, 12, 0.6),
    "empty": lambda: build(3, []),
}


@pytest.mark.parametrize("window", list(WINDOWS))
@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("full", [False, True])
def test_every_tool_returns_the_envelope(window: str, tool: str, full: bool) -> None:
    """Tests that every tool answers JSON with exactly the envelope's keys, that every metric is
    described in metric_schema, and that the call leaves the state as it was."""
    state = WINDOWS[window]()
    before = state.to_json()
    tb = Toolbox(state)
    data = check_envelope(tb.call(tool, FULL_ARGS[tool] if full else {}), tool, success=True)
    missing = {
        p for p in metric_paths(data["metrics"]) if p and not covered(p, data["metric_schema"])
    }
    assert not missing
    assert tb.state is not None and tb.state.to_json() == before
    if tool == "analyze_health":
        assert data["feasibility"]["is_feasible"] in (True, False, None)


def test_nothing_to_measure_is_success_with_empty_metrics() -> None:
    """Tests that no placed study task (context) or an unknown subject gives success, metrics {}."""
    state = build(3, [("course", "课程", 1, 1, 2), ("pending", "复习", 0, 1, 2)])
    assert analyze_context(state).success and analyze_context(state).metrics == {}
    result = analyze_subjects(state, category="没有这个")
    assert result.success and result.metrics == {} and result.issues == []
    load = analyze_load(build(2, []))
    assert load.success and load.metrics["summary"]["total_used"] == 0


# (tool, args, error_code): through the Toolbox; static checks by the argument models,
# window-dependent ones by the analyzers.
TOOLBOX_ERRORS = [
    ("analyze_load", {"scope": "month"}, "invalid_args"),  # unknown scope
    ("analyze_load", {"day_from": 0}, "invalid_args"),  # below 1
    ("analyze_load", {"day_from": 15}, "out_of_range"),  # the sample window has 14 days
    ("analyze_load", {"day_from": 5, "day_to": 3}, "invalid_args"),  # reversed range
    ("analyze_load", {"scope": "day_range", "day_from": 3}, "invalid_args"),  # day_to missing
    ("analyze_load", {"scope": "full", "day_to": 3}, "invalid_args"),  # bounds with full
    ("analyze_load", {"scope": "week", "week_from": 99}, "out_of_range"),  # not a window week
    ("analyze_load", {"week_from": 8, "week_to": 7}, "invalid_args"),  # reversed weeks (7-8)
    ("analyze_load", {"week_from": 1, "day_from": 1}, "invalid_args"),  # weeks and days
    ("analyze_load", {"granularity": "hour"}, "invalid_args"),  # unknown granularity
    ("analyze_load", {"day_from": "3"}, "invalid_args"),  # a string, not an int
    ("analyze_load", {"bogus": 1}, "invalid_args"),  # unknown argument
    ("analyze_subjects", {"include_pending": "yes"}, "invalid_args"),  # not a bool
    ("analyze_subjects", {"category": ""}, "invalid_args"),  # empty name
    ("analyze_subjects", {"detail": "day_detail"}, "invalid_args"),  # load/context only
    ("analyze_context", {"hard_categories": "复习"}, "invalid_args"),  # not an array
    ("analyze_context", {"day_to": 20}, "out_of_range"),  # beyond the window
    ("analyze_context", {"threshold": "loose"}, "invalid_args"),  # unknown level
    ("analyze_tolerance", {"min_usable_size": 0}, "invalid_args"),  # p1 §4.6: <= 0
    ("analyze_tolerance", {"min_daily_buffer": -1}, "invalid_args"),  # negative
    ("analyze_tolerance", {"min_usable_size": 13}, "out_of_range"),  # longer than a day
    ("analyze_tolerance", {"min_daily_buffer": 13}, "out_of_range"),  # more than a day
    ("analyze_health", {"dimensions": ["mood"]}, "invalid_args"),  # every dimension invalid
    ("analyze_health", {"dimensions": []}, "invalid_args"),  # none at all
    ("analyze_health", {"threshold": 1}, "invalid_args"),  # not a level
]


@pytest.mark.parametrize(("tool", "args", "code"), TOOLBOX_ERRORS)
def test_bad_arguments_get_a_stable_error_code(tool: str, args: dict[str, Any], code: str) -> None:
    """Tests that bad arguments come back as success=false with a stable error_code and a
    readable error, never a traceback, and leave the state untouched."""
    state = ScheduleState.from_json("tests/data/sample_window.json")
    before = state.to_json()
    data = check_envelope(Toolbox(state).call(tool, args), tool, success=False)
    assert data["error_code"] == code
    assert "Traceback" not in data["error"]
    assert state.to_json() == before


# (analyzer, kwargs, error_code): the same checks on direct Python calls.
DIRECT_ERRORS = [
    (analyze_load, {"scope": "month"}, "invalid_args"),  # unknown scope
    (analyze_load, {"day_from": True}, "invalid_args"),  # a bool is not a day
    (analyze_load, {"day_from": 0}, "out_of_range"),  # no model in front: the window says no
    (analyze_load, {"detail": None}, "invalid_args"),  # not a detail level
    (analyze_subjects, {"category": 3}, "invalid_args"),  # not a string
    (analyze_subjects, {"include_pending": 1}, "invalid_args"),  # not a bool
    (analyze_context, {"hard_categories": [""]}, "invalid_args"),  # empty name
    (analyze_context, {"hard_categories": ["x"] * 51}, "invalid_args"),  # too many
    (analyze_tolerance, {"min_usable_size": 2.5}, "invalid_args"),  # not an int
    (analyze_health, {"dimensions": "load"}, "invalid_args"),  # not a list
    (analyze_health, {"time_limit_s": 0}, "invalid_args"),  # no budget
    (analyze_health, {"check_feasibility": "no"}, "invalid_args"),  # not a bool
]


@pytest.mark.parametrize(("fn", "kwargs", "code"), DIRECT_ERRORS)
def test_direct_calls_refuse_bad_parameters(fn: Any, kwargs: dict[str, Any], code: str) -> None:
    """Tests that the Python API refuses bad parameters with the same envelope."""
    state = ScheduleState.from_json("tests/data/sample_window.json")
    result = fn(state, **kwargs)
    data = check_envelope(
        json.dumps(result.to_dict(), ensure_ascii=False), result.tool, success=False
    )
    assert data["error_code"] == code


@pytest.mark.parametrize("tool", TOOLS)
def test_no_state_is_an_envelope(tool: str) -> None:
    """Tests that calling without a loaded window gives success=false, error_code no_state."""
    data = check_envelope(Toolbox(None).call(tool, {}), tool, success=False)
    assert data["error_code"] == "no_state"
    fn = {
        "analyze_load": analyze_load,
        "analyze_subjects": analyze_subjects,
        "analyze_context": analyze_context,
        "analyze_tolerance": analyze_tolerance,
        "analyze_health": analyze_health,
    }[tool]
    assert fn(None).error_code == "no_state"


def test_analysis_tools_are_registered_as_json_reads() -> None:
    """Tests that the five tools are registered, read-only, JSON output."""
    tb = Toolbox(None)
    for tool in TOOLS:
        spec = tb.spec(tool)
        assert spec is not None and spec.kind == "read" and spec.output == "json"
        assert not tb.is_write_tool(tool)

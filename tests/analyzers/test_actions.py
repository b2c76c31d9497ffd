"""next_actions on random windows: directions only, never a course, reads that really work."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.analyzers import (
    AnalysisResult,
    analyze_context,
    analyze_health,
    analyze_load,
    analyze_subjects,
    analyze_tolerance,
)
from smartflow_engine.analyzers.common import WRITE_TOOLS
from smartflow_engine.analyzers.frame import movable_study_tasks
from tests.helpers.analyzer_windows import windows


def _results(state: ScheduleState, level: str) -> list[AnalysisResult]:
    return [
        analyze_load(state, threshold=level),
        analyze_subjects(state, threshold=level),
        analyze_context(state, threshold=level),
        analyze_tolerance(state, threshold=level),
        analyze_health(state, threshold=level, check_feasibility=False),
    ]


@given(
    state=windows(max_days=14, slots=(4, 12)),
    level=st.sampled_from(["strict", "normal", "relaxed"]),
)
def test_actions_point_at_movable_study_tasks_only(state: ScheduleState, level: str) -> None:
    """Tests that every action targets study tasks (kind study, unlocked), that each day
    it names as a target holds a movable study task (never a course-only day), that it offers
    only existing write tools and never min_context_switch, and that its reads run cleanly."""
    movable_days = {b.day for t in movable_study_tasks(state) for b in t.slots}
    tb = Toolbox(state)
    for result in _results(state, level):
        ids = {i.issue_id for i in result.issues} | {
            m for i in result.issues for m in i.merged_issue_ids
        }
        for act in result.next_actions:
            text = json.dumps(act.to_dict(), ensure_ascii=False)
            assert "min_context_switch" not in text
            assert set(act.candidate_write_tools) <= WRITE_TOOLS
            assert act.target_filter["kind"] == "study" and "source" not in act.target_filter
            assert act.target_filter.get("locked") is False
            pool = act.candidate_scope["task_pool"]
            if pool != "pending" and "days" in act.target_filter:
                assert set(act.target_filter["days"]) <= movable_days
            assert set(act.issue_ids) <= ids
            assert act.issue_ids, "every action says which issue it addresses"
            for read in act.required_reads:
                reply: Any = tb.call(read["tool"], read["args"])
                assert not reply.startswith(("参数错误", "未知工具")), (read, reply)
                assert "超出规划窗口" not in reply, (read, reply)


def test_a_study_task_holding_a_guest_is_not_movable() -> None:
    """Tests that a placed study task that holds a guest cannot be moved by single writes (the
    guest would be left behind), whether or not the caller passes the state's hosts, and that
    the same task without its guest can."""
    from smartflow_engine.analyzers.destinations import movable

    def window(with_guest: bool) -> ScheduleState:
        tasks: list[dict[str, Any]] = [
            {
                "state_id": 1,
                "name": "讨论课",
                "category": "复习",
                "status": "suggested",
                "can_embed": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
            },
        ]
        if with_guest:
            tasks.append(
                {
                    "state_id": 2,
                    "name": "作业",
                    "category": "作业",
                    "status": "suggested",
                    "embed_host": 1,
                    "slots": [{"day": 1, "slot_start": 1, "slot_end": 1}],
                }
            )
        return ScheduleState.from_json({"window": {"total_days": 2}, "tasks": tasks})

    held, free = window(True), window(False)
    host = held.task(1)
    assert host is not None and free.task(1) is not None
    assert movable(held, host) is False
    assert movable(held, host, held.guests_by_host()) is False
    assert movable(free, free.task(1)) is True
    assert movable(free, free.task(1), free.guests_by_host()) is True

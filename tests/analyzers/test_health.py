"""analyze_health: feasibility first, negotiation on a proven infeasible window, merge, close."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.analyzers import analyze_health, analyze_subjects
from smartflow_engine.analyzers.health import NEGOTIATION_INTENTS
from smartflow_engine.analyzers.result import SEVERITY_RANK
from smartflow_engine.solver import FeasibilityReport, check_feasibility, negotiation_figures
from tests.helpers.analyzer_windows import build, random_window


@pytest.fixture
def overbooked_window() -> ScheduleState:
    """Two days with courses in periods 1-10: 4 free periods, 6 pending periods (3 × 2)."""
    items: list[Any] = [("course", "课程", d, 1, 10) for d in (1, 2)]
    items += [("pending", "复习", 0, 1, 2)] * 3
    return build(2, items)


def test_infeasible_window_gets_the_feasibility_issue_and_four_options(
    overbooked_window: ScheduleState,
) -> None:
    """Tests that a window proven infeasible reports a critical feasibility issue first and the
    four negotiation actions, carrying the solver's figures (gap 2, one extra day)."""
    result = analyze_health(overbooked_window, time_limit_s=5.0)
    assert result.success
    assert result.feasibility is not None
    assert result.feasibility["is_feasible"] is False and result.feasibility["proven"] is True
    assert result.feasibility["capacity_gap"] == 2
    first = result.issues[0]
    assert (first.dimension, first.severity, first.rule) == (
        "feasibility",
        "critical",
        "capacity_gap",
    )
    assert (first.trigger.operator, first.trigger.threshold, first.trigger.actual) == (">", 0, 2)
    assert [a.intent_code for a in result.next_actions] == list(NEGOTIATION_INTENTS)
    assert [a.priority for a in result.next_actions] == [1, 2, 3, 4]
    figures = {a.intent_code: a.figures for a in result.next_actions}
    solver = negotiation_figures(overbooked_window, time_limit_s=5.0)
    assert figures["ask_expand_window"]["extra_days_needed"] == solver.extra_days_needed == 1
    assert figures["ask_reduce_scope_or_budget"]["slots_to_cut"] == solver.slots_to_cut == 2
    assert figures["ask_relax_constraints"]["lifting_banned_suffices"] is False
    assert figures["accept_risk_and_close"]["unplaceable_slots"] == 2
    assert all(a.issue_ids == [first.issue_id] for a in result.next_actions)
    assert result.metrics["close_signal"]["acceptable_to_close"] is False


def test_balanced_window_gives_the_close_signal(balanced_window: ScheduleState) -> None:
    """Tests that a balanced, feasible window has no critical issue, at most one warning, and
    says it is acceptable to close."""
    result = analyze_health(balanced_window)
    assert result.feasibility is not None and result.feasibility["is_feasible"] is True
    counts = result.metrics["issue_counts"]
    assert counts["critical"] == 0 and counts["warning"] <= 1
    signal = result.metrics["close_signal"]
    floor = signal.pop("floor")
    assert signal == {
        "acceptable_to_close": True,
        "critical": 0,
        "warning": counts["warning"],
        "rule": "critical=0 && warning<=1",
        "reason": "rules_met",
        "best_achievable": floor["critical"] == 0 and floor["warning"] >= counts["warning"],
    }
    assert floor["proven"] is True and floor["critical"] == 0


def test_close_signal_follows_the_counts() -> None:
    """Tests that acceptable_to_close is exactly critical=0 && warning<=1 on many windows."""
    for seed in range(12):
        result = analyze_health(random_window(seed, 14, 12, 0.5), check_feasibility=False)
        counts = result.issue_counts()
        assert result.metrics["issue_counts"] == counts
        signal = result.metrics["close_signal"]
        rules = counts["critical"] == 0 and counts["warning"] <= 1
        # without a feasibility proof a pending task may still be placeable: no close then
        pending = bool(random_window(seed, 14, 12, 0.5).pending_tasks())
        assert signal["acceptable_to_close"] is (rules and not pending)
        # reason: rules_met when acceptable, best_achievable only at a proven floor
        floor = signal["floor"]
        at_floor = (
            floor["proven"]
            and counts["critical"] <= floor["critical"]
            and (counts["critical"] + counts["warning"] <= floor["critical"] + floor["warning"])
        )
        assert signal["reason"] == (
            "rules_met"
            if signal["acceptable_to_close"]
            else "pending_placeable"
            if rules
            else "best_achievable"
            if signal["best_achievable"]
            else "open"
        )
        assert not signal["best_achievable"] or at_floor
        assert counts["critical"] >= floor["critical"]
        assert counts["critical"] + counts["warning"] >= floor["critical"] + floor["warning"]


def test_unproven_feasibility_is_never_reported_infeasible(
    overbooked_window: ScheduleState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests that when the solver has no proof (is_feasible None) health claims nothing: no
    feasibility issue and no negotiation actions, and the snapshot says unproven."""
    import smartflow_engine.solver as solver

    def unproven(state: ScheduleState, **_: Any) -> FeasibilityReport:
        return FeasibilityReport(
            is_feasible=None,
            proven=False,
            required_task_slots=6,
            feasible_slots=None,
            capacity_gap=None,
            free_capacity_slots=4,
            slack_slots=-2,
            reason_code="unknown",
            runtime_s=0.01,
        )

    monkeypatch.setattr(solver, "check_feasibility", unproven)
    result = analyze_health(overbooked_window)
    assert result.feasibility is not None
    assert result.feasibility["is_feasible"] is None and result.feasibility["proven"] is False
    assert all(i.dimension != "feasibility" for i in result.issues)
    assert not {a.intent_code for a in result.next_actions} & set(NEGOTIATION_INTENTS)


def test_issues_of_one_subject_stay_apart_when_their_rules_differ() -> None:
    """Tests that a subject's long gap and its concentration are two issues in health (different
    rules are different problems, issue 10 item 5), as in the single analyzer."""
    items: list[Any] = [("task", "复习", 1, s, s + 1) for s in range(1, 12, 2)]
    items.append(("task", "复习", 8, 1, 2))
    state = build(8, items)
    single = analyze_subjects(state)
    assert {i.rule for i in single.issues} == {"subject_gap", "subject_concentration"}
    health = analyze_health(state, check_feasibility=False)
    mine = {i.rule: i for i in health.issues if i.category == "复习"}
    assert set(mine) == {"subject_gap", "subject_concentration"}
    assert not any(i.merged_issue_ids for i in health.issues)
    counts = health.issue_counts()
    assert health.metrics["close_signal"]["critical"] == counts["critical"]


def test_only_the_same_problem_merges() -> None:
    """Tests that merge_issues folds issues with the same dimension, rule and entity into the
    most severe one and keeps issues of another rule, day or subject apart."""
    from smartflow_engine.analyzers.health import merge_issues
    from smartflow_engine.analyzers.result import Issue, Trigger

    def issue(
        rule: str, sev: str, day: int | None = None, cat: str | None = None, n: int = 0
    ) -> Issue:
        t = Trigger("m", ">=", 1, 2)
        return Issue(
            f"issue_{rule}_{sev}_{day}_{cat}_{n}",
            "context",
            sev,
            rule,
            t,
            (t,),
            1.0,
            day=day,
            category=cat,
        )

    merged = merge_issues(
        [
            issue("context_switch", "warning", day=2),
            issue("context_switch", "critical", day=2, n=1),
            issue("context_switch", "warning", day=3),
            issue("heavy_adjacent", "info", day=2),
        ]
    )
    assert [(i.rule, i.severity, i.day) for i in merged] == [
        ("context_switch", "critical", 2),
        ("context_switch", "warning", 3),
        ("heavy_adjacent", "info", 2),
    ]
    assert merged[0].merged_issue_ids == ["issue_context_switch_warning_2_None_0"]


def test_issues_are_sorted_and_actions_capped() -> None:
    """Tests the order severity → impact → day, at most three actions, and that every action
    names issues present in the reply."""
    for seed in range(12):
        result = analyze_health(random_window(seed, 20, 12, 0.8), check_feasibility=False)
        keys = [(SEVERITY_RANK[i.severity], -i.impact_score, i.day or 0) for i in result.issues]
        assert keys == sorted(keys)
        assert len(result.next_actions) <= 3
        ids = {i.issue_id for i in result.issues}
        for act in result.next_actions:
            assert set(act.issue_ids) <= ids


def test_dimensions_select_and_ignore() -> None:
    """Tests that only the chosen dimensions are measured and invalid names are listed."""
    state = random_window(3, 10, 12, 0.5)
    result = analyze_health(state, dimensions=["load", "mood"], check_feasibility=False)
    assert result.success
    assert result.metrics["dimensions"] == ["load"]
    assert result.metrics["ignored_dimensions"] == ["mood"]
    assert "tolerance" not in result.metrics and "load" in result.metrics
    assert {i.dimension for i in result.issues} <= {"load"}
    assert result.feasibility is None and "feasibility" in result.to_dict()


def test_health_tool_uses_the_solver_with_the_context_caps(
    overbooked_window: ScheduleState,
) -> None:
    """Tests the registered tool end to end: the JSON reply carries the feasibility snapshot
    and the same figures as the solver's direct answer."""
    data = json.loads(Toolbox(overbooked_window).call("analyze_health", {}))
    direct = check_feasibility(overbooked_window, time_limit_s=2.0, num_workers=1)
    assert data["feasibility"]["capacity_gap"] == direct.capacity_gap == 2
    assert data["feasibility"]["reason_code"] == direct.reason_code
    assert [a["intent_code"] for a in data["next_actions"]] == list(NEGOTIATION_INTENTS)


def test_floor_figures_are_rendered_in_chinese() -> None:
    """Tests that the analyze_health tool reply carries a Chinese sentence with the figures of
    every binding rule of the floor (locked courses filling a day)."""
    from smartflow_engine import Toolbox

    items: list[Any] = [("course", "课程", 1, 1, 11), ("course", "课程", 2, 1, 2)]
    state = build(2, items)
    reply = json.loads(Toolbox(state).call("analyze_health", {}))
    binding = reply["metrics"]["close_signal"]["floor"]["binding"]
    fixed = next(b for b in binding if b["why"].get("kind") == "fixed_load")
    assert "第1天已有11节固定占用" in fixed["text"]
    issue = next(i for i in reply["issues"] if i["rule"] == "day_utilization")
    assert issue["fixable"] is False


def test_no_close_while_a_pending_task_can_be_placed() -> None:
    """Tests issue 45 item 1: a window meeting the rule (critical=0 && warning<=1) with pending
    tasks that provably fit says acceptable_to_close false (reason pending_placeable), not 可收口;
    once they are placed the same rule closes; a pending task proven not to fit (the capacity
    gap covers it) does not hold the close back."""
    from smartflow_engine.cli import sample_window_path

    state = ScheduleState.from_json(sample_window_path())
    assert state.pending_tasks()
    first = analyze_health(state)
    counts = first.metrics["issue_counts"]
    assert counts["critical"] == 0 and counts["warning"] <= 1  # the empty plan meets the rule
    assert first.feasibility is not None and first.feasibility["capacity_gap"] == 0
    signal = first.metrics["close_signal"]
    assert signal["acceptable_to_close"] is False and signal["reason"] == "pending_placeable"
    box = Toolbox(state)
    assert "待安排任务剩余：0个" in box.call("apply_proposal", {})
    assert box.state is not None
    after = analyze_health(box.state).metrics["close_signal"]
    assert after["acceptable_to_close"] is (after["critical"] == 0 and after["warning"] <= 1), after

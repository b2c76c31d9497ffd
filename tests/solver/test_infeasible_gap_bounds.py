"""Infeasibility proven by the counting bound while the ordered maximum is not (issue 42):
the check says infeasible, with the gap's proven bounds instead of a figure, and the replies
an LLM reads carry those bounds (never "None")."""

from __future__ import annotations

import json

from smartflow_engine import Toolbox
from smartflow_engine.solver import check_feasibility
from smartflow_engine.solver.counting import max_placeable
from smartflow_engine.solver.problem import build_problem
from smartflow_engine.state import Request, relocate
from smartflow_engine.state.synthetic import synthetic_window


def test_a_bound_below_the_need_proves_infeasible_without_the_maximum() -> None:
    """Tests that a window whose counting bound is below what is required is called
    infeasible although the ordered model's work is too small to pin its maximum: the gap is
    left None, its bounds hold the counting bound and the witness, and the witness keeps every
    rule (the write path accepts it)."""
    state = synthetic_window(500, 13, variant="tight", upstream=True)
    counted = max_placeable(build_problem(state, subjects=False), time_limit_s=5.0, num_workers=1)
    assert counted.proven and counted.bound < sum(t.need() for t in state.pending_tasks())

    report = check_feasibility(state, time_limit_s=5.0, explain=False, work_s=0.002)

    assert report.is_feasible is False
    assert report.proven is False and report.capacity_gap is None
    assert report.feasible_slots is None
    low, high = report.feasible_slots_bounds
    assert low < high <= counted.bound  # the maximum itself is not pinned
    least, most = report.capacity_gap_bounds
    assert least == report.required_task_slots - high >= report.required_task_slots - counted.bound
    assert most == report.required_task_slots - low and least >= 1
    assert report.snapshot()["capacity_gap_bounds"] == [least, most]
    placed = state.copy_state()
    requests = [Request(p.task_id, p.day, p.slot_start) for p in report.witness]
    assert relocate(placed, requests, op="apply_proposal", status_after="suggested").ok
    assert sum(p.length for p in report.witness) == low


def test_a_proven_gap_carries_no_bounds_entry() -> None:
    """Tests that a proven gap is reported as before: a figure, bounds equal to it, and no
    ``capacity_gap_bounds`` in the feasibility object."""
    state = synthetic_window(501, 30, variant="plain", upstream=True)
    report = check_feasibility(state, time_limit_s=10.0, explain=False)
    assert report.is_feasible is False and report.proven
    assert report.capacity_gap_bounds == (report.capacity_gap, report.capacity_gap)
    assert "capacity_gap_bounds" not in report.snapshot()


def test_the_replies_give_the_bounds_of_an_unpinned_gap() -> None:
    """Tests that check_feasibility's reply and analyze_health's feasibility and negotiation
    figures give the proven bounds where only infeasibility is proven, and no ``None``."""
    state = synthetic_window(500, 30, variant="tight", upstream=True)
    tb = Toolbox(state)
    reply = tb.invoke("check_feasibility", {"time_limit_s": 1.0, "include_suggested": True})
    assert reply.text.startswith("可行性：不可行（已证明）")
    assert "缺口至少" in reply.text and "None" not in reply.text
    health = json.loads(tb.invoke("analyze_health", {}).text)
    feas = health["feasibility"]
    assert feas["is_feasible"] is False and feas["capacity_gap"] is None
    least, most = feas["capacity_gap_bounds"]
    assert 1 <= least <= most
    figures = {a["intent_code"]: a["figures"] for a in health["next_actions"]}
    assert figures["ask_reduce_scope_or_budget"]["capacity_gap_bounds"] == [least, most]
    gap_issue = next(i for i in health["issues"] if i["rule"] == "capacity_gap")
    assert gap_issue["trigger"]["actual"] == least


def test_the_gate_names_the_bounds_of_an_unpinned_gap() -> None:
    """Tests that a session's infeasible gate, refusing a write, states the gap's proven
    bounds in its figure and its reduce_scope option (no ``None``)."""
    from smartflow_engine.tools_adapter import Session

    state = synthetic_window(500, 30, variant="tight", upstream=True)
    session = Session(state, mode="first_full")
    feas = json.loads(session.call("analyze_health", {}))["feasibility"]
    least, most = feas["capacity_gap_bounds"]
    task = next(t for t in state.tasks if t.status == "pending")
    reply = session.call("place", {"task_id": task.state_id, "day": 1, "slot_start": 1})
    assert reply.startswith("放置失败：")
    assert f"缺口至少{least}、至多{most}个时段" in reply
    assert f"需削减至少{least}、至多{most}个时段" in reply and "None" not in reply

"""Tests of the disruption figure on re-optimising writes (issue 28 item 2)."""

from __future__ import annotations

import re
from pathlib import Path

import smartflow_engine
from smartflow_engine import ScheduleState
from smartflow_engine.state import Change, SlotRange
from smartflow_engine.tools_adapter.core.disruption import (
    days_text,
    disruption_line,
    figures,
    proposal_line,
)
from smartflow_engine.tools_adapter.sessions.session import Session

SAMPLE = Path(smartflow_engine.__file__).parent / "data" / "sample_window.json"


def _block(day: int, start: int, end: int) -> SlotRange:
    return SlotRange(day=day, slot_start=start, slot_end=end)


def test_figures_count_moved_and_placed_tasks_periods_and_days():
    """Tests that moved tasks (placed before and after, elsewhere), their periods, newly placed
    tasks and the days left or entered are counted from the change-log entries."""
    changes = [
        Change("move", 1, "suggested", "suggested", _block(1, 1, 2), _block(3, 5, 6), None, None),
        Change("place", 2, "pending", "suggested", None, _block(4, 1, 3), None, None),
        Change("move", 3, "suggested", "suggested", _block(2, 1, 1), _block(2, 1, 1), None, 7),
    ]
    fig = figures(changes)
    assert fig == {
        "tasks_moved": 2,
        "periods_moved": 3,
        "tasks_placed": 1,
        "days_touched": [1, 2, 3, 4],
    }
    assert disruption_line(fig, (1, 3), (0, 1)) == (
        "改动：移动已安排任务 2 个（共 3 节），新放置 1 个，涉及第1-4天；"
        "体检（严重/警告）1/3 → 0/1。"
    )


def test_days_are_written_as_ranges_and_many_runs_are_counted():
    """Tests that the days touched read as runs of consecutive days, and that beyond eight runs
    the line names the first eight and counts the rest (a 1000-day proposal once listed every
    day, thousands of characters)."""
    assert days_text([6]) == "第6天"
    assert days_text([4, 6, 7, 8, 12]) == "第4、6-8、12天"
    assert days_text(list(range(1, 1001))) == "第1-1000天"
    odd = list(range(1, 40, 2))  # 20 runs of one day
    assert days_text(odd) == "第1、3、5、7、9、11、13、15天等20段，共20天"


def test_a_proposal_line_on_a_call_out_of_time_leaves_the_key_after_out():
    """Tests that propose_placement's line, when the call's limit has no time left for applying
    the plan to a copy, still gives the exact counts (read off the requests) and says the key
    after was not computed, instead of overrunning the limit."""
    from smartflow_engine.solver import propose_placement
    from smartflow_engine.solver.budget import Deadline
    from smartflow_engine.state import Request

    state = ScheduleState.from_json(SAMPLE)
    plan = propose_placement(state, time_limit_s=2.0, seed=0).placements[:2]
    requests = [Request(p.task_id, p.day, p.slot_start) for p in plan]
    days = days_text(sorted({p.day for p in plan}))
    spent = Deadline.start(1.0, started=0.0)  # long past
    line = proposal_line(state, requests, "suggested", spent)
    assert line is not None
    head = f"若应用，改动：移动已安排任务 0 个（共 0 节），新放置 2 个，涉及{days}；"
    assert line.startswith(head) and line.endswith("应用后的数目时限内未计算。")
    roomy = proposal_line(state, requests, "suggested", Deadline.start(60.0))
    assert roomy is not None and roomy.startswith(head)
    assert "→" in roomy and "未计算" not in roomy


def test_a_proposal_write_reports_how_much_moved():
    """Tests that apply_proposal's reply ends (before the evidence line) with the disruption
    line whose counts match the call's changes, and that a preview shows the same line."""
    session = Session(ScheduleState.from_json(SAMPLE))
    args = {"time_limit_s": 2, "seed": 3, "include_suggested": True}
    seen = session.invoke("apply_proposal", {**args, "preview": True})
    out = session.invoke("apply_proposal", args)
    assert out.status == "ok"
    line = next(x for x in out.reply.splitlines() if x.startswith("改动："))
    assert line in seen.reply
    placed = sum(1 for c in out.changes if c.block_before is None)
    assert re.search(rf"新放置 {placed} 个", line), line
    assert out.reply.splitlines()[-1].startswith("证据：")


def test_a_proposal_says_what_applying_it_would_move():
    """Tests that propose_placement's reply ends with the disruption line of applying it
    (``若应用，改动：…``), equal to the line apply_proposal then writes with the same arguments
    except for the counts after, which it leaves to the proposal's health line (the same figures
    apply_proposal then reads), and that the state is unchanged by the proposal."""
    session = Session(ScheduleState.from_json(SAMPLE))
    args = {"time_limit_s": 2, "seed": 3, "include_suggested": True}
    before = session.state.to_json()
    proposed = session.invoke("propose_placement", args)
    assert proposed.status == "ok" and session.state.to_json() == before
    last = proposed.reply.splitlines()[-1]
    assert last.startswith("若应用，改动："), proposed.reply
    applied = session.invoke("apply_proposal", args)
    line = next(x for x in applied.reply.splitlines() if x.startswith("改动："))
    # the counts after are stated once, by the health line; the line refers to them and
    # apply_proposal then reads the same (issue 45 item 1)
    moved, health = ("若应用，" + line).split("；体检（严重/警告）")
    assert (
        last
        == f"{moved}；体检（严重/警告）现为 {health.split(' → ')[0]}，应用后的数目见上文体检行。"
    )
    stated = re.search(r"应用后 critical (\d+) 个、warning (\d+) 个", proposed.reply)
    assert stated is not None, proposed.reply
    assert health.split(" → ")[1] == f"{stated.group(1)}/{stated.group(2)}。"


def test_a_proposal_that_changes_nothing_has_no_disruption_line():
    """Tests that a keep_placed proposal on a window with nothing to place and nothing to repair
    has no disruption line (nothing would change)."""
    state = ScheduleState.from_json(
        {
            "window": {"total_days": 3, "slots_per_day": 12},
            "tasks": [
                {
                    "state_id": d,
                    "name": f"复习{d}",
                    "source": "task_item",
                    "category": "复习",
                    "status": "suggested",
                    "slots": [{"day": d, "slot_start": 1, "slot_end": 2}],
                }
                for d in (1, 2, 3)
            ],
        }
    )
    reply = Session(state, mode="local_adjust").call(
        "propose_placement", {"keep_placed": True, "time_limit_s": 1}
    )
    assert "改动：" not in reply, reply

"""Tests of the solver tools through Toolbox.call: replies, atomic writes, refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.solver.reoptimize import spread_measure
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter import Mode
from smartflow_engine.tools_adapter.core.spec import failure_head
from tests.helpers.solver_windows import make_state


def toolbox(state: ScheduleState, **kw: Any) -> Toolbox:
    return Toolbox(state, self_check=True, **kw)


def test_check_feasibility_feasible_reply(roomy_window: ScheduleState) -> None:
    """Tests the feasible reply: proven verdict and the exact figures."""
    reply = toolbox(roomy_window).call("check_feasibility", {})
    assert reply.startswith("可行性：可行（已证明）。")
    assert "范围内待安排任务2个，共需4个时段；最多可同时放下4个时段，缺口0个。" in reply
    assert "余量2个" in reply


def test_check_feasibility_names_the_tasks_it_counts(roomy_window: ScheduleState) -> None:
    """Tests issue 45 item 1: the figure says which tasks it counts: with include_suggested the
    placed (suggested) task is counted too and the line says 待安排与已预排 (analyze_health's
    required_task_slots counts the same set), without it only the pending ones."""
    box = toolbox(roomy_window)
    free = box.state.pending_tasks()[0]
    first_free = box.call("find_free", {"duration": free.need()})
    assert "第" in first_free
    placed = box.call("apply_proposal", {})
    assert "待安排任务剩余：0个" in placed
    pending_only = box.call("check_feasibility", {})
    both = box.call("check_feasibility", {"include_suggested": True})
    assert "范围内待安排任务0个，共需0个时段" in pending_only
    assert "范围内待安排与已预排任务2个，共需4个时段" in both
    health = json.loads(box.call("analyze_health", {}))
    assert health["feasibility"]["required_task_slots"] == 4


def test_check_feasibility_infeasible_reply(class_window_window: ScheduleState) -> None:
    """Tests the infeasible reply: reason, class bottleneck, conflict set, negotiation data."""
    reply = toolbox(class_window_window).call("check_feasibility", {"time_limit_s": 5})
    assert "不可行（已证明）" in reply and "class_window" in reply
    assert "缺口2个" in reply
    assert "任务类[10]复习（第1天，禁排第4节）" in reply
    assert (
        "无法同时放下的任务组：[1]t1、[2]t2（这一组任务本身就无法全部放下；去掉其中任意一个，"
        "组内其余任务都能放下；整个窗口仍需减少2个时段才能全部放下）。"
    ) in reply
    assert "取消禁排时段后可全部放下" in reply
    assert "删减任务需减少2个时段" in reply


def test_conflict_set_reply_separates_group_from_window(overfull_window: ScheduleState) -> None:
    """Tests that the conflict-set line says the group alone cannot all be placed, that removing
    one lets the rest of the group fit, and what the whole window still needs (periods to cut
    or days to add), never "remove one and everything fits"."""
    reply = toolbox(overfull_window).call("check_feasibility", {"time_limit_s": 5})
    assert (
        "无法同时放下的任务组：[1]t1、[2]t2、[3]t3（这一组任务本身就无法全部放下；去掉其中任意一个，"
        "组内其余任务都能放下；整个窗口仍需减少1个时段（或在末尾追加1天）才能全部放下）。"
    ) in reply
    assert "其余都能放下" not in reply


def test_conflict_set_of_one_task_reads_as_one(fragmented_window: ScheduleState) -> None:
    """Tests that a conflict set of a single task says that task alone does not fit."""
    reply = toolbox(fragmented_window).call("check_feasibility", {"time_limit_s": 5})
    assert "无法同时放下的任务组：[2]t2（这个任务本身就放不下；整个窗口仍需减少3个时段" in reply
    assert "去掉其中任意一个" not in reply


def test_check_feasibility_capped_time_limit_is_unknown() -> None:
    """Tests that the server cap on time limits applies and a time-out reads as unknown (a
    window that fits: no bound below what it requires can prove it does not)."""
    # Without the 50 ms every call may use (min_work_s), 1 ms is too short for the CP-SAT
    # proof this 400-day window needs (its greedy leaves 3 of 3,479 periods, the relaxation's
    # bound is what it requires; it fits, proven in well under a second).
    calibration = replace(DEFAULT_CALIBRATION, min_work_s=0.0)
    state = synthetic_window(0, 400, variant="tight", with_task_classes=True)
    tb = toolbox(state, max_time_limit_s=0.001, calibration=calibration)
    reply = tb.call("check_feasibility", {"time_limit_s": 30})
    assert reply.startswith("可行性：未知（0.001秒内未得出证明）。")
    assert "不可行" not in reply


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("check_feasibility", {"time_limit_s": 0}),  # not > 0
        ("check_feasibility", {"time_limit_s": "fast"}),  # not a number
        ("check_feasibility", {"include_suggested": "yes"}),  # not a bool
        ("check_feasibility", {"bogus": 1}),  # unknown argument
        ("propose_placement", {"seed": -1}),  # negative seed
        ("propose_placement", {"weights": {"mood": 1}}),  # unknown weight
        ("propose_placement", {"weights": {"late": -1}}),  # negative weight
        ("apply_proposal", {"placements": []}),  # empty list
        ("apply_proposal", {"placements": [{"task_id": 1, "day": 1}]}),  # missing slot_start
        (
            "apply_proposal",
            {"placements": [{"task_id": 1, "day": 1, "slot_start": 1}], "seed": 2},
        ),  # both ways at once
        ("spread_even", {}),  # category missing
        ("spread_even", {"category": ""}),  # empty category
        ("min_context_switch", {"day_from": 0}),  # day < 1
    ],
)
def test_bad_arguments_are_a_reply(
    tool: str, args: dict[str, Any], roomy_window: ScheduleState
) -> None:
    """Tests that bad arguments give an ``X失败：参数错误，…`` reply (X the tool's verb) and leave
    the state unchanged."""
    tb = toolbox(roomy_window, enabled_tools=[tool])
    before = roomy_window.to_json()
    reply = tb.call(tool, args)
    assert reply.startswith(f"{failure_head(tool)}：参数错误，"), reply
    assert roomy_window.to_json() == before and not tb.changes


def test_propose_does_not_write(roomy_window: ScheduleState) -> None:
    """Tests that propose_placement lists the placements and changes nothing."""
    before = roomy_window.to_json()
    reply = toolbox(roomy_window).call("propose_placement", {"time_limit_s": 1})
    assert reply.startswith("粗排方案（")
    assert "放置2个任务，共4个时段；未放置0个。" in reply
    assert "方案未写入日程" in reply
    assert roomy_window.to_json() == before


def test_propose_claims_no_soft_bound() -> None:
    """Tests (issue 26 item 2) that a proposal whose soft terms are above 0 claims no bound on
    them: status ``feasible``, no "proven lower bound" or "at most x% above optimum" in the
    reply, the soft level stated as not proven optimal; and that a total of 0 (the least there
    is) is stated optimal."""
    state = synthetic_window(0, 30, variant="plain", pending=60)
    proposal = propose_placement(state, time_limit_s=1.0, seed=0)
    assert proposal.objective["weighted_total"] > 0
    assert proposal.bound is None and proposal.status == "feasible"
    reply = toolbox(state).call("propose_placement", {"time_limit_s": 1.0, "seed": 0})
    assert "证明下界" not in reply and "距最优至多" not in reply
    assert "软目标未证明最优" in reply
    # one 1-period task on an empty day, only the isolated-free term weighted: 0 is reachable
    tiny = make_state(1, 3, [{"duration": 1}])
    zero = {"load_imbalance": 0.0, "same_category": 0.0, "context_switch": 0.0, "late": 0.0}
    zero |= {"time_of_day": 0.0, "isolated_free": 1.0}
    best = propose_placement(tiny, time_limit_s=1.0, weights=zero)
    assert best.objective["weighted_total"] == 0 and best.status == "optimal"


def test_apply_proposal_compute_mode_matches_propose() -> None:
    """Tests that apply_proposal without placements applies exactly what propose_placement
    proposes for the same arguments, atomically, as suggested tasks, logging each change."""
    state = synthetic_window(6, 13, pending=15)
    # A 10 s wall clock with a search of a hundredth of it (the exact models of this small
    # window end on their proofs): both calls end on their work, not on a loaded machine's
    # clock, and get the same budgets.
    quick = replace(DEFAULT_CALIBRATION, one_search_share=0.01)
    proposal = propose_placement(state, time_limit_s=10.0, seed=2, calibration=quick)
    assert not proposal.wall_limited
    tb = toolbox(state, calibration=quick)
    reply = tb.call("apply_proposal", {"time_limit_s": 10.0, "seed": 2})
    assert reply.startswith(f"已应用粗排方案，{len(proposal.placements)}个任务变为已预排：")
    assert len(tb.changes) == len(proposal.placements)
    for p in proposal.placements:
        task = state.task(p.task_id)
        assert task is not None and task.status == "suggested"
        assert (task.slots[0].day, task.slots[0].slot_start) == (p.day, p.slot_start)
        assert task.embed_host == p.embed_host
    assert f"待安排任务剩余：{len(proposal.unplaced)}个。" in reply


def test_apply_explicit_placements(roomy_window: ScheduleState) -> None:
    """Tests that explicit placements are applied as given, with the day's occupancy."""
    tb = toolbox(roomy_window)
    reply = tb.call(
        "apply_proposal",
        {
            "placements": [
                {"task_id": 1, "day": 1, "slot_start": 1},
                {"task_id": 2, "day": 1, "slot_start": 3},
            ]
        },
    )
    assert reply.splitlines()[0] == "已应用粗排方案，2个任务变为已预排："
    assert "第1天当前占用：[1]t1(1-2节) [2]t2(3-4节)，占用4/6。" in reply
    assert "待安排任务剩余：0个。" in reply


@pytest.mark.parametrize(
    ("placements", "expected"),
    [
        (
            [{"task_id": 1, "day": 1, "slot_start": 1}, {"task_id": 2, "day": 1, "slot_start": 2}],
            "冲突",
        ),  # overlap within the batch
        ([{"task_id": 9, "day": 1, "slot_start": 1}], "不存在"),  # unknown task
        ([{"task_id": 1, "day": 2, "slot_start": 1}], "超出规划窗口"),  # day 2 of 1
        ([{"task_id": 1, "day": 1, "slot_start": 6}], "超出每天6节"),  # runs past period 6
    ],
)
def test_apply_refusal_changes_nothing(
    placements: list[dict[str, int]], expected: str, roomy_window: ScheduleState
) -> None:
    """Tests that a refused application rolls everything back and says why."""
    tb = toolbox(roomy_window)
    before = roomy_window.to_json()
    reply = tb.call("apply_proposal", {"placements": placements})
    assert reply.startswith("应用方案失败，全部回滚，无任何变更。")
    assert expected in reply
    assert roomy_window.to_json() == before and not tb.changes


def test_apply_refuses_existing_tasks() -> None:
    """Tests that an existing (confirmed) task is not re-placed by apply_proposal."""
    state = make_state(
        1, 4, [{"status": "existing", "slots": [{"day": 1, "slot_start": 1, "slot_end": 1}]}]
    )
    reply = toolbox(state).call(
        "apply_proposal", {"placements": [{"task_id": 1, "day": 1, "slot_start": 3}]}
    )
    assert "已安排任务" in reply and reply.startswith("应用方案失败")


def _suggested_cluster() -> ScheduleState:
    """Six suggested 复习 tasks crammed into days 1-2 of a 12-day window."""
    tasks: list[dict[str, Any]] = []
    for i in range(6):
        day, start = 1 + i // 3, 1 + 2 * (i % 3)
        tasks.append(
            {
                "status": "suggested",
                "category": "复习",
                "category_id": 10,
                "slots": [{"day": day, "slot_start": start, "slot_end": start + 1}],
            }
        )
    return make_state(12, 6, tasks)


def test_spread_even_spreads_and_is_atomic() -> None:
    """Tests that spread_even moves the crammed tasks so that the even-spread deviation drops
    to zero, keeps every task placed and logs one change per moved task."""
    state = _suggested_cluster()
    days_before = [t.slots[0].day for t in state.tasks]
    tb = toolbox(state)
    reply = tb.call("spread_even", {"category": "复习", "time_limit_s": 5})
    assert reply.startswith("spread_even 完成：类别「复习」的6个任务中移动了")
    days_after = sorted(t.slots[0].day for t in state.tasks)
    assert spread_measure(days_after, 1, 12) == 0 < spread_measure(days_before, 1, 12)
    assert all(t.status == "suggested" for t in state.tasks)
    assert len(tb.changes) == sum(1 for line in reply.splitlines() if line.startswith("  ["))


@pytest.mark.parametrize(
    ("category", "expected"),
    [
        ("物理", "没有类别为「物理」的任务"),  # no such category
        ("课程", "没有可移动的已落位任务"),  # only locked courses
    ],
)
def test_spread_even_nothing_to_do(category: str, expected: str) -> None:
    """Tests the replies when spread_even has nothing to move; the state is unchanged."""
    state = make_state(
        2,
        4,
        [
            {
                "source": "event",
                "category": "课程",
                "status": "existing",
                "locked": True,
                "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
            }
        ],
    )
    before = state.to_json()
    assert expected in toolbox(state).call("spread_even", {"category": category})
    assert state.to_json() == before


def test_min_context_switch_regroups_within_days() -> None:
    """Tests that min_context_switch, hidden from every mode, cuts the switches of an
    alternating day by reordering it, with every task staying on its day."""
    subjects = [10, 11, 10, 11]
    tasks: list[dict[str, Any]] = [
        {
            "status": "suggested",
            "category_id": c,
            "category": f"科目{c}",
            "slots": [{"day": 1, "slot_start": i + 1, "slot_end": i + 1}],
        }
        for i, c in enumerate(subjects)
    ]
    state = make_state(2, 4, tasks)
    tb = toolbox(state, enabled_tools=["min_context_switch"])  # hidden unless enabled
    for mode in Mode:
        assert "min_context_switch" not in toolbox(state).tool_names(mode)
    reply = tb.call("min_context_switch", {"time_limit_s": 5})
    assert "科目切换3→1次" in reply
    assert all(t.slots[0].day == 1 for t in state.tasks)


def test_tool_replies_are_deterministic(roomy_window: ScheduleState) -> None:
    """Tests that the same read call gives the same text twice (no wall-clock figures)."""
    tb = toolbox(roomy_window)
    for tool in ("check_feasibility", "propose_placement"):
        assert tb.call(tool, {}) == tb.call(tool, {})


@pytest.mark.parametrize("tool", ["propose_placement", "apply_proposal"])
def test_proposal_tools_count_the_whole_call(
    tool: str, roomy_window: ScheduleState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests that a proposal tool gives the solver the wall time its call has left (less the
    reply's reserve) but the deterministic work of the asked limit, so the limit holds for the
    whole call and a seed gives the same proposal in both tools and in a direct call."""
    import smartflow_engine.tools_adapter.tools.solver as solver_tools

    seen: dict[str, Any] = {}

    def spy(state: ScheduleState, **kw: Any) -> Any:
        seen.update(kw)
        return propose_placement(state, **kw)

    monkeypatch.setattr(solver_tools, "propose_placement", spy)
    # applying reserves time per pending task (no session: no evidence to reserve for)
    per_task = solver_tools.REPLY_RESERVE_PER_TASK_S if tool == "apply_proposal" else 0.0
    reserve = solver_tools.REPLY_RESERVE_S + per_task * len(roomy_window.pending_tasks())
    toolbox(roomy_window).call(tool, {"time_limit_s": 1.5, "seed": 4})
    assert seen["work_limit_s"] == pytest.approx(DEFAULT_CALIBRATION.work_share * 1.5)
    assert seen["calibration"] is DEFAULT_CALIBRATION
    assert 0 < seen["time_limit_s"] <= 1.5 - reserve
    assert seen["seed"] == 4


@pytest.mark.parametrize("tool", ["propose_placement", "apply_proposal"])
@pytest.mark.parametrize(("days", "limit"), [(13, 2.0), (30, 2.0), (66, 3.0), (120, 4.5)])
def test_a_proposal_without_a_limit_gets_one_by_the_windows_days(
    tool: str, days: int, limit: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests the proposal tools' default limit (issue 26, docs/decisions.md): 2 s up to 30 days,
    1 s more per 36 days beyond, at most 4.5 s; the deterministic work follows it, and an
    asked limit is still the limit."""
    import smartflow_engine.tools_adapter.tools.solver as solver_tools

    assert solver_tools.proposal_limit(days) == pytest.approx(limit)
    seen: list[float] = []

    def spy(state: ScheduleState, **kw: Any) -> Any:
        seen.append(kw["work_limit_s"])
        return propose_placement(state, **{**kw, "time_limit_s": 0.3, "work_limit_s": 0.05})

    monkeypatch.setattr(solver_tools, "propose_placement", spy)
    state = synthetic_window(3, days)
    Toolbox(state.copy_state(), max_time_limit_s=10.0).call(tool, {})
    Toolbox(state.copy_state(), max_time_limit_s=10.0).call(tool, {"time_limit_s": 1.0})
    assert seen == [
        pytest.approx(DEFAULT_CALIBRATION.work_share * limit),
        pytest.approx(DEFAULT_CALIBRATION.work_share * 1.0),
    ]


def test_apply_proposal_with_allow_late_applies_the_late_block() -> None:
    """Tests that apply_proposal {allow_late: true} writes the block the proposal puts after its
    class window (the write path honours the caller's late permission), while a plain move of a
    task out of its class window is still refused; without allow_late the task stays pending."""
    course = {
        "source": "event",
        "category": "课程",
        "status": "existing",
        "locked": True,
        "slots": [{"day": 1, "slot_start": 1, "slot_end": 3}],
    }
    tasks = [course, {"duration": 1, "category_id": 4}, {"duration": 1, "category_id": 4}]
    classes = [{"id": 4, "name": "作业", "start_day": 1, "end_day": 1}]
    state = make_state(3, 4, tasks, classes)
    strict = toolbox(state.copy_state())
    strict.call("apply_proposal", {})
    assert sum(t.status == "pending" for t in strict.state.tasks) == 1
    tb = toolbox(state)
    reply = tb.call("apply_proposal", {"allow_late": True})
    assert reply.startswith("已应用粗排方案，2个任务变为已预排"), reply
    days = sorted(t.slots[0].day for t in state.tasks if t.category_id == 4)
    assert days == [1, 2]
    early = next(t for t in state.tasks if t.category_id == 4 and t.slots[0].day == 1)
    refused = tb.call("move", {"task_id": early.state_id, "new_day": 3, "new_slot_start": 4})
    assert "不在任务类「作业」的时间窗" in refused
    assert early.slots[0].day == 1


def test_propose_reply_states_the_proposals_own_floor() -> None:
    """Tests that the proposal reply states the proven floor of its own scope and whether the
    proposal meets it, consistently with its own counts (and, for a search the wall clock did
    not cut, with the proposal's figures)."""
    import re

    for seed, variant in ((1, "plain"), (2, "fragmented")):
        state = synthetic_window(seed, 13, variant=variant, with_task_classes=True)
        proposal = propose_placement(state, time_limit_s=1.0, seed=0)
        reply = toolbox(state).call("propose_placement", {"time_limit_s": 1.0, "seed": 0})
        counts = re.search(r"应用后 critical (\d+) 个、warning (\d+) 个", reply)
        floor = re.search(
            r"已证明[^，；]+的任何方案至少有 critical (\d+) 个、critical 与 warning "
            r"合计 (\d+) 个，(?:critical 为 \d+ 个的方案 warning 至少 (\d+) 个，)?"
            r"本方案(已达|尚高于)此下限",
            reply,
        )
        assert counts is not None, reply
        # only a search the wall clock cut may go without its floor (never claimed unfinished)
        assert floor is not None or "搜索被时限截断" in reply, reply
        if floor is None:
            continue
        c, w = int(counts.group(1)), int(counts.group(2))
        fc, fsum = int(floor.group(1)), int(floor.group(2))
        lw = None if floor.group(3) is None else int(floor.group(3))
        assert c >= fc and c + w >= fsum
        assert c > fc or lw is None or w >= lw  # the lexicographic floor holds
        met = c <= fc and (c + w <= fsum or (lw is not None and w <= lw))
        assert (floor.group(4) == "已达") is met
        if not proposal.wall_limited and "搜索被时限截断" not in reply:
            assert proposal.floor == (fc, fsum - fc)
            assert proposal.floor_least_warning == lw

"""Tests of the agent loop in a session: rounds and close rules, restore_best, the infeasible gate
and resolve_negotiation, evidence lines, the round log in snapshots, the class-window rule of the
write tools, the two query tools and mode visibility."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.spec import Mode
from smartflow_engine.tools_adapter.sessions.loop_state import LoopState
from tests.helpers.windows import load_window


def make_state(
    num_days: int, tasks: list[dict[str, Any]], classes: list[dict[str, Any]] | None = None
) -> ScheduleState:
    out = []
    for i, t in enumerate(tasks, start=1):
        row = {
            "state_id": i,
            "name": f"任务{i}",
            "source": "task_item",
            "category": "复习",
            "status": "suggested",
            **t,
        }
        out.append(row)
    data: dict[str, Any] = {"window": {"total_days": num_days, "slots_per_day": 12}, "tasks": out}
    if classes:
        data["task_classes"] = classes
    return ScheduleState.from_json(data)


def block(day: int, start: int, end: int) -> list[dict[str, int]]:
    return [{"day": day, "slot_start": start, "slot_end": end}]


def overloaded() -> ScheduleState:
    """Day 1 is full of movable study work, days 2-4 are empty: critical load on day 1."""
    return make_state(
        4, [{"slots": block(1, 1, 4)}, {"slots": block(1, 5, 8)}, {"slots": block(1, 9, 12)}]
    )


def infeasible() -> ScheduleState:
    """One day, a locked course on every period and a pending task: proven infeasible."""
    return make_state(
        1,
        [
            {
                "source": "event",
                "locked": True,
                "category": "课程",
                "status": "existing",
                "slots": block(1, 1, 12),
            },
            {"status": "pending", "duration": 2},
        ],
    )


def health(session: Session) -> dict[str, Any]:
    env = json.loads(session.call("analyze_health", {}))
    assert env["success"], env
    return env


def signal(session: Session) -> dict[str, Any]:
    return health(session)["metrics"]["close_signal"]


# ---------------------------------------------------------------------------------- rounds
def test_each_health_call_is_a_round_and_three_without_progress_close():
    """Tests that every analyze_health is a round, a round without a strictly better (critical,
    warning, impact) counts towards no_progress, and the third such round closes."""
    s = Session(overloaded())
    first = signal(s)
    assert first["round"] == 1 and first["rounds_without_progress"] == 0
    assert first["critical"] + first["warning"] > 0 and not first["should_close"]
    for n in (1, 2):
        sig = signal(s)
        assert (sig["round"], sig["rounds_without_progress"]) == (n + 1, n)
        assert sig["should_close"] is False and sig["close_reason"] is None
    third = signal(s)
    assert third["rounds_without_progress"] == 3
    assert third["should_close"] is True and third["close_reason"] == "no_progress"


def test_progress_resets_the_count():
    """Tests that a write that improves the health makes the next round a progress round."""
    s = Session(overloaded())
    signal(s)
    signal(s)
    assert s.call("move", {"task_id": 3, "new_day": 3, "new_slot_start": 1}).startswith("已将")
    sig = signal(s)
    assert sig["rounds_without_progress"] == 0 and sig["round"] == 3


def test_rules_met_closes():
    """Tests that critical=0 && warning<=1 gives should_close with rules_met."""
    s = Session(
        make_state(
            4,
            [
                {"slots": block(1, 1, 2)},
                {"slots": block(2, 1, 2)},
                {"slots": block(3, 1, 2)},
                {"slots": block(4, 1, 2)},
            ],
        )
    )
    sig = signal(s)
    assert sig["acceptable_to_close"] is True
    assert sig["should_close"] is True and sig["close_reason"] == "rules_met"


def test_round_cap_closes_at_round_60():
    """Tests that the 60th round closes with round_cap (restored from a snapshot at round 59)."""
    s = Session(overloaded())
    signal(s)
    snap = s.snapshot()
    snap["loop"]["round"] = snap["loop"]["calls"] = 59
    restored = Session.restore(snap)
    sig = signal(restored)
    assert sig["round"] == 60 and sig["rounds_without_progress"] == 1
    assert sig["should_close"] is True and sig["close_reason"] == "round_cap"


@pytest.mark.parametrize(
    "given, reason",
    [
        ({"acceptable_to_close": False, "best_achievable": True}, "best_achievable"),
        ({"acceptable_to_close": False, "reason": "best_achievable"}, "best_achievable"),
        ({"acceptable_to_close": False, "best_achievable": {"critical": 1}}, None),  # not a verdict
        ({"acceptable_to_close": True, "best_achievable": True}, "rules_met"),
    ],
)
def test_best_achievable_from_the_analyzers_closes(given, reason):
    """Tests that the analyzers' best_achievable verdict (when present) closes the round."""
    loop = LoopState(round=2)
    assert loop._close_reason(given) == reason


# ---------------------------------------------------------------------------------- restore_best
def test_restore_best_returns_to_the_best_round_and_is_logged():
    """Tests that restore_best puts back the best round's places, logs one change-log entry per
    task it moves (op restore_best), ends with an evidence line, and can itself be undone."""
    s = Session(overloaded(), self_check=True)
    signal(s)
    s.call("move", {"task_id": 3, "new_day": 3, "new_slot_start": 1})
    best_sig = signal(s)
    best = s.state.to_dict()
    s.call("move", {"task_id": 3, "new_day": 1, "new_slot_start": 9})  # back onto the full day
    worse = signal(s)
    assert (worse["critical"], worse["warning"]) > (best_sig["critical"], best_sig["warning"])
    before = len(s.changes)
    result = s.invoke("restore_best", {})
    assert result.reply.startswith("已恢复到第2轮的最佳状态") and "证据：解决" in result.reply
    assert s.state.to_dict() == best
    assert [c.op for c in s.changes[before:]] == ["restore_best"]
    assert s.call("move", {"task_id": 3, "new_day": 1, "new_slot_start": 9}).startswith("已将")
    assert s.invoke("restore_best", {}).changes  # and back again


def test_restore_best_before_any_round_changes_nothing():
    """Tests that restore_best without a round refuses in words, state and log unchanged."""
    s = Session(overloaded())
    before = s.state.to_json()
    reply = s.call("restore_best", {})
    assert "没有可恢复的最佳状态" in reply and s.state.to_json() == before and s.changes == []


# ---------------------------------------------------------------------------------- gate
GATED_CALLS = [
    ("place", {"task_id": 2, "day": 1, "slot_start": 1}),
    ("move", {"task_id": 1, "new_day": 1, "new_slot_start": 1}),
    ("swap", {"task_a": 1, "task_b": 2}),
    ("batch_move", {"moves": [{"task_id": 1, "new_day": 1, "new_slot_start": 1}]}),
    ("apply_proposal", {"time_limit_s": 0.5}),
]


@pytest.mark.parametrize("tool, args", GATED_CALLS)
def test_infeasible_round_gates_the_placing_writes(tool, args):
    """Tests that after an infeasible round the placing writes are refused with the four options,
    the state and the change log unchanged."""
    s = Session(infeasible())
    env = health(s)
    assert env["feasibility"]["is_feasible"] is False
    before = s.state.to_json()
    result = s.invoke(tool, args)
    assert result.status == "error" and result.error_code == "negotiation_required"
    for choice in ("expand_window", "relax_constraints", "reduce_scope", "accept_risk"):
        assert choice in result.reply
    assert s.state.to_json() == before and s.changes == []
    assert env["metrics"]["close_signal"]["should_close"] is False


def test_accept_risk_opens_the_gate_and_closes_with_risk_accepted():
    """Tests that accept_risk lifts the gate, and the next health closes with risk_accepted and
    no longer repeats the negotiation actions."""
    s = Session(infeasible())
    health(s)
    missing = s.call("resolve_negotiation", {"choice": "reduce_scope"})  # args missing
    assert missing.startswith("记录协商失败：choice=reduce_scope 需要参数 task_ids")
    reply = s.call("resolve_negotiation", {"choice": "accept_risk"})
    assert reply.startswith("已记录用户选择：接受风险收口")
    env = health(s)
    sig = env["metrics"]["close_signal"]
    assert sig["should_close"] is True and sig["close_reason"] == "risk_accepted"
    assert not any(a["intent_code"].startswith(("ask_", "accept_")) for a in env["next_actions"])
    closed = s.invoke("move", {"task_id": 1, "new_day": 1, "new_slot_start": 1})
    assert closed.error_code == "request_closed"  # the request is closed (issue 27)
    s.begin_request()  # the user asks again: the accepted risk still lifts the gate
    after = s.invoke("move", {"task_id": 1, "new_day": 1, "new_slot_start": 1})  # a locked course
    assert after.error_code != "negotiation_required" and "不可移动" in after.reply


def test_expand_window_reruns_the_gate():
    """Tests that expand_window adds empty days after the window and re-runs feasibility, which
    lifts the gate when the new days suffice."""
    s = Session(infeasible())
    health(s)
    reply = s.call("resolve_negotiation", {"choice": "expand_window", "extra_days": 1})
    assert "新增第2-2天" in reply and "可行" in reply and "仍不可行" not in reply
    assert s.state.num_days == 2
    assert s.call("place", {"task_id": 2, "day": 2, "slot_start": 1}).startswith("已将")


def test_reduce_scope_takes_tasks_out_and_reruns_the_gate():
    """Tests that reduce_scope removes the named pending tasks from this round's scope (kept in
    the loop), and the gate lifts once the rest fits."""
    s = Session(infeasible())
    health(s)
    reply = s.call("resolve_negotiation", {"choice": "reduce_scope", "task_ids": [2]})
    assert "移出1个待安排任务" in reply and s.state.task(2) is None
    assert s.toolbox.ctx.loop.gate_open is False
    assert s.toolbox.ctx.loop.set_aside[0]["state_id"] == 2


def test_relax_constraints_lifts_a_class_window():
    """Tests that relax_constraints lifts a named class window and the gate with it."""
    state = make_state(
        3,
        [
            {"status": "pending", "duration": 2, "category_id": 7},
            {
                "source": "event",
                "locked": True,
                "status": "existing",
                "category": "课程",
                "slots": block(1, 1, 12),
            },
        ],
        classes=[{"id": 7, "name": "复习", "start_day": 1, "end_day": 1}],
    )
    s = Session(state)
    assert health(s)["feasibility"]["is_feasible"] is False
    still = s.call(
        "resolve_negotiation", {"choice": "relax_constraints", "lift_banned": [{"class_id": 7}]}
    )
    assert "仍不可行" in still
    reply = s.call(
        "resolve_negotiation", {"choice": "relax_constraints", "lift_class_windows": [7]}
    )
    assert "已解除门禁" in reply and s.state.task_classes[0].end_day is None


def test_resolve_negotiation_without_an_infeasible_round_is_refused():
    """Tests that recording a choice when no round reported infeasibility changes nothing."""
    s = Session(overloaded())
    health(s)
    before = s.state.to_json()
    assert "无需协商" in s.call("resolve_negotiation", {"choice": "accept_risk"})
    assert s.state.to_json() == before


# ---------------------------------------------------------------------------------- evidence
def test_write_with_action_id_reports_its_success_criteria():
    """Tests that a write naming an action ends with one evidence line: issues resolved, made
    worse, created, and whether the action's success_criteria hold (checked on a fresh health)."""
    s = Session(overloaded())
    env = health(s)
    act = env["next_actions"][0]
    slots = json.loads(
        s.call("query_available_slots", {"task_id": 3, "action_id": act["action_id"]})
    )
    best = slots["metrics"]["slots"][0]
    reply = s.call(
        "move",
        {
            "task_id": 3,
            "new_day": best["day"],
            "new_slot_start": best["slot_start"],
            "action_id": act["action_id"],
        },
    )
    last = reply.splitlines()[-1]
    assert last.startswith("证据：解决") and f"行动 {act['action_id']} 的成功判据" in last
    after = health(s)
    issues = {i["issue_id"] for i in after["issues"] if i["severity"] != "info"}
    met = all(i not in issues for i in act["issue_ids"]) and (
        after["metrics"]["close_signal"]["critical"] <= env["metrics"]["close_signal"]["critical"]
    )
    assert ("已满足" in last) is met


def test_write_without_action_id_still_lists_resolved_and_created():
    """Tests that a write without action_id gets the evidence line without a criteria clause,
    and a refused write gets none."""
    s = Session(overloaded())
    health(s)
    reply = s.call("move", {"task_id": 3, "new_day": 2, "new_slot_start": 1})
    assert reply.splitlines()[-1].startswith("证据：解决") and "成功判据" not in reply
    refused = s.call("move", {"task_id": 3, "new_day": 1, "new_slot_start": 1})  # conflict
    assert refused.startswith("移动失败") and "证据" not in refused


def test_unknown_action_id_is_refused_before_acting():
    """Tests that an action_id not from the last health is an argument error, state unchanged."""
    s = Session(overloaded())
    health(s)
    before = s.state.to_json()
    result = s.invoke(
        "move", {"task_id": 3, "new_day": 2, "new_slot_start": 1, "action_id": "na_nothing"}
    )
    assert result.status == "error" and "na_nothing" in result.reply
    assert s.state.to_json() == before


# ---------------------------------------------------------------------------------- round log
def test_round_log_survives_a_snapshot():
    """Tests that the round log (counts, the action worked on, writes with evidence), the best
    state and the gate are part of the snapshot and come back identical."""
    s = Session(overloaded())
    env = health(s)
    act = env["next_actions"][0]["action_id"]
    s.call("move", {"task_id": 3, "new_day": 3, "new_slot_start": 1, "action_id": act})
    health(s)
    log = json.loads(s.call("get_round_log", {}))
    rounds = log["metrics"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert rounds[0]["worked_on"]["action_id"] == act
    assert rounds[0]["writes"][0]["tool"] == "move" and "resolved" in rounds[0]["writes"][0]
    restored = Session.restore(json.loads(json.dumps(s.snapshot())))
    assert json.loads(restored.call("get_round_log", {})) == log
    assert restored.toolbox.ctx.loop.best_state == s.toolbox.ctx.loop.best_state


def test_round_log_and_snapshot_stay_bounded_over_800_write_rounds():
    """Tests issue 24 item 8: after 800 write rounds (analyze_health, then a move) the session
    keeps the last ROUND_LOG_KEEP rounds whole and one summary of the rest (round count, first
    and last round numbers, writes, progress rounds, best key); the snapshot apart from the
    uncommitted change log stays below 64 KB (before: about 400 bytes more per round, 320 KB
    of round log); get_round_log answers one page below 16 KB, and its pages, followed by
    next_offset, give every kept round once, in order; restore_best still has the best state,
    and the log survives a snapshot."""
    s = Session(overloaded())
    for i in range(800):
        s.begin_request("first_full")  # a request per round: a close holds within one (issue 27)
        health(s)
        moved = s.invoke("move", {"task_id": 1, "new_day": 2 + i % 2, "new_slot_start": 1})
        assert moved.status == "ok", moved.reply
    loop = s.toolbox.ctx.loop
    assert [r["round"] for r in loop.rounds] == list(range(751, 801))
    assert loop.summary == {
        "rounds": 750,
        "first_round": 1,
        "last_round": 750,
        "writes": 750,
        "progress_rounds": loop.summary["progress_rounds"],
        # each request has its own best state (issue 27): the folded rounds' best is theirs
        "best_round": loop.summary["best_round"],
        "best_key": loop.summary["best_key"],
    }
    assert 1 <= loop.summary["best_round"] <= 750 and len(loop.summary["best_key"]) == 3
    assert 1 <= loop.summary["progress_rounds"] <= 750
    snap = s.snapshot()
    assert len(snap["changes"]) == 800  # the uncommitted writes: data, kept whole until commit
    rest = {k: v for k, v in snap.items() if k != "changes"}
    assert len(json.dumps(rest, ensure_ascii=False)) < 64_000

    reply = s.call("get_round_log", {})
    assert len(reply) < 16_000
    first = json.loads(reply)["metrics"]
    assert [r["round"] for r in first["rounds"]] == list(range(791, 801))
    assert first["earlier_rounds"] == loop.summary
    assert first["page"] == {
        "offset": 0,
        "limit": 10,
        "returned": 10,
        "rounds_kept": 50,
        "rounds_total": 800,
        "next_offset": 10,
    }
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        page = json.loads(s.call("get_round_log", {"offset": offset, "limit": 15}))["metrics"]
        seen[:0] = [r["round"] for r in page["rounds"]]
        offset = page["page"]["next_offset"]
    assert seen == list(range(751, 801))

    restored = Session.restore(json.loads(json.dumps(snap)))
    assert json.loads(restored.call("get_round_log", {})) == json.loads(reply)
    assert restored.invoke("restore_best", {}).status == "ok"


def test_an_unbounded_round_log_is_folded_on_restore():
    """Tests that a snapshot written before the round log was bounded (120 rounds, one round
    with 30 writes) comes back with the last rounds whole, the rest summarised, and the
    round's last writes whole with the earlier ones counted."""
    rounds = [
        {
            "round": n,
            "critical": 1,
            "warning": n % 3,
            "total_impact": 1.0,
            "progress": n == 5,
            "writes": [{"tool": "move", "changes": 1}] * (30 if n == 120 else 1),
        }
        for n in range(1, 121)
    ]
    loop = LoopState.from_dict({"round": 120, "rounds": rounds})
    assert [r["round"] for r in loop.rounds] == list(range(71, 121))
    assert loop.summary == {
        "rounds": 70,
        "first_round": 1,
        "last_round": 70,
        "writes": 70,
        "progress_rounds": 1,
        "best_round": 3,
        "best_key": [1, 0, 1.0],
    }
    assert len(loop.rounds[-1]["writes"]) == 20 and loop.rounds[-1]["writes_omitted"] == 10


def test_a_round_log_page_stays_within_its_size():
    """Tests that get_round_log gives fewer rounds than ``limit`` rather than a page beyond
    32,000 characters (rounds of a big window name many issues), at least one round a page,
    and that following next_offset still gives every kept round once, in order."""
    s = Session(overloaded())
    ids = [f"issue_load_day_{n}_overload" for n in range(150)]
    rounds = [{"round": n, "issue_ids": ids, "writes": []} for n in range(1, 41)]
    s.toolbox.ctx.loop = LoopState.from_dict({"round": 40, "rounds": rounds})
    seen: list[int] = []
    offset: int | None = 0
    while offset is not None:
        reply = s.call("get_round_log", {"offset": offset, "limit": 50})
        assert len(reply) < 40_000
        page = json.loads(reply)["metrics"]
        assert 1 <= page["page"]["returned"] < 40
        seen[:0] = [r["round"] for r in page["rounds"]]
        offset = page["page"]["next_offset"]
    assert seen == list(range(1, 41))


def test_old_snapshot_without_loop_restores():
    """Tests that a snapshot written before the loop existed still restores (fresh loop)."""
    snap = Session(overloaded()).snapshot()
    del snap["loop"]
    restored = Session.restore(snap)
    assert json.loads(restored.call("get_round_log", {}))["metrics"]["round"] == 0


# ---------------------------------------------------------------------------------- class rules
def classed() -> ScheduleState:
    return make_state(
        30,
        [
            {"status": "pending", "duration": 2, "category_id": 7},
            {"slots": block(10, 1, 2), "category_id": 7},
            {"slots": block(12, 1, 2), "category_id": 7},
        ],
        classes=[
            {"id": 7, "name": "复习", "start_day": 7, "end_day": 29, "excluded_periods": [11, 12]}
        ],
    )


@pytest.mark.parametrize(
    "tool, args, expected",
    [
        (
            "place",
            {"task_id": 1, "day": 1, "slot_start": 1},
            "放置失败：第1天不在任务类「复习」的时间窗（第7-29天）内。",
        ),
        (
            "move",
            {"task_id": 2, "new_day": 30, "new_slot_start": 1},
            "移动失败：第30天不在任务类「复习」的时间窗（第7-29天）内。",
        ),
        (
            "move",
            {"task_id": 2, "new_day": 9, "new_slot_start": 10},
            "移动失败：第9天第10-11节含任务类「复习」的禁排时段（第11节）。",
        ),
        (
            "batch_move",
            {
                "moves": [
                    {"task_id": 2, "new_day": 8, "new_slot_start": 1},
                    {"task_id": 3, "new_day": 2, "new_slot_start": 1},
                ]
            },
            "批量移动失败，全部回滚，无任何变更。\n原因：第2天不在任务类「复习」的时间窗（第7-29天）内。",
        ),
    ],
)
def test_class_window_and_banned_periods_are_write_rules(tool, args, expected):
    """Tests that writes outside a task's class window or on its banned periods are refused in
    the spec's style, state unchanged."""
    state = classed()
    tb = Toolbox(state, self_check=True)
    before = state.to_json()
    assert tb.call(tool, args) == expected
    assert state.to_json() == before


def test_swap_across_a_class_window_is_refused():
    """Tests that a swap putting a task outside its class window is refused."""
    state = make_state(
        30,
        [
            {"slots": block(10, 1, 2), "category_id": 7},
            {"slots": block(2, 1, 2), "category": "作业"},
        ],
        classes=[{"id": 7, "name": "复习", "start_day": 7, "end_day": 29}],
    )
    assert Toolbox(state).call("swap", {"task_a": 1, "task_b": 2}) == (
        "交换失败：第2天不在任务类「复习」的时间窗（第7-29天）内。"
    )


# ---------------------------------------------------------------------------------- query tools
def test_available_slots_are_legal_and_measured():
    """Tests that every destination query_available_slots lists is accepted by move and has the
    effect it claims on the critical/warning issues."""
    state = classed()
    s = Session(state)
    env = json.loads(s.call("query_available_slots", {"task_id": 2, "limit": 50}))
    slots = env["metrics"]["slots"]
    assert env["success"] and slots
    assert all(7 <= d["day"] <= 29 and d["slot_end"] <= 10 for d in slots)
    for d in slots[:5]:
        probe = Session(ScheduleState.from_json(state.to_dict()))
        before = {i["issue_id"] for i in health(probe)["issues"] if i["severity"] != "info"}
        probe.begin_request()  # the health check may close the request (issue 27)
        assert probe.call(
            "move", {"task_id": 2, "new_day": d["day"], "new_slot_start": d["slot_start"]}
        ).startswith("已将")
        after = {i["issue_id"] for i in health(probe)["issues"] if i["severity"] != "info"}
        assert sorted(before - after) == sorted(d["resolves"])
        assert sorted(after - before) == sorted(d["creates"])


def test_health_actions_point_to_the_query_tools_and_are_fixable():
    """Tests that health's actions read through the two query tools, test fields that health
    returns, and carry fixable; a fixable action's first target has a clean destination."""
    s = Session(overloaded())
    env = health(s)
    assert env["next_actions"]
    for act in env["next_actions"]:
        assert [r["tool"] for r in act["required_reads"]] == [
            "query_target_tasks",
            "query_available_slots",
        ]
        for cond in act["success_criteria"]["conditions"]:
            assert cond["metric"].split(".")[0].removesuffix("[]") in env
        assert "fixable" in act
        if act["fixable"] is True:
            tasks = json.loads(s.call("query_target_tasks", {"action_id": act["action_id"]}))
            first = tasks["metrics"]["tasks"][0]
            assert first["best_destination"] is not None
            assert first["best_destination"]["critical_delta"] <= 0


def test_target_tasks_follow_the_filter():
    """Tests that query_target_tasks only lists movable tasks passing the filter."""
    s = Session(classed())
    env = json.loads(s.call("query_target_tasks", {"target_filter": {"status": ["pending"]}}))
    assert [t["task_id"] for t in env["metrics"]["tasks"]] == [1]
    assert env["metrics"]["tasks"][0]["class_window"]["start_day"] == 7


# ---------------------------------------------------------------------------------- modes
def test_modes_offer_different_tools():
    """Tests §5.3: first_full/global_reopt lead with health and the proposal tools; local_adjust
    leads with the two query tools and offers no proposal or dimension analyzer."""
    for mode in (Mode.FIRST_FULL, Mode.GLOBAL_REOPT):
        names = registry.tool_names(mode)
        assert names[:3] == ["analyze_health", "check_feasibility", "propose_placement"]
    local = Session(load_window(), mode="local_adjust").tool_names()
    assert local[:2] == ["query_target_tasks", "query_available_slots"]
    assert "analyze_health" in local and "apply_proposal" in local and "move" in local
    for hidden in ("propose_placement", "analyze_load", "spread_even", "min_context_switch"):
        assert hidden not in local


def test_local_adjust_apply_proposal_is_least_change_repair():
    """Tests that in local_adjust apply_proposal may not re-plan suggested tasks."""
    s = Session(load_window(), mode="local_adjust")
    before = s.state.to_json()
    result = s.invoke("apply_proposal", {"include_suggested": True, "time_limit_s": 0.5})
    assert result.status == "error" and "local_adjust" in result.reply
    assert s.state.to_json() == before


def test_hidden_tool_stays_hidden_on_a_bare_toolbox_unless_enabled():
    """Tests that min_context_switch is refused by a bare Toolbox and missing from its names and
    schemas, and works once enabled by name."""
    tb = Toolbox(overloaded())
    assert "min_context_switch" not in tb.tool_names()
    assert all(s["name"] != "min_context_switch" for s in tb.schemas("anthropic"))
    before = tb.state.to_json()
    assert "需显式启用" in tb.call("min_context_switch", {})
    assert tb.state.to_json() == before
    enabled = Toolbox(overloaded(), enabled_tools=["min_context_switch"])
    assert "min_context_switch" in enabled.tool_names()
    assert "需显式启用" not in enabled.call("min_context_switch", {"time_limit_s": 0.5})


def test_action_without_a_destination_says_it_is_not_fixable():
    """Tests that an action whose tasks have no legal destination carries fixable=false and the
    reason, and that query_available_slots indeed lists none."""
    state = make_state(
        2,
        [
            {"slots": block(1, 1, 4)},
            {"slots": block(1, 5, 8)},
            {"slots": block(1, 9, 12)},
            {
                "source": "event",
                "locked": True,
                "status": "existing",
                "category": "课程",
                "slots": block(2, 1, 12),
            },
        ],
    )
    s = Session(state)
    env = health(s)
    assert env["next_actions"]
    for act in env["next_actions"]:
        assert act["fixable"] is False and "没有合法落点" in act["fixable_reason"]
    slots = json.loads(s.call("query_available_slots", {"task_id": 1}))
    assert slots["success"] and slots["metrics"]["slots"] == []


def test_hidden_tool_stays_hidden_on_http():
    """Tests that the stateless HTTP route refuses a hidden tool and the tool list omits it,
    while a session that enabled it by name may call it."""
    from fastapi.testclient import TestClient

    from smartflow_engine.tools_adapter.api import create_app

    client = TestClient(create_app({"tok": "alice"}))
    auth = {"Authorization": "Bearer tok"}
    state = overloaded().to_dict()
    out = client.post(
        "/v1/tools/min_context_switch/call", headers=auth, json={"state": state, "args": {}}
    ).json()
    assert out["status"] == "error" and out["state"] is None
    listed = client.get("/v1/tools?fmt=anthropic", headers=auth).json()["tools"]
    assert all(t["name"] != "min_context_switch" for t in listed)
    sid = client.post(
        "/v1/sessions", headers=auth, json={"state": state, "enable_tools": ["min_context_switch"]}
    ).json()["session_id"]
    called = client.post(
        f"/v1/sessions/{sid}/calls",
        headers=auth,
        json={"tool": "min_context_switch", "args": {"time_limit_s": 0.5}},
    ).json()
    assert called["error_code"] != "not_available"


# ---------------------------------------------------------------------------------- actionable actions
def long_gap() -> ScheduleState:
    """复习 twice on day 1 and twice on day 14: a 12-day gap (critical) no single move can close,
    but one move into its middle eases (its impact falls to 0)."""
    return make_state(
        14,
        [
            {"slots": block(1, 1, 2)},
            {"slots": block(1, 3, 4)},
            {"slots": block(14, 1, 2)},
            {"slots": block(14, 3, 4)},
        ],
    )


def reads_find_help(s: Session, act: dict[str, Any]) -> dict[str, Any] | None:
    """The agent's two reads for ``act``: the first target whose best destination helps, then
    that task's first helping slot (None when the reads find none)."""
    aid = act["action_id"]
    tasks = json.loads(s.call("query_target_tasks", {"action_id": aid}))["metrics"]["tasks"]
    first = next((t for t in tasks if (t.get("best_destination") or {}).get("helps")), None)
    if first is None:
        return None
    slots = json.loads(
        s.call("query_available_slots", {"task_id": first["task_id"], "action_id": aid})
    )["metrics"]["slots"]
    dest = next((d for d in slots if d["helps"]), None)
    return None if dest is None else {"task_id": first["task_id"], **dest}


def no_room() -> ScheduleState:
    """Day 1 full of study work, day 2 full of a locked course: nothing can move anywhere."""
    return make_state(
        2,
        [
            {"slots": block(1, 1, 4)},
            {"slots": block(1, 5, 8)},
            {"slots": block(1, 9, 12)},
            {
                "source": "event",
                "locked": True,
                "status": "existing",
                "category": "课程",
                "slots": block(2, 1, 12),
            },
        ],
    )


@pytest.mark.parametrize("make", [overloaded, long_gap, no_room])
def test_fixable_is_a_bool_and_the_two_reads_agree_with_it(make):
    """Tests item 1 of the follow-up: every action's fixable is a bool (with a reason when false),
    and the two query tools find a destination that helps exactly when fixable is true."""
    s = Session(make())
    env = health(s)
    assert env["next_actions"]
    for act in env["next_actions"]:
        assert isinstance(act["fixable"], bool)
        found = reads_find_help(s, act)
        if act["fixable"]:
            assert found is not None, act
        else:
            assert act["fixable_reason"] and found is None, act


def test_a_move_that_only_eases_its_issue_helps_and_counts_as_progress():
    """Tests that an action whose issue no single move can resolve (a 12-day subject gap) is
    still fixable when a move eases it without creating anything, and that the loop counts that
    write as progress (the health key gets strictly better)."""
    s = Session(long_gap())
    env = health(s)
    gap = next(a for a in env["next_actions"] if a["intent_code"] == "fill_subject_gap")
    assert gap["fixable"] is True
    found = reads_find_help(s, gap)
    assert found is not None and not found["resolves"] and not found["creates"]
    assert found["impact_delta"] < 0 and 5 <= found["day"] <= 10
    reply = s.call(
        "move",
        {
            "task_id": found["task_id"],
            "new_day": found["day"],
            "new_slot_start": found["slot_start"],
            "action_id": gap["action_id"],
        },
    )
    assert reply.startswith("已将") and "新增 0 项" in reply
    sig = signal(s)
    assert sig["rounds_without_progress"] == 0 and sig["round"] == 2


def test_helps_is_a_clean_strict_improvement_of_an_own_issue():
    """Tests Destination.helps: it needs an eased own issue, nothing created, and a key that is
    lexicographically better (a critical eased to a warning counts)."""
    from smartflow_engine.analyzers.destinations import Destination

    def dest(**kw: Any) -> Destination:
        base: dict[str, Any] = {
            "day": 1,
            "slot_start": 1,
            "slot_end": 2,
            "embed_host": None,
            "resolves": (),
            "creates": (),
            "critical_delta": 0,
            "warning_delta": 0,
            "impact_after": 0.0,
            "eases_focus": 1,
            "impact_delta": -0.5,
        }
        return Destination(**{**base, **kw})

    assert dest().helps
    assert dest(critical_delta=-1, warning_delta=1, impact_delta=0.2).helps  # critical → warning
    assert not dest(eases_focus=0).helps  # another issue only
    assert not dest(creates=("issue_x",), warning_delta=-1).helps  # a trade
    assert not dest(impact_delta=0.0).helps  # not strictly better
    assert not dest(critical_delta=1, warning_delta=-2).helps


def test_removal_that_resolves_the_issue_orders_the_targets_first():
    """Tests that query_target_tasks puts first the task whose leaving resolves the action's
    issue: on an overloaded day the 4-period block, not the two 2-period ones."""
    state = make_state(
        3, [{"slots": block(1, 1, 2)}, {"slots": block(1, 3, 4)}, {"slots": block(1, 5, 12)}]
    )
    s = Session(state)
    env = health(s)
    act = next(a for a in env["next_actions"] if a["intent_code"] == "rebalance_load")
    tasks = json.loads(s.call("query_target_tasks", {"action_id": act["action_id"]}))
    assert tasks["metrics"]["tasks"][0]["task_id"] == 3


# ---------------------------------------------------------------------------------- window changes
def test_window_changes_are_logged_and_undone():
    """Tests item 4: expand_window is a window-change entry (in the round log and the snapshot);
    resolve_negotiation(choice=undo) takes it back, re-runs the gate (infeasible again) and empties the log."""
    s = Session(infeasible())
    health(s)
    reply = s.call("resolve_negotiation", {"choice": "expand_window", "extra_days": 2})
    assert "窗口调整记录 #1" in reply and "commit 不会把它写入数据库" in reply
    log = json.loads(s.call("get_round_log", {}))["metrics"]
    assert [w["choice"] for w in log["window_changes"]] == ["expand_window"]
    restored = Session.restore(s.to_json())
    assert restored.toolbox.ctx.loop.window_changes == s.toolbox.ctx.loop.window_changes
    undo = restored.invoke("resolve_negotiation", {"choice": "undo"})
    assert undo.status == "ok" and "已撤销窗口调整 #1" in undo.reply and "仍不可行" in undo.reply
    assert restored.state.num_days == 1 and restored.toolbox.ctx.loop.gate_open is True
    assert restored.toolbox.ctx.loop.window_changes == []
    again = restored.invoke("resolve_negotiation", {"choice": "undo"})
    assert again.status == "error" and "没有可撤销的窗口调整" in again.reply


def test_undo_is_refused_while_a_task_sits_on_an_added_day():
    """Tests that undoing expand_window is refused, naming the task, while a task occupies one
    of the added days; state and window log unchanged."""
    s = Session(infeasible())
    health(s)
    s.call("resolve_negotiation", {"choice": "expand_window", "extra_days": 1})
    assert s.call("place", {"task_id": 2, "day": 2, "slot_start": 1}).startswith("已将")
    before = s.state.to_json()
    result = s.invoke("resolve_negotiation", {"choice": "undo"})
    assert result.status == "error" and "[2]任务2" in result.reply and "第2天起" in result.reply
    assert s.state.to_json() == before and len(s.toolbox.ctx.loop.window_changes) == 1


def test_undo_of_a_lifted_ban_is_refused_while_a_task_uses_it():
    """Tests that undoing relax_constraints is refused while a task placed after it uses a lifted
    banned period, and succeeds once the task is moved off it."""
    state = make_state(
        1,
        [
            {"status": "pending", "duration": 2, "category_id": 7},
            {
                "source": "event",
                "locked": True,
                "status": "existing",
                "category": "课程",
                "slots": block(1, 3, 12),
            },
        ],
        classes=[{"id": 7, "name": "复习", "excluded_periods": [1, 2]}],
    )
    s = Session(state)
    assert health(s)["feasibility"]["is_feasible"] is False
    reply = s.call(
        "resolve_negotiation", {"choice": "relax_constraints", "lift_banned": [{"class_id": 7}]}
    )
    assert "解除任务类[7]复习的禁排第1、2节" in reply and "已解除门禁" in reply
    assert s.call("place", {"task_id": 1, "day": 1, "slot_start": 1}).startswith("已将")
    refused = s.invoke("resolve_negotiation", {"choice": "undo"})
    assert refused.status == "error" and "禁排时段" in refused.reply and "[1]任务1" in refused.reply
    assert s.state.task_classes[0].excluded_periods == []
    assert s.call("unplace", {"task_id": 1}).startswith("已将")
    assert s.invoke("resolve_negotiation", {"choice": "undo"}).status == "ok"
    assert s.state.task_classes[0].excluded_periods == [1, 2]


def test_undo_of_reduce_scope_brings_the_tasks_back():
    """Tests that undoing reduce_scope puts the set-aside tasks back as pending."""
    s = Session(infeasible())
    health(s)
    s.call("resolve_negotiation", {"choice": "reduce_scope", "task_ids": [2]})
    assert s.state.task(2) is None
    assert s.invoke("resolve_negotiation", {"choice": "undo"}).status == "ok"
    assert s.state.task(2).status == "pending" and s.toolbox.ctx.loop.set_aside == []


def test_commit_preview_says_window_changes_stay_in_the_session(tmp_path):
    """Tests that commit's preview and reply say, item by item, that the window changes are not
    written (no table holds a window's days; task-class rules change only by
    upsert_task_class), while a task placed on an added day is written by its week and weekday."""
    from smartflow_engine.store import Store, window_days

    store = Store.from_url(f"sqlite:///{tmp_path / 'w.db'}")
    try:
        store.seed_from_state(7, ScheduleState.from_json(load_window("sample_window").to_dict()))
        state = store.load_window(7, window_days((7, 1), (8, 7)))
        s = Session(state, store=store, db_user_id=7)
        health(s)
        s.begin_request()  # the health check closed the request (rules met; issue 27)
        s.toolbox.ctx.loop.gate_open = True  # stand-in for an infeasible round (this one fits)
        s.call("resolve_negotiation", {"choice": "expand_window", "extra_days": 1})
        pending = next(t for t in s.state.tasks if t.status == "pending" and t.category_id == 10)
        assert s.call(
            "place", {"task_id": pending.state_id, "day": 15, "slot_start": 1}
        ).startswith("已将")
        held = s.invoke("commit", {})
        assert held.status == "pending_confirm"
        assert "1项窗口调整只在会话中生效，提交不会写入数据库" in held.reply
        assert "#1 扩展时间窗（expand_window），新增第15-15天" in held.reply
        done = s.confirm(held.confirm_token or "")
        assert done.reply.startswith("已提交 1 项修改") and "不会写入数据库" in done.reply
        again = store.load_window(7, s.state.window.day_mapping)
        moved = again.task(pending.state_id)
        assert moved is not None and [b.day for b in moved.slots] == [15]
    finally:
        store.dispose()


def test_a_multi_block_task_is_offered_block_by_block():
    """Tests that a study task with blocks on two days is a target, each destination names the
    block (from_day), and move with that from_day takes exactly that block there."""
    state = make_state(
        3,
        [
            {"slots": block(1, 1, 4) + block(2, 1, 2)},
            {"slots": block(1, 5, 8)},
            {"slots": block(1, 9, 12)},
        ],
    )
    s = Session(state)
    env = health(s)
    act = next(a for a in env["next_actions"] if a["intent_code"] == "rebalance_load")
    tasks = json.loads(s.call("query_target_tasks", {"action_id": act["action_id"]}))
    assert 1 in [t["task_id"] for t in tasks["metrics"]["tasks"]]
    slots = json.loads(s.call("query_available_slots", {"task_id": 1, "limit": 50}))
    rows = slots["metrics"]["slots"]
    assert rows and {d["from_day"] for d in rows} == {1, 2}
    assert all(d["day"] != 2 for d in rows if d["from_day"] == 1)  # not onto its other block's day
    dest = next(d for d in rows if d["from_day"] == 1)
    reply = s.call(
        "move",
        {"task_id": 1, "new_day": dest["day"], "new_slot_start": dest["slot_start"], "from_day": 1},
    )
    assert reply.startswith("已将"), reply
    assert sorted(b.day for b in s.state.task(1).slots) == sorted([dest["day"], 2])


# ---------------------------------------------------------------------------------- item 5
def test_every_candidate_write_tool_is_a_registered_tool():
    """Tests issue 27 item 5: every name an analyzer may put in candidate_write_tools (the
    analyzers' WRITE_TOOLS, checked when an action is built) is a registered write tool, and so
    is every name in the actions of every analyzer on sample windows (no queue_apply_head_move
    or other tool that does not exist)."""
    from smartflow_engine.analyzers.common import WRITE_TOOLS

    writes = {s.name for s in registry.TOOLS if s.is_write}
    assert writes >= WRITE_TOOLS, WRITE_TOOLS - writes
    seen: set[str] = set()
    analyzers = [s.name for s in registry.TOOLS if s.name.startswith("analyze_")]
    for state in (load_window(), load_window("sample_window"), overloaded(), infeasible()):
        box = Toolbox(state)
        for name in analyzers:
            env = json.loads(box.call(name, {}))
            for act in env.get("next_actions", []):
                seen.update(act.get("candidate_write_tools") or [])
    assert seen and seen <= writes, seen - writes

"""Tests of the read tools' replies, line by line against the spec's §4 layouts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest_adapters import example_args, load_window, window_dict

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.tools_adapter import Session
from smartflow_engine.tools_adapter.core import registry

# Lines the spec's §4 examples print for the same tasks, verbatim.
SPEC_OVERVIEW_LINES = [
    "规划窗口共13天，每天12个时段，总计156个时段。",
    "每日概况：",
    "第1天：占6/12 — [1]高等数学(1-2节) [2]英语(3-4节) [4]体育(5-6节)",
    "第3天：占0/12",
    "第6天：占2/12 — [2]英语(1-2节)",
    "第7天：占2/12 — [10]思政(1-2节,可嵌入)",
    "第8天：占4/12 — [1]高等数学(1-2节) [5]物理(3-4节)",
    "可嵌入时段：第7天 [10]思政(1-2节)",
    "待安排：[3]复习线代(需3时段) [7]写实验报告(需2时段) [9]小组讨论(需2时段)",
]


def test_get_overview_layout(tools: Toolbox):
    """Tests get_overview: the spec's lines, counts from the grid, one line per day."""
    reply = tools.call("get_overview", {})
    lines = reply.splitlines()
    for line in SPEC_OVERVIEW_LINES:
        assert line in lines
    assert lines[1] == "当前已占用22个，空闲134个。待安排任务3个。"
    assert sum(1 for ln in lines if ln.startswith("第") and "：占" in ln) == 13


def test_get_overview_shows_guest(tools: Toolbox):
    """Tests that a guest appears as (嵌入a-b节) and the host block as taken."""
    tools.call("place", {"task_id": 7, "day": 7, "slot_start": 1})
    reply = tools.call("get_overview", {})
    assert "第7天：占2/12 — [10]思政(1-2节,可嵌入) [7]写实验报告(嵌入1-2节)" in reply
    assert "可嵌入时段：第7天 [10]思政(1-2节,已嵌入[7]写实验报告)" in reply


# tool-layer-design.md §4.2, "返回示例（查整天）", verbatim (issue 24 item 10: the category and
# source tags issue 11 added are gone; the JSON query tools carry them).
SPEC_QUERY_DAY_4 = """第4天 全天：

第1-2节：[1]高等数学（固定）
第3-4节：[6]线代
第5-6节：空
第7-8节：空
第9-10节：[8]程序设计
第11-12节：空

连续空闲区：第5-8节(4时段)、第11-12节(2时段)
可嵌入：第1-2节已有[1]高等数学（固定，不可嵌入）"""


def test_query_range_whole_day_matches_spec(tools: Toolbox):
    """Tests the whole-day layout of query_range against the spec's day-4 example, exactly (no
    category or source tags; its 可嵌入 line names the fixed block and why nothing embeds
    there)."""
    assert tools.call("query_range", {"day": 4}) == SPEC_QUERY_DAY_4


def test_query_range_whole_day_lists_every_block_kind():
    """Tests the 可嵌入 line on a day with a fixed course, a free water course and a locked
    water course: each block with why it is or is not embeddable, in period order."""
    data = window_dict()
    data["tasks"].append(
        {
            "state_id": 11,
            "source": "event",
            "name": "形势政策",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "can_embed": True,
            "slots": [{"day": 7, "slot_start": 5, "slot_end": 6}],
        }
    )
    data["tasks"].append(
        {
            "state_id": 12,
            "source": "event",
            "name": "军理",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": 7, "slot_start": 9, "slot_end": 9}],
        }
    )
    tb = Toolbox(ScheduleState.from_json(data))
    tb.call("place", {"task_id": 9, "day": 7, "slot_start": 1})
    reply = tb.call("query_range", {"day": 7})
    assert reply.splitlines()[-1] == (
        "可嵌入：第1-2节已有[10]思政（可嵌入，已嵌入[9]小组讨论）、"
        "第5-6节已有[11]形势政策（固定，不可嵌入）、第9节已有[12]军理（固定，不可嵌入）"
    )


def test_query_range_whole_day_without_blocks_says_none(tools: Toolbox):
    """Tests that a day without fixed or water-course blocks ends 可嵌入：无."""
    assert tools.call("query_range", {"day": 2}).splitlines()[-1] == "可嵌入：无"


def test_query_range_span_matches_spec(tools: Toolbox):
    """Tests the period-range layout of query_range against the spec's example."""
    assert tools.call("query_range", {"day": 4, "slot_start": 5, "slot_end": 8}) == "\n".join(
        [
            "第4天 第5-8节：",
            "",
            "第5节：空",
            "第6节：空",
            "第7节：空",
            "第8节：空",
            "",
            "该范围4个时段全部空闲。",
        ]
    )


def test_query_range_mixed_and_embeddable(tools: Toolbox):
    """Tests the mixed-range summary and the embeddable note of a day with a water course."""
    reply = tools.call("query_range", {"day": 7, "slot_start": 2, "slot_end": 3})
    assert "第2节：[10]思政（可嵌入）" in reply and "第3节：空" in reply
    assert reply.endswith("该范围2个时段中空闲1个，已占用1个。")
    day = tools.call("query_range", {"day": 7})
    assert "可嵌入：第1-2节已有[10]思政（可嵌入，当前无嵌入任务）" in day
    assert "连续空闲区：第3-12节(10时段)" in day


def test_query_range_only_start_runs_to_end_of_day(tools: Toolbox):
    """Tests that slot_start alone covers the rest of the day."""
    reply = tools.call("query_range", {"day": 4, "slot_start": 9})
    assert reply.startswith("第4天 第9-12节：")
    assert "第10节：[8]程序设计" in reply


@pytest.mark.parametrize(
    ("args", "reply"),
    [
        ({"day": 14}, "查询失败：第14天超出规划窗口（第1-13天）。"),  # beyond the window
        ({"day": 2, "slot_start": 6, "slot_end": 3}, "查询失败：slot_start=6 大于 slot_end=3。"),
    ],
)
def test_query_range_refusals(tools: Toolbox, args, reply):
    """Tests query_range's replies to ranges outside the window."""
    assert tools.call("query_range", args) == reply


def test_find_free_lists_runs_and_hosts(tools: Toolbox):
    """Tests find_free: maximal runs at least `duration` long, and free host blocks."""
    reply = tools.call("find_free", {"duration": 2, "day": 7})
    assert reply.splitlines() == [
        "第7天满足2个连续空闲时段的位置：",
        "",
        "第7天 第3-12节（10时段连续空闲）",
        "",
        "可嵌入位置（水课时段，可叠加任务）：",
        "第7天 第1-2节（[10]思政，当前无嵌入任务）",
    ]
    whole = tools.call("find_free", {"duration": 5})
    assert "第4天" not in whole  # day 4's longest run is 4
    assert "第2天 第5-12节（8时段连续空闲）" in whole


def test_find_free_nothing_long_enough(tools: Toolbox):
    """Tests the reply when no run is long enough."""
    tools.call("place", {"task_id": 3, "day": 7, "slot_start": 3})
    reply = tools.call("find_free", {"duration": 12, "day": 7})
    assert reply.startswith("第7天没有满足12个连续空闲时段的位置。")


def test_list_tasks_all_matches_spec(tools: Toolbox):
    """Tests list_tasks' full listing against the spec's lines (each task's source added as the
    last tag, so a target_filter on source can be checked)."""
    lines = tools.call("list_tasks", {}).splitlines()
    assert lines[0] == "共10个任务，已安排7个，待安排3个。"
    for line in [
        "  [1]高等数学(课程,固定) — 第1天(1-2节) 第4天(1-2节) 第8天(1-2节)",
        "  [2]英语(课程) — 第1天(3-4节) 第6天(1-2节)",
        "  [6]线代(学习) — 第4天(3-4节)",
        "  [10]思政(课程,可嵌入) — 第7天(1-2节)",
        "  [3]复习线代(学习) — 需3时段",
    ]:
        assert line in lines


def test_list_tasks_pending_matches_spec(tools: Toolbox):
    """Tests list_tasks(status=pending) against the spec's example (the source added after the
    category)."""
    assert tools.call("list_tasks", {"status": "pending"}) == "\n".join(
        [
            "待安排任务共3个：",
            "",
            "[3]复习线代 — 需3个连续时段，类别：学习",
            "[7]写实验报告 — 需2个连续时段，类别：作业",
            "[9]小组讨论 — 需2个连续时段，类别：学习",
        ]
    )


def test_list_tasks_filters_and_suggested_group(tools: Toolbox):
    """Tests category filtering and the separate 已预排 group after a place."""
    tools.call("place", {"task_id": 3, "day": 5, "slot_start": 1})
    reply = tools.call("list_tasks", {"category": "学习"})
    assert reply.splitlines()[0] == "类别「学习」共3个任务，已安排1个，已预排1个，待安排1个。"
    assert "已预排：\n  [3]复习线代(学习) — 第5天(1-3节)" in reply
    assert tools.call("list_tasks", {"category": "不存在"}) == "类别「不存在」没有任务。"
    assert (
        tools.call("list_tasks", {"status": "suggested", "category": "作业"})
        == "类别「作业」没有已预排任务。"
    )


def test_get_task_info_matches_spec(tools: Toolbox):
    """Tests get_task_info for a locked course and a water course against the spec verbatim."""
    assert tools.call("get_task_info", {"task_id": 1}) == "\n".join(
        [
            "[1]高等数学",
            "类别：课程 | 状态：已安排（固定）",
            "来源：课程表",
            "占用时段：",
            "  第1天 第1-2节",
            "  第4天 第1-2节",
            "  第8天 第1-2节",
        ]
    )
    assert tools.call("get_task_info", {"task_id": 10}) == "\n".join(
        [
            "[10]思政",
            "类别：课程 | 状态：已安排",
            "来源：课程表",
            "可嵌入：是（允许在此时段嵌入其他任务）",
            "占用时段：",
            "  第7天 第1-2节",
            "当前嵌入任务：无",
        ]
    )


def test_get_task_info_pending_guest_and_missing(tools: Toolbox):
    """Tests get_task_info for a pending task, a guest and its host, and an unknown id."""
    assert tools.call("get_task_info", {"task_id": 7}).splitlines()[-1] == "需要时段：2个连续时段"
    tools.call("place", {"task_id": 7, "day": 7, "slot_start": 1})
    assert "嵌入宿主：[10]思政" in tools.call("get_task_info", {"task_id": 7})
    assert "当前嵌入任务：[7]写实验报告（第7天第1-2节）" in tools.call(
        "get_task_info", {"task_id": 10}
    )
    assert tools.call("get_task_info", {"task_id": 77}) == "查询失败：任务 [77] 不存在。"


def test_get_task_info_shows_task_class(sample_window):
    """Tests that a task's class window and banned periods are shown."""
    reply = Toolbox(sample_window).call("get_task_info", {"task_id": 13})
    assert "所属任务类：[12]项目（第3-14天，禁排第11、12节）" in reply


def test_read_tools_change_nothing(tools: Toolbox):
    """Tests that read tools leave the state and change log untouched."""
    before = tools.state.to_json()
    for name, args in [
        ("get_overview", {}),
        ("query_range", {"day": 1}),
        ("find_free", {"duration": 1}),
        ("list_tasks", {}),
        ("get_task_info", {"task_id": 2}),
    ]:
        tools.call(name, args)
    assert tools.state.to_json() == before and tools.changes == []


def test_find_free_lists_short_hosts_as_in_spec(tools: Toolbox):
    """Tests that find_free(duration=3) still lists the free 2-period water course [10]思政 in its
    可嵌入 section, as the spec's duration-3 example does."""
    lines = tools.call("find_free", {"duration": 3}).splitlines()
    at = lines.index("可嵌入位置（水课时段，可叠加任务）：")
    assert lines[at - 1] == "" and lines[at + 1 :] == ["第7天 第1-2节（[10]思政，当前无嵌入任务）"]


def _locked_water_course_window() -> ScheduleState:
    data = window_dict()
    data["tasks"][9]["locked"] = True  # [10]思政: a locked water course
    return ScheduleState.from_json(data)


def test_locked_water_course_is_not_shown_as_embeddable():
    """Tests that a locked water course is shown as not embeddable by every read tool: nothing
    can be embedded there (DESIGN), so get_task_info must not say 可嵌入：是."""
    tb = Toolbox(_locked_water_course_window())
    info = tb.call("get_task_info", {"task_id": 10})
    assert "可嵌入：是" not in info and "可嵌入：否（固定，不可嵌入其他任务）" in info
    assert "当前嵌入任务" not in info
    overview = tb.call("get_overview", {})
    assert "第7天：占2/12 — [10]思政(1-2节)" in overview and "可嵌入时段：无" in overview
    assert "[10]思政(课程,固定) — 第7天(1-2节)" in tb.call("list_tasks", {})
    assert tb.call("query_range", {"day": 7}).splitlines()[-1] == (
        "可嵌入：第1-2节已有[10]思政（固定，不可嵌入）"
    )
    assert "第7天 第1-2节" not in tb.call("find_free", {"duration": 2, "day": 7}).split("可嵌入")[1]


def _many_pending(count: int) -> ScheduleState:
    data = window_dict()
    base = len(data["tasks"])
    data["tasks"] += [
        {
            "state_id": 100 + i,
            "name": f"练习{i}",
            "category": "学习",
            "status": "pending",
            "duration": 1 + i % 3,
        }
        for i in range(count - 3)
    ]
    assert len([t for t in data["tasks"] if t["status"] == "pending"]) == count
    assert len(data["tasks"]) == base + count - 3
    return ScheduleState.from_json(data)


def test_read_replies_are_bounded_on_huge_windows():
    """Tests that read replies stay small on 40,000 pending tasks: lists are capped and say, in
    Chinese, how many entries were left out."""
    tb = Toolbox(_many_pending(40_000), self_check=False)
    overview = tb.call("get_overview", {})
    assert len(overview.encode()) < 20_000
    assert "待安排任务40000个" in overview and "……其余39950个未列出" in overview
    pending = tb.call("list_tasks", {"status": "pending"})
    assert len(pending.encode()) < 20_000 and "……其余39900个未列出" in pending
    everything = tb.call("list_tasks", {})
    assert len(everything.encode()) < 20_000 and "共40007个任务" in everything
    assert "……其余39900个未列出" in everything


_INTERNAL = re.compile(r"source|task_item", re.IGNORECASE)


@pytest.mark.parametrize("window", ["spec_tools_window", "sample_window"])
def test_no_reply_shows_the_internal_source(window: str):
    """Tests issue 24 item 10 (the §6 ID rule): no tool's reply the model reads names the
    internal ``source`` / ``source_id`` / ``task_item`` (get_task_info's 来源 label is the one
    place a source shows, in the spec's words), analyze_health's actions and query_target_tasks
    included, whether followed by action id or not."""
    session = Session(load_window(window), enabled_tools=[s.name for s in registry.TOOLS])
    replies: dict[str, str] = {}
    for spec in registry.TOOLS:
        if spec.needs_confirm or spec.name == "upsert_task_class":
            continue  # echoes the caller's own source argument (chat / memory / web)
        state = session.state
        replies[spec.name] = session.call(spec.name, example_args(spec, state))
    health = json.loads(session.call("analyze_health", {}))
    for action in health["next_actions"]:
        for tool in ("query_target_tasks", "query_available_slots"):
            args: dict[str, Any] = {"action_id": action["action_id"]}
            if tool == "query_available_slots":
                args["task_id"] = 3 if window == "spec_tools_window" else 11
            replies[f"{tool} {action['action_id']}"] = session.call(tool, args)
    for task in load_window(window).tasks:
        replies[f"get_task_info {task.state_id}"] = session.call(
            "get_task_info", {"task_id": task.state_id}
        )
        assert "来源：" in replies[f"get_task_info {task.state_id}"]
    replies["list_tasks pending"] = session.call("list_tasks", {"status": "pending"})
    replies["filter"] = session.call("query_target_tasks", {"target_filter": {"kind": "study"}})
    shown = {name: reply for name, reply in replies.items() if _INTERNAL.search(reply)}
    assert not shown, shown


def test_the_old_source_filter_is_still_accepted(tools: Toolbox):
    """Tests that query_target_tasks still takes the old ``source`` filter (not advertised in
    its schema) and that ``kind: study`` selects what ``source: task_item`` did."""
    old = json.loads(tools.call("query_target_tasks", {"target_filter": {"source": "task_item"}}))
    new = json.loads(tools.call("query_target_tasks", {"target_filter": {"kind": "study"}}))
    assert old["success"] and new["success"]
    assert [t["task_id"] for t in old["metrics"]["tasks"]] == [
        t["task_id"] for t in new["metrics"]["tasks"]
    ]
    assert all(t["kind"] == "study" for t in new["metrics"]["tasks"])
    schema = json.dumps(tools.schemas("openai"), ensure_ascii=False)
    assert "task_item" not in schema

"""Tests of the class rules on the tool surface (issue 42): the write tools' refusals in the
student's words, find_free and get_task_info for a task, the notices of get_overview, and
existing entries kept as facts (the request option)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state import place
from smartflow_engine.state.strategies import windows

DATA = Path(__file__).parent.parent / "data"
UPSTREAM = json.loads((DATA / "upstream_window.json").read_text(encoding="utf-8"))
ALGEBRA = "任务类「高数复习」的任务按顺序安排"


def dated_tools() -> Toolbox:
    """The upstream window (14 days from Monday 2026-09-21), dated, in a self-checking Toolbox."""
    data = copy.deepcopy(UPSTREAM)
    data["window"]["semester_start"] = "2026-09-07"
    return Toolbox(ScheduleState.from_json(data), self_check=True)


REFUSALS = [
    # a Saturday, named as the student names it
    (
        [],
        ("place", {"task_id": 5, "day": 6, "slot_start": 5}),
        "放置失败：第6天是星期六，任务类「高数复习」不安排在星期六、星期日。",
    ),
    # past the class's end date: its days and its dates
    (
        [],
        ("place", {"task_id": 5, "day": 13, "slot_start": 5}),
        "放置失败：第13天不在任务类「高数复习」的时间窗（第1-12天，2026-09-21 至 2026-10-02）内。",
    ),
    # half-day block 6 = periods 11-12
    (
        [],
        ("place", {"task_id": 5, "day": 2, "slot_start": 11}),
        "放置失败：第2天第11-12节含任务类「高数复习」的禁排时段（第11、12节）。",
    ),
    # a water course the class may not use
    (
        [],
        ("place", {"task_id": 5, "day": 2, "slot_start": 3}),
        "放置失败：第2天第3-4节位于水课 [2]思政 中，但任务类「高数复习」不允许嵌入水课。",
    ),
    # item order: [5] must end before [6] starts
    (
        [("place", {"task_id": 6, "day": 3, "slot_start": 5})],
        ("place", {"task_id": 5, "day": 3, "slot_start": 7}),
        "放置失败：[5]第二章 导数 不能放到第3天第7-8节：它必须在 [6]第三章 积分（第3天第5-6节）"
        f"开始之前结束（{ALGEBRA}，[6]第三章 积分 排在它后面）。",
    ),
    # item order: [7] must start after [6] ends
    (
        [("place", {"task_id": 6, "day": 3, "slot_start": 5})],
        ("place", {"task_id": 7, "day": 2, "slot_start": 5}),
        "放置失败：[7]第四章 级数 不能放到第2天第5-6节：它必须在 [6]第三章 积分（第3天第5-6节）"
        f"结束之后开始（{ALGEBRA}，[6]第三章 积分 排在它前面）。",
    ),
    # the same in a batch, against the other item's new place
    (
        [
            ("place", {"task_id": 5, "day": 2, "slot_start": 5}),
            ("place", {"task_id": 6, "day": 3, "slot_start": 5}),
        ],
        (
            "batch_move",
            {
                "moves": [
                    {"task_id": 5, "new_day": 4, "new_slot_start": 3},
                    {"task_id": 6, "new_day": 3, "new_slot_start": 7},
                ]
            },
        ),
        "批量移动失败，全部回滚，无任何变更。\n原因：[5]第二章 导数 不能放到第4天第3-4节：它必须在 "
        f"[6]第三章 积分（其新位置：第3天第7-8节）开始之前结束（{ALGEBRA}，[6]第三章 积分 排在它后面）。",
    ),
    # a move that breaks the order
    (
        [
            ("place", {"task_id": 5, "day": 2, "slot_start": 5}),
            ("place", {"task_id": 6, "day": 3, "slot_start": 5}),
        ],
        ("move", {"task_id": 5, "new_day": 4, "new_slot_start": 3}),
        "移动失败：[5]第二章 导数 不能放到第4天第3-4节：它必须在 [6]第三章 积分（第3天第5-6节）"
        f"开始之前结束（{ALGEBRA}，[6]第三章 积分 排在它后面）。",
    ),
    (
        [
            ("place", {"task_id": 5, "day": 2, "slot_start": 5}),
            ("place", {"task_id": 6, "day": 3, "slot_start": 5}),
        ],
        ("swap", {"task_a": 5, "task_b": 6}),
        "交换失败：[5]第二章 导数 不能放到第3天第5-6节：它必须在 [6]第三章 积分（其新位置："
        f"第2天第5-6节）开始之前结束（{ALGEBRA}，[6]第三章 积分 排在它后面）。",
    ),
]


@pytest.mark.parametrize(("before", "call", "reply"), REFUSALS)
def test_rule_refusals_name_the_rule_in_the_students_words(before, call, reply):
    """Tests each class rule's refusal on the tool surface: the spec's form, the class, the
    weekday, the periods, the water course or the item to follow/precede; nothing changes."""
    tools = dated_tools()
    for name, args in before:
        assert tools.call(name, args).startswith("已将")
    text = tools.state.to_json()
    assert tools.call(*call) == reply
    assert tools.state.to_json() == text


def test_existing_fixed_refusal_text():
    """Tests the refusal of moving an existing task while existing entries are facts."""
    tools = dated_tools()
    tools.ctx.existing_fixed = True
    assert tools.call("move", {"task_id": 4, "new_day": 2, "new_slot_start": 5}) == (
        "移动失败：[4]第一章 极限 是已安排任务，本次请求保持已安排任务不动，只能移动已预排和待安排任务。"
    )
    assert tools.call("unplace", {"task_id": 4}).startswith("移除失败：[4]第一章 极限 是已安排任务")


def test_task_info_shows_the_class_rules_and_the_order():
    """Tests get_task_info's class line (days and dates, weekdays, banned periods, no water
    course) and order line (the placed items it must follow)."""
    tools = dated_tools()
    tools.call("place", {"task_id": 6, "day": 3, "slot_start": 5})
    lines = tools.call("get_task_info", {"task_id": 7}).splitlines()
    assert lines[3] == (
        "所属任务类：[21]高数复习（第1-12天，2026-09-21 至 2026-10-02，不排星期六、星期日，"
        "禁排第1、2、11、12节，不嵌入水课）"
    )
    assert lines[4] == "顺序：任务类第4项，须在 [6]第三章 积分 之后"


def test_overview_says_when_class_dates_cannot_be_honoured():
    """Tests that a window without dates says, in get_overview, which classes' dates do not
    apply; a dated window says nothing."""
    bare = Toolbox(ScheduleState.from_json(UPSTREAM)).call("get_overview", {})
    notes = [line for line in bare.splitlines() if line.startswith("注意：")]
    assert len(notes) == 2 and "任务类「高数复习」的起止日期无法核对" in notes[0]
    assert "注意：" not in dated_tools().call("get_overview", {})


def test_semester_start_setting_dates_the_window(monkeypatch):
    """Tests that SMARTFLOW_SEMESTER_START dates a window given to a Toolbox that states no
    dates: the class's end date then bounds its days."""
    monkeypatch.setenv("SMARTFLOW_SEMESTER_START", "2026-09-07")
    tools = Toolbox(ScheduleState.from_json(UPSTREAM))
    assert tools.state.window.semester_start == "2026-09-07"
    assert tools.call("place", {"task_id": 5, "day": 13, "slot_start": 5}).startswith(
        "放置失败：第13天不在任务类「高数复习」的时间窗"
    )


def test_find_free_for_a_task_lists_only_its_places():
    """Tests find_free with task_id: only the free runs the task's class allows (periods 3-10,
    weekdays, its days, after [6]), no water course (its class forbids it)."""
    tools = dated_tools()
    tools.call("place", {"task_id": 6, "day": 3, "slot_start": 5})
    reply = tools.call("find_free", {"task_id": 7, "day": 3})
    assert reply.splitlines() == [
        "第3天[7]第四章 级数 可用的满足2个连续空闲时段的位置：",
        "",
        "第3天 第7-10节（4时段连续空闲）",
        "（已按任务类「高数复习」的规则筛选）",
        "",
        "可嵌入位置（水课时段，可叠加任务）：无",
    ]
    assert tools.call("find_free", {"task_id": 7, "day": 6}).startswith("第6天没有")
    assert tools.call("find_free", {"task_id": 99}) == "查询失败：任务 [99] 不存在。"
    assert tools.call("find_free", {}).startswith("查询失败：请给出 duration")


RUN = re.compile(r"^第(\d+)天 第(\d+)(?:-(\d+))?节（")


@settings(deadline=None, max_examples=30)
@given(data=st.data(), state=windows(7, 14, embeddable=0.35, upstream=True))
def test_find_free_for_a_task_is_exactly_where_place_succeeds(data, state):
    """Tests that the free runs find_free lists for a pending task hold exactly the starts at
    which place succeeds on free periods (each tried on a copy), day by day."""
    pending = state.pending_tasks()
    if not pending:
        return
    task = data.draw(st.sampled_from(pending))
    need = task.need()
    tools = Toolbox(state)
    for day in range(1, state.num_days + 1):
        reply = tools.call("find_free", {"task_id": task.state_id, "day": day})
        listed = set()
        for line in reply.split("\n\n可嵌入位置")[0].splitlines():
            if m := RUN.match(line):
                d, s = int(m[1]), int(m[2])
                e = int(m[3] or s)
                listed |= {(d, start) for start in range(s, e - need + 2)}
        legal = set()
        for start in range(1, state.slots_per_day - need + 2):
            copy_ = ScheduleState.from_json(state.to_dict())
            result = place(copy_, task.state_id, day, start)
            if result.ok and copy_.task(task.state_id).embed_host is None:  # type: ignore[union-attr]
                legal.add((day, start))
        assert listed == legal, (day, reply)

"""Tests of the write tools' replies: every success and refusal layout of the spec's §5."""

from __future__ import annotations

import pytest

from smartflow_engine import ScheduleState, Toolbox


def test_place_success_matches_spec(tools: Toolbox):
    """Tests place's success reply verbatim (spec §5.1)."""
    assert tools.call("place", {"task_id": 3, "day": 5, "slot_start": 1}) == "\n".join(
        [
            "已将 [3]复习线代 放到第5天第1-3节。",
            "第5天当前占用：[3]复习线代(1-3节)，占用3/12。",
            "待安排任务剩余：2个。",
        ]
    )
    assert tools.state.task(3).status == "suggested"


def test_place_embed_matches_spec(tools: Toolbox):
    """Tests place into a water course: the spec's embedding reply, occupancy 2/12."""
    assert tools.call("place", {"task_id": 7, "day": 7, "slot_start": 1}) == "\n".join(
        [
            "已将 [7]写实验报告 嵌入到第7天第1-2节（宿主：[10]思政）。",
            "第7天当前占用：[10]思政(1-2节) [7]写实验报告(嵌入1-2节)，占用2/12。",
            "待安排任务剩余：2个。",
        ]
    )


def test_place_conflict_matches_spec():
    """Tests place's conflict reply against the spec's [4]体育 example."""
    state = ScheduleState.from_json(
        {
            "window": {"total_days": 5},
            "tasks": [
                {"state_id": 3, "name": "复习线代", "status": "pending", "duration": 2},
                {
                    "state_id": 4,
                    "name": "体育",
                    "category": "课程",
                    "status": "existing",
                    "slots": [{"day": 5, "slot_start": 1, "slot_end": 4}],
                },
            ],
        }
    )
    assert Toolbox(state).call("place", {"task_id": 3, "day": 5, "slot_start": 1}) == (
        "放置失败：第5天第1-2节已被 [4]体育 占用。\n"
        "第5天当前占用：[4]体育(1-4节)，占用4/12。空闲时段：第5-12节。"
    )


def test_place_conflict_names_each_blocker(tools: Toolbox):
    """Tests that a range hitting two tasks names both with their periods."""
    reply = tools.call("place", {"task_id": 3, "day": 1, "slot_start": 2})
    assert (
        reply.splitlines()[0]
        == "放置失败：第1天第2节已被 [1]高等数学 占用，第3-4节已被 [2]英语 占用。"
    )


def test_move_success_matches_spec(tools: Toolbox):
    """Tests move's success reply verbatim (spec §5.2)."""
    assert tools.call("move", {"task_id": 6, "new_day": 9, "new_slot_start": 1}) == "\n".join(
        [
            "已将 [6]线代 从第4天第3-4节移至第9天第1-2节。",
            "第4天当前占用：[1]高等数学(1-2节) [8]程序设计(9-10节)，占用4/12。",
            "第9天当前占用：[6]线代(1-2节)，占用2/12。",
        ]
    )


def test_move_conflict_matches_spec(tools: Toolbox):
    """Tests move's conflict reply (spec §5.2, [9]小组讨论 example)."""
    tools.call("place", {"task_id": 9, "day": 9, "slot_start": 1})
    assert tools.call("move", {"task_id": 6, "new_day": 9, "new_slot_start": 1}) == (
        "移动失败：第9天第1-2节已被 [9]小组讨论 占用。\n"
        "第9天当前占用：[9]小组讨论(1-2节)，占用2/12。空闲时段：第3-12节。"
    )


def test_swap_success_layout(tools: Toolbox):
    """Tests swap's success reply layout (spec §5.3)."""
    tools.call("move", {"task_id": 2, "new_day": 6, "new_slot_start": 5, "from_day": 6})
    tools.call("move", {"task_id": 6, "new_day": 6, "new_slot_start": 1})
    reply = tools.call("swap", {"task_a": 4, "task_b": 6})
    assert reply == "\n".join(
        [
            "交换完成：",
            "  [4]体育：第1天第5-6节 → 第6天第1-2节",
            "  [6]线代：第6天第1-2节 → 第1天第5-6节",
            "第1天当前占用：[1]高等数学(1-2节) [2]英语(3-4节) [6]线代(5-6节)，占用6/12。",
            "第6天当前占用：[4]体育(1-2节) [2]英语(5-6节)，占用4/12。",
        ]
    )


def test_batch_move_success_layout(tools: Toolbox):
    """Tests batch_move's success reply (spec §5.4): each move, then each target day."""
    reply = tools.call(
        "batch_move",
        {
            "moves": [
                {"task_id": 4, "new_day": 3, "new_slot_start": 1},
                {"task_id": 6, "new_day": 5, "new_slot_start": 3},
                {"task_id": 8, "new_day": 9, "new_slot_start": 5},
            ]
        },
    )
    assert reply == "\n".join(
        [
            "批量移动完成，3个任务全部成功：",
            "  [4]体育 → 第3天第1-2节",
            "  [6]线代 → 第5天第3-4节",
            "  [8]程序设计 → 第9天第5-6节",
            "第3天当前占用：[4]体育(1-2节)，占用2/12。",
            "第5天当前占用：[6]线代(3-4节)，占用2/12。",
            "第9天当前占用：[8]程序设计(5-6节)，占用2/12。",
        ]
    )


def test_batch_move_conflict_matches_spec(tools: Toolbox):
    """Tests batch_move's failure reply verbatim (spec §5.4) and the full rollback."""
    tools.call("place", {"task_id": 3, "day": 5, "slot_start": 1})
    before = tools.state.to_json()
    reply = tools.call(
        "batch_move",
        {
            "moves": [
                {"task_id": 4, "new_day": 3, "new_slot_start": 1},
                {"task_id": 6, "new_day": 5, "new_slot_start": 3},
            ]
        },
    )
    assert reply == (
        "批量移动失败，全部回滚，无任何变更。\n"
        "冲突：[6]线代 → 第5天第3-4节，该位置已被 [3]复习线代(1-3节) 占用。"
    )
    assert tools.state.to_json() == before


def test_unplace_success_matches_spec(tools: Toolbox):
    """Tests unplace's success reply verbatim (spec §5.5)."""
    tools.call("place", {"task_id": 3, "day": 5, "slot_start": 1})
    tools.call("place", {"task_id": 7, "day": 9, "slot_start": 1})
    assert tools.call("unplace", {"task_id": 3}) == "\n".join(
        [
            "已将 [3]复习线代 从第5天第1-3节移除，恢复为待安排状态。",
            "第5天当前占用：0/12。",
            "待安排任务剩余：2个。",
        ]
    )


REFUSALS = [
    # spec §5.1: a task that is not pending
    (
        "place",
        {"task_id": 1, "day": 5, "slot_start": 1},
        "放置失败：[1]高等数学 不是待安排任务，无法放置。",
    ),
    # spec §5.2: a locked course
    (
        "move",
        {"task_id": 1, "new_day": 9, "new_slot_start": 1},
        "移动失败：[1]高等数学 是固定课程，不可移动。",
    ),
    # spec §5.2: a pending task
    (
        "move",
        {"task_id": 3, "new_day": 9, "new_slot_start": 1},
        "移动失败：[3]复习线代 当前为待安排状态，请使用 place 放置。",
    ),
    # spec §5.3: a locked task in a swap
    ("swap", {"task_a": 1, "task_b": 6}, "交换失败：[1]高等数学 是固定课程，不可交换。"),
    # spec §5.5: a locked course
    ("unplace", {"task_id": 1}, "移除失败：[1]高等数学 是固定课程，不可移除。"),
    # DESIGN: a task with several blocks needs from_day
    (
        "move",
        {"task_id": 2, "new_day": 9, "new_slot_start": 1},
        "移动失败：[2]英语 有2个时段块（第1天第3-4节、第6天第1-2节），请用 from_day 指定要移动的块。",
    ),
    (
        "unplace",
        {"task_id": 5},
        "移除失败：[5]物理 有2个时段块（第2天第3-4节、第8天第3-4节），无法整体移除。",
    ),
    ("swap", {"task_a": 6, "task_b": 6}, "交换失败：[6]线代 不能与自身交换。"),
    ("unplace", {"task_id": 3}, "移除失败：[3]复习线代 当前为待安排状态，无需移除。"),
    ("place", {"task_id": 42, "day": 1, "slot_start": 1}, "放置失败：任务 [42] 不存在。"),
    (
        "place",
        {"task_id": 3, "day": 14, "slot_start": 1},
        "放置失败：第14天超出规划窗口（第1-13天）。",
    ),
    (
        "place",
        {"task_id": 3, "day": 3, "slot_start": 11},
        "放置失败：[3]复习线代 需3个时段，从第11节开始到第13节，超出每天12节。",
    ),
    (
        "batch_move",
        {
            "moves": [
                {"task_id": 6, "new_day": 9, "new_slot_start": 1},
                {"task_id": 1, "new_day": 9, "new_slot_start": 5, "from_day": 1},
            ]
        },
        "批量移动失败，全部回滚，无任何变更。\n原因：[1]高等数学 是固定课程，不可移动。",
    ),
    (
        "batch_move",
        {
            "moves": [
                {"task_id": 6, "new_day": 9, "new_slot_start": 1},
                {"task_id": 6, "new_day": 9, "new_slot_start": 5},
            ]
        },
        "批量移动失败，全部回滚，无任何变更。\n原因：[6]线代 在本次批量中出现多次。",
    ),
    # DECISION: a move onto the task's own place is refused, so nothing is logged
    (
        "move",
        {"task_id": 6, "new_day": 4, "new_slot_start": 3},
        "移动失败：[6]线代 已在第4天第3-4节，无需移动。",
    ),
    (
        "batch_move",
        {"moves": [{"task_id": 6, "new_day": 4, "new_slot_start": 3}]},
        "批量移动失败，全部回滚，无任何变更。\n原因：[6]线代 已在第4天第3-4节，无需移动。",
    ),
    # issue 24 item 1: a guest holds exactly one block, so no block of [2]英语 (two blocks)
    # goes into the water course [10]思政
    (
        "move",
        {"task_id": 2, "new_day": 7, "new_slot_start": 1, "from_day": 6},
        "移动失败：第7天第1-2节位于 [10]思政 的可嵌入时段，但 [2]英语 有2个时段块"
        "（第1天第3-4节、第6天第1-2节），只有单块任务可以嵌入。\n"
        "第7天当前占用：[10]思政(1-2节)，占用2/12。空闲时段：第3-12节。",
    ),
    (
        "batch_move",
        {"moves": [{"task_id": 2, "new_day": 7, "new_slot_start": 1, "from_day": 1}]},
        "批量移动失败，全部回滚，无任何变更。\n原因：第7天第1-2节位于 [10]思政 的可嵌入时段，"
        "但 [2]英语 有2个时段块（第1天第3-4节、第6天第1-2节），只有单块任务可以嵌入。",
    ),
    # issue 24 item 11: status and lock (of either task) before the shape of the blocks
    ("swap", {"task_a": 2, "task_b": 1}, "交换失败：[1]高等数学 是固定课程，不可交换。"),
    (
        "swap",
        {"task_a": 2, "task_b": 3},
        "交换失败：[3]复习线代 当前为待安排状态，请使用 place 放置。",
    ),
    (
        "batch_move",
        {
            "moves": [
                {"task_id": 2, "new_day": 9, "new_slot_start": 1},
                {"task_id": 1, "new_day": 9, "new_slot_start": 5, "from_day": 1},
            ]
        },
        "批量移动失败，全部回滚，无任何变更。\n原因：[1]高等数学 是固定课程，不可移动。",
    ),
    # from_day on a single-block task must name its block's day
    (
        "move",
        {"task_id": 6, "new_day": 9, "new_slot_start": 1, "from_day": 2},
        "移动失败：[6]线代 在第2天没有时段块（它的时段块：第4天第3-4节），from_day 有误。",
    ),
]


@pytest.mark.parametrize(("name", "args", "reply"), REFUSALS)
def test_refusal_replies(tools: Toolbox, name, args, reply):
    """Tests each refusal's exact reply and that the state and change log stay as they were."""
    before = tools.state.to_json()
    assert tools.call(name, args) == reply
    assert tools.state.to_json() == before and tools.changes == []


def test_swap_duration_mismatch_matches_spec():
    """Tests swap's duration-mismatch reply against the spec's [5]物理 / [2]英语 example."""
    state = ScheduleState.from_json(
        {
            "window": {"total_days": 3},
            "tasks": [
                {
                    "state_id": 2,
                    "name": "英语",
                    "status": "existing",
                    "slots": [{"day": 1, "slot_start": 3, "slot_end": 4}],
                },
                {
                    "state_id": 5,
                    "name": "物理",
                    "status": "existing",
                    "slots": [{"day": 2, "slot_start": 1, "slot_end": 4}],
                },
            ],
        }
    )
    assert Toolbox(state).call("swap", {"task_a": 5, "task_b": 2}) == (
        "交换失败：[5]物理 占4个时段，[2]英语 占2个时段，时长不同无法直接交换。"
    )


def test_host_with_guest_and_taken_block(tools: Toolbox):
    """Tests the refusals around a host that holds a guest."""
    tools.call("place", {"task_id": 7, "day": 7, "slot_start": 1})
    assert tools.call("move", {"task_id": 10, "new_day": 9, "new_slot_start": 1}) == (
        "移动失败：[10]思政 当前嵌入了 [7]写实验报告，请先移走嵌入任务。"
    )
    reply = tools.call("place", {"task_id": 9, "day": 7, "slot_start": 1})
    assert reply.splitlines()[0] == (
        "放置失败：第7天第1-2节位于 [10]思政 的可嵌入时段，但已嵌入 [7]写实验报告。"
    )


def test_writes_are_logged(tools: Toolbox):
    """Tests that each applied write appends its changes and a refusal appends none."""
    tools.call("place", {"task_id": 3, "day": 5, "slot_start": 1})
    tools.call("move", {"task_id": 1, "new_day": 9, "new_slot_start": 1})  # refused
    tools.call("move", {"task_id": 3, "new_day": 6, "new_slot_start": 5})
    log = [
        (c.op, c.task_id, c.block_before and c.block_before.day, c.block_after.day)
        for c in tools.changes
    ]
    assert log == [("place", 3, None, 5), ("move", 3, 5, 6)]
    assert tools.changes[0].to_dict()["status_after"] == "suggested"

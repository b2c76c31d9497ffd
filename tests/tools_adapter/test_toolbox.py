"""Tests that Toolbox.call answers bad input with a clear reply and never raises."""

from __future__ import annotations

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state import SelfCheckError

BAD_CALLS = [
    # unknown tool: names the tool and lists the real ones
    ("nope", {}, "未知工具：nope。可用工具：get_overview"),
    # args that are not an object
    ("place", [1, 2], "参数错误：参数应为 JSON 对象。"),
    # a missing required argument
    ("place", {"task_id": 3, "day": 5}, "参数错误：缺少必填参数 slot_start。"),
    # an ill-typed argument (a string where an integer belongs)
    ("place", {"task_id": 3, "day": "五", "slot_start": 1}, "参数错误：参数 day 应为整数"),
    # a float is not an integer
    ("move", {"task_id": 6, "new_day": 2.5, "new_slot_start": 1}, "参数错误：参数 new_day 应为整数"),
    # booleans are not ids
    ("unplace", {"task_id": True}, "参数错误：参数 task_id 应为整数"),
    # an id below the static range
    ("get_task_info", {"task_id": 0}, "参数错误：参数 task_id=0 超出范围（应 ≥ 1）。"),
    # a period above the static range
    ("query_range", {"day": 1, "slot_start": 99}, "参数错误：参数 slot_start=99 超出范围（应 ≤ 24）。"),
    # an unknown argument
    ("get_overview", {"verbose": True}, "参数错误：未知参数 verbose。"),
    # a bad enum value
    ("list_tasks", {"status": "done"}, "参数错误：参数 status 取值无效"),
    # an empty batch
    ("batch_move", {"moves": []}, "参数错误：参数 moves 至少 1 项。"),
    # an oversized batch
    ("batch_move", {"moves": [{"task_id": 6, "new_day": 1, "new_slot_start": 1}] * 51},
     "参数错误：参数 moves 最多 50 项。"),
    # a broken item inside a batch names its index
    ("batch_move", {"moves": [{"task_id": 6, "new_day": 1}]}, "参数错误：缺少必填参数 moves[0].new_slot_start。"),
    # ids far beyond anything in the window are a reply, not a crash
    ("swap", {"task_a": 2**31 - 1, "task_b": 6}, "交换失败：任务 [2147483647] 不存在。"),
    ("swap", {"task_a": 2**40, "task_b": 6}, "参数错误：参数 task_a="),
]


@pytest.mark.parametrize(("name", "args", "start"), BAD_CALLS)
def test_bad_calls_get_clear_replies(tools: Toolbox, name, args, start):
    """Tests each kind of bad input: a Chinese reply that says what is wrong, state unchanged."""
    before = tools.state.to_json()
    reply = tools.call(name, args)
    assert reply.startswith(start), reply
    assert tools.state.to_json() == before and tools.changes == []


def test_none_args_mean_no_args(tools: Toolbox):
    """Tests that args=None is the same as {} for tools without parameters."""
    assert tools.call("get_overview", None) == tools.call("get_overview", {})


def test_no_state_loaded():
    """Tests that a state tool on a Toolbox without a window says so."""
    assert Toolbox().call("get_overview", {}) == "当前没有加载日程，无法调用 get_overview。"


def test_registry_names_and_kinds(tools: Toolbox):
    """Tests the read/write split of the spec's tools."""
    names = tools.tool_names()
    for name in ("get_overview", "query_range", "find_free", "list_tasks", "get_task_info"):
        assert name in names and not tools.is_write_tool(name)
    for name in ("place", "move", "swap", "batch_move", "unplace"):
        assert name in names and tools.is_write_tool(name)
    assert not tools.is_write_tool("no_such_tool")


def test_self_check_catches_a_grid_out_of_step(spec_tools_window: ScheduleState):
    """Tests that self-check mode fails loudly when the grid drifts from the tasks."""
    tb = Toolbox(spec_tools_window, self_check=True)
    spec_tools_window.grid.owner[12, 11] = 99  # corrupt the incremental grid
    with pytest.raises(SelfCheckError, match="day 13 period 12"):
        tb.call("place", {"task_id": 3, "day": 5, "slot_start": 1})


def test_internal_error_is_a_reply(monkeypatch, tools: Toolbox):
    """Tests that an unexpected exception in a handler comes back as a reply, not a traceback."""
    from smartflow_engine.tools_adapter import read_tools

    def boom(*args):
        raise RuntimeError("bug")

    monkeypatch.setattr(read_tools, "_query_day", boom)
    assert tools.call("query_range", {"day": 1}) == "内部错误：query_range 执行失败（RuntimeError）。"


def test_json_tool_errors_keep_the_tool_shape():
    """Tests that an argument error of upsert_task_class comes in that tool's own reply shape."""
    import json

    reply = json.loads(Toolbox().call("upsert_task_class", {"id": "x"}))
    assert reply["success"] is False and reply["error_code"] == "invalid_args"
    assert "task_class_id" in reply and "metric_schema" not in reply


def test_strict_mode_nulls_mean_not_given(tools: Toolbox):
    """Tests that null for an optional argument (what OpenAI strict mode sends) means its default."""
    assert tools.call("list_tasks", {"category": None, "status": None}) == tools.call("list_tasks", {})
    assert tools.call("place", {"task_id": 3, "day": None, "slot_start": 1}).startswith(
        "参数错误：参数 day 应为整数")

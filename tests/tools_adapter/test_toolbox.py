"""Tests that Toolbox.call answers bad input with a clear reply and never raises."""

from __future__ import annotations

import pytest

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.state import SelfCheckError


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


BAD_CALLS = [
    # unknown tool: names the tool and lists the real ones
    ("nope", {}, "调用失败：未知工具 nope。可用工具：get_overview"),
    # args that are not an object
    ("place", [1, 2], "放置失败：参数错误，参数应为 JSON 对象。"),
    # a missing required argument
    ("place", {"task_id": 3, "day": 5}, "放置失败：参数错误，缺少必填参数 slot_start。"),
    # an ill-typed argument (a string where an integer belongs)
    (
        "place",
        {"task_id": 3, "day": "五", "slot_start": 1},
        "放置失败：参数错误，参数 day 应为整数",
    ),
    # a float is not an integer
    (
        "move",
        {"task_id": 6, "new_day": 2.5, "new_slot_start": 1},
        "移动失败：参数错误，参数 new_day 应为整数",
    ),
    # booleans are not ids
    ("unplace", {"task_id": True}, "移除失败：参数错误，参数 task_id 应为整数"),
    # an id below the static range
    ("get_task_info", {"task_id": 0}, "查询失败：参数错误，参数 task_id=0 超出范围（应 ≥ 1）。"),
    # a period above the static range
    (
        "query_range",
        {"day": 1, "slot_start": 99},
        "查询失败：参数错误，参数 slot_start=99 超出范围（应 ≤ 24）。",
    ),
    # an unknown argument
    ("get_overview", {"verbose": True}, "查询失败：参数错误，未知参数 verbose。"),
    # a bad enum value
    ("list_tasks", {"status": "done"}, "查询失败：参数错误，参数 status 取值无效"),
    # an empty batch
    ("batch_move", {"moves": []}, "批量移动失败：参数错误，参数 moves 至少 1 项。"),
    # an oversized batch
    (
        "batch_move",
        {"moves": [{"task_id": 6, "new_day": 1, "new_slot_start": 1}] * 51},
        "批量移动失败：参数错误，参数 moves 最多 50 项。",
    ),
    # a broken item inside a batch names its index
    (
        "batch_move",
        {"moves": [{"task_id": 6, "new_day": 1}]},
        "批量移动失败：参数错误，缺少必填参数 moves[0].new_slot_start。",
    ),
    # ids far beyond anything in the window are a reply, not a crash
    ("swap", {"task_a": 2**31 - 1, "task_b": 6}, "交换失败：任务 [2147483647] 不存在。"),
    ("swap", {"task_a": 2**40, "task_b": 6}, "交换失败：参数错误，参数 task_a="),
    # a lone surrogate in a string argument is named, not echoed
    (
        "list_tasks",
        {"category": "\ud800x"},
        "查询失败：参数错误，参数 category 含无法编码的字符（孤立的 UTF-16 代理项 U+D800），请改用正常的文本。",
    ),
    # ... also deep inside a batch item's key
    (
        "batch_move",
        {"moves": [{"task_id": 6, "new_day": 9, "new_slot_start": 1, "\udc00": 1}]},
        "批量移动失败：参数错误，参数 moves[0] 含无法编码的字符（孤立的 UTF-16 代理项 U+DC00）",
    ),
    # a huge bad value is summarised, not echoed whole
    (
        "place",
        {"task_id": list(range(100_000)), "day": 1, "slot_start": 1},
        "放置失败：参数错误，参数 task_id 应为整数，收到 含100000项的数组。",
    ),
    (
        "list_tasks",
        {"category": "学" * 5000},
        "查询失败：参数错误，参数 category 最多 64 个字符（收到 5000 个）。",
    ),
    # a deeply nested bad value is quoted depth-limited
    (
        "place",
        {"task_id": _nested(900), "day": 1, "slot_start": 1},
        "放置失败：参数错误，参数 task_id 应为整数，收到 [[[[...]]]]。",
    ),
    # an unknown tool with a huge or unencodable name
    ("x" * 10_000, {}, "调用失败：未知工具 " + "x" * 40 + "…（共10000个字符）。"),
    ("\ud800", {}, "调用失败：未知工具 \\ud800。"),
]


@pytest.mark.parametrize(("name", "args", "start"), BAD_CALLS)
def test_bad_calls_get_clear_replies(tools: Toolbox, name, args, start):
    """Tests each kind of bad input: a short Chinese reply that says what is wrong, flagged as an
    error, encodable as UTF-8, state unchanged."""
    before = tools.state.to_json()
    result = tools.invoke(name, args)
    assert result.text.startswith(start), result.text
    assert result.is_error and result.text == tools.call(name, args)
    assert len(result.text) < 2000
    result.text.encode("utf-8")  # a lone surrogate would raise here
    assert tools.state.to_json() == before and tools.changes == []


def test_none_args_mean_no_args(tools: Toolbox):
    """Tests that args=None is the same as {} for tools without parameters."""
    assert tools.call("get_overview", None) == tools.call("get_overview", {})


def test_no_state_loaded():
    """Tests that a state tool on a Toolbox without a window says so."""
    assert (
        Toolbox().call("get_overview", {}) == "查询失败：当前没有加载日程，无法调用 get_overview。"
    )


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
    from smartflow_engine.tools_adapter.tools import read as read_tools

    def boom(*args):
        raise RuntimeError("bug")

    monkeypatch.setattr(read_tools, "_query_day", boom)
    assert tools.call("query_range", {"day": 1}) == "查询失败：内部错误（RuntimeError）。"


def test_json_tool_errors_keep_the_tool_shape():
    """Tests that an argument error of upsert_task_class comes in that tool's own reply shape."""
    import json

    reply = json.loads(Toolbox().call("upsert_task_class", {"id": "x"}))
    assert reply["success"] is False and reply["error_code"] == "invalid_args"
    assert "task_class_id" in reply and "metric_schema" not in reply


def test_strict_mode_nulls_mean_not_given(tools: Toolbox):
    """Tests that null for an optional argument (what OpenAI strict mode sends) means its default."""
    assert tools.call("list_tasks", {"category": None, "status": None}) == tools.call(
        "list_tasks", {}
    )
    assert tools.call("place", {"task_id": 3, "day": None, "slot_start": 1}).startswith(
        "放置失败：参数错误，参数 day 应为整数"
    )


# Every pydantic error type an argument model can raise, provoked through a real tool.
ENGLISH_PRONE = [
    ("propose_placement", {"time_limit_s": float("nan")}),  # finite_number
    ("propose_placement", {"time_limit_s": "fast"}),  # float_parsing
    ("propose_placement", {"weights": {"speed": 1}}),  # literal_error on a map key
    ("propose_placement", {"weights": {"late": -1}}),  # greater_than_equal on a map value
    ("propose_placement", {"weights": []}),  # dict_type
    ("propose_placement", {"include_suggested": "yes"}),  # bool_type
    ("apply_proposal", {"placements": [{"task_id": 3, "day": 5, "slot_start": 1}], "seed": 1}),
    ("apply_proposal", {"placements": []}),  # too_short
    ("spread_even", {"category": ""}),  # string_too_short
    ("list_tasks", {"category": 5}),  # string_type
    ("list_tasks", {"status": "done"}),  # literal_error
    ("batch_move", {"moves": "all"}),  # list_type
    ("batch_move", {"moves": ["x"]}),  # model_type
    ("place", {"task_id": 3.5, "day": 5, "slot_start": 1}),  # int_type from a float
    ("upsert_task_class", {"task_class": {"time_of_day_weight": 2}}),  # less_than_equal
    ("upsert_task_class", {"task_class": {"strategy": "fast"}}),
]


def _allowed_words() -> set[str]:
    """Argument names and enumerated values: the only Latin words a reply may quote."""
    from smartflow_engine.tools_adapter.core import registry
    from smartflow_engine.tools_adapter.core.schemas import input_schema

    words = {"confirm", "True", "None", "nan", "inf", "null", "true", "false"}

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("properties",) and isinstance(value, dict):
                    words.update(value)
                if key == "enum":
                    words.update(str(v) for v in value)
                if key != "description":
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for spec in registry.TOOLS:
        walk(input_schema(spec.args_model))
    return words


@pytest.mark.parametrize(("name", "args"), ENGLISH_PRONE)
def test_validation_messages_have_no_english(tools: Toolbox, name, args):
    """Tests that argument errors are Chinese: the only Latin words in the reply are argument
    names, enumerated values and quoted input (pydantic's English messages never leak)."""
    import json
    import re

    reply = tools.call(name, args)
    if reply.startswith("{"):
        reply = json.loads(reply)["error"]
    assert "失败：参数错误，" in reply or "参数" in reply, reply
    allowed = _allowed_words() | {str(v) for v in args.values() if isinstance(v, str)}
    allowed |= {k for v in args.values() if isinstance(v, dict) for k in v}
    allowed |= {str(x) for v in args.values() if isinstance(v, dict) for x in v.values()}
    stray = [w for w in re.findall(r"[A-Za-z_]{2,}", reply) if w not in allowed]
    assert not stray, reply


def test_refusals_are_flagged_as_errors(tools: Toolbox):
    """Tests that Toolbox.invoke flags a refusal (conflict, locked, missing id, day outside the
    window) as an error with the spec's reply text unchanged, and a success as no error."""
    refusals = [
        ("place", {"task_id": 3, "day": 1, "slot_start": 1}),  # conflict
        ("move", {"task_id": 1, "new_day": 9, "new_slot_start": 1}),  # locked
        ("get_task_info", {"task_id": 99}),  # no such task
        ("query_range", {"day": 14}),  # outside the window
        ("find_free", {"duration": 2, "day": 14}),
        ("apply_proposal", {"placements": [{"task_id": 99, "day": 1, "slot_start": 1}]}),
        ("spread_even", {"category": "不存在"}),
        ("analyze_load", {"day_from": 14}),  # JSON envelope with success=false
    ]
    for name, args in refusals:
        result = tools.invoke(name, args)
        assert result.is_error, (name, result.text)
        assert result.text == tools.call(name, args)
    for name, args in [
        ("get_overview", {}),
        ("place", {"task_id": 3, "day": 5, "slot_start": 1}),
        ("analyze_load", {}),
    ]:
        result = tools.invoke(name, args)
        assert not result.is_error, (name, result.text)


def test_no_schedule_offers_only_tools_that_work_without_one():
    """Tests that a Toolbox without a schedule lists (and publishes schemas for) only the tools
    that need none."""
    from smartflow_engine.tools_adapter.core import registry

    tb = Toolbox()
    names = tb.tool_names()
    assert names == [s.name for s in registry.TOOLS if not s.needs_state] and names
    assert [s["name"] for s in tb.schemas("mcp")] == names
    assert [s["function"]["name"] for s in tb.schemas("openai")] == names
    for name in names:
        assert "当前没有加载日程" not in tb.invoke(name, None).text

"""Argument models shared by the tools: strict, bounded, ``extra="forbid"``.

Static bounds live here (ids, days, periods, batch sizes); bounds that depend on the loaded window
(``day <= total_days``) are checked by the handlers, which reply in the spec's words.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..state.model import MAX_DAYS, MAX_SLOTS_PER_DAY, MAX_TASK_ID

TaskId = Annotated[int, Field(strict=True, ge=1, le=MAX_TASK_ID, description="任务 ID（state_id）")]
Day = Annotated[int, Field(strict=True, ge=1, le=MAX_DAYS, description="天索引，从 1 开始")]
Slot = Annotated[int, Field(strict=True, ge=1, le=MAX_SLOTS_PER_DAY, description="节次，1-12")]
Duration = Annotated[
    int, Field(strict=True, ge=1, le=MAX_SLOTS_PER_DAY, description="需要的连续时段数")
]


class Args(BaseModel):
    """Base of every tool's argument model."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(Args):
    pass


_TYPE_WORDS = {
    "int_type": "整数", "int_parsing": "整数", "int_from_float": "整数",
    "string_type": "字符串", "bool_type": "布尔值", "bool_parsing": "布尔值",
    "list_type": "数组", "dict_type": "对象", "model_type": "对象", "model_attributes_type": "对象",
    "float_type": "数字", "float_parsing": "数字",
}


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "参数"


def describe_validation_error(exc: ValidationError) -> str:
    """One Chinese sentence for the first problem of a pydantic validation error."""
    err = exc.errors()[0]
    kind, name, ctx = err["type"], _loc(tuple(err["loc"])), err.get("ctx") or {}
    if kind == "missing":
        return f"缺少必填参数 {name}。"
    if kind == "extra_forbidden":
        return f"未知参数 {name}。"
    if kind in _TYPE_WORDS:
        return f"参数 {name} 应为{_TYPE_WORDS[kind]}，收到 {err.get('input')!r}。"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤",
              "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "")
        return f"参数 {name}={err.get('input')!r} 超出范围（应 {op} {bound}）。"
    if kind == "too_long":
        return f"参数 {name} 最多 {ctx.get('max_length')} 项。"
    if kind == "too_short":
        return f"参数 {name} 至少 {ctx.get('min_length')} 项。"
    if kind in ("literal_error", "enum"):
        return f"参数 {name} 取值无效（{ctx.get('expected', '')}），收到 {err.get('input')!r}。"
    return f"参数 {name} 无效：{err.get('msg')}。"

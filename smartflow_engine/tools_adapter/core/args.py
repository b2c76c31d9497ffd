"""Argument models shared by the tools: strict, bounded, ``extra="forbid"``.

Static bounds live here (ids, days, periods, batch sizes); bounds that depend on the loaded window
(``day <= total_days``) are checked by the handlers, which reply in the spec's words.
"""

from __future__ import annotations

import reprlib
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ...state.model import MAX_DAYS, MAX_SLOTS_PER_DAY, MAX_TASK_ID

TaskId = Annotated[int, Field(strict=True, ge=1, le=MAX_TASK_ID, description="任务 ID")]
Day = Annotated[int, Field(strict=True, ge=1, le=MAX_DAYS, description="第几天（从 1 起）")]
Slot = Annotated[
    int,
    Field(strict=True, ge=1, le=MAX_SLOTS_PER_DAY, description="节次，1 到每天的节数（通常 12）"),
]
Duration = Annotated[int, Field(strict=True, ge=1, le=MAX_SLOTS_PER_DAY, description="连续节数")]


class Args(BaseModel):
    """Base of every tool's argument model."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_lone_surrogates(cls, data: Any) -> Any:
        # A lone UTF-16 surrogate ("\ud800") cannot be encoded as UTF-8: echoed in a reply it
        # would break the HTTP and MCP adapters, so it is refused here, naming where it sits.
        found = find_lone_surrogate(data)
        if found is not None:
            path, char = found
            raise PydanticCustomError(
                "lone_surrogate", "lone surrogate", {"path": path, "char": f"U+{ord(char):04X}"}
            )
        return data


class NoArgs(Args):
    pass


MAX_ECHO = 40  # characters of a bad value (or a name) quoted back in a reply


def find_lone_surrogate(data: Any, max_depth: int = 64) -> tuple[str, str] | None:
    """``(path, char)`` of the first string (value or key) in ``data`` holding a lone surrogate.

    Iterative, so deep input cannot exhaust the stack; nesting beyond ``max_depth`` is not
    searched (the models reject such input anyway).
    """
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, str):
            bad = _lone_surrogate(value)
            if bad is not None:
                return path or "参数", bad
        elif depth < max_depth and isinstance(value, dict):
            for key, sub in reversed(list(value.items())):
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and (bad := _lone_surrogate(key)) is not None:
                    return (path or "参数"), bad
                stack.append((name, sub, depth + 1))
        elif depth < max_depth and isinstance(value, list | tuple):
            for i in range(len(value) - 1, -1, -1):
                stack.append((f"{path}[{i}]", value[i], depth + 1))
    return None


def _lone_surrogate(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


_ECHO = reprlib.Repr()
_ECHO.maxlevel, _ECHO.maxlist, _ECHO.maxtuple, _ECHO.maxdict = 3, 5, 5, 5
_ECHO.maxstring, _ECHO.maxother = MAX_ECHO, MAX_ECHO


def summarize(value: Any, limit: int = MAX_ECHO) -> str:
    """A short quote of a (possibly huge or deeply nested) bad value: ``'五'``, ``[1, 2]``,
    ``含100000项的数组``, ``'学学…'…（共5000个字符）``."""
    if isinstance(value, list | tuple) and len(value) > _ECHO.maxlist:
        return f"含{len(value)}项的数组"
    if isinstance(value, dict) and len(value) > _ECHO.maxdict:
        return f"含{len(value)}个键的对象"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}…（共{len(value)}个字符）"
    text = _ECHO.repr(value)  # depth- and size-limited
    return text if len(text) <= 2 * limit else text[: 2 * limit] + "…"


def short_name(name: str, limit: int = MAX_ECHO) -> str:
    """A name (tool or argument) as echoed in a reply: escaped if not encodable, capped."""
    if _lone_surrogate(name) is not None:
        name = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name if len(name) <= limit else f"{name[:limit]}…（共{len(name)}个字符）"


_TYPE_WORDS = {
    "int_type": "整数",
    "int_parsing": "整数",
    "int_from_float": "整数",
    "string_type": "字符串",
    "bool_type": "布尔值",
    "bool_parsing": "布尔值",
    "list_type": "数组",
    "tuple_type": "数组",
    "set_type": "数组",
    "dict_type": "对象",
    "model_type": "对象",
    "model_attributes_type": "对象",
    "float_type": "数字",
    "float_parsing": "数字",
    "decimal_type": "数字",
    "none_required": "null",
}
_BOUND_OPS = {
    "greater_than_equal": "≥",
    "greater_than": ">",
    "less_than_equal": "≤",
    "less_than": "<",
}


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return short_name(out) if out else "参数"


def _choices(expected: Any) -> str:
    """pydantic's ``"'a', 'b' or 'c'"`` as ``'a'、'b'、'c'``."""
    return str(expected).replace(" or ", "、").replace(", ", "、")


def describe_validation_error(exc: ValidationError) -> str:
    """One Chinese sentence for the first problem of a pydantic validation error.

    Every pydantic error type the argument models can raise has its own Chinese words; a bad
    value is quoted only in short (:func:`summarize`), so a huge input never comes back whole.
    """
    err = exc.errors()[0]
    kind, ctx = err["type"], err.get("ctx") or {}
    loc = tuple(err["loc"])
    is_key = bool(loc) and loc[-1] == "[key]"
    name = _loc(loc[:-1] if is_key else loc)
    value = summarize(err.get("input"))
    if kind == "lone_surrogate":
        return (
            f"参数 {short_name(str(ctx.get('path', name)))} 含无法编码的字符"
            f"（孤立的 UTF-16 代理项 {ctx.get('char', '')}），请改用正常的文本。"
        )
    if kind == "missing":
        return f"缺少必填参数 {name}。"
    if kind == "extra_forbidden":
        return f"未知参数 {name}。"
    if is_key:
        return f"参数 {name} 的键 {value} 无效" + (
            f"（可选：{_choices(ctx['expected'])}）。" if "expected" in ctx else "。"
        )
    if kind in _TYPE_WORDS:
        return f"参数 {name} 应为{_TYPE_WORDS[kind]}，收到 {value}。"
    if kind == "finite_number":
        return f"参数 {name} 应为有限的数字，收到 {value}。"
    if kind in _BOUND_OPS:
        bound = next(iter(ctx.values()), "")
        return f"参数 {name}={value} 超出范围（应 {_BOUND_OPS[kind]} {bound}）。"
    if kind == "multiple_of":
        return f"参数 {name}={value} 应为 {ctx.get('multiple_of')} 的整数倍。"
    if kind == "too_long":
        return f"参数 {name} 最多 {ctx.get('max_length')} 项。"
    if kind == "too_short":
        return f"参数 {name} 至少 {ctx.get('min_length')} 项。"
    if kind == "string_too_long":
        return f"参数 {name} 最多 {ctx.get('max_length')} 个字符（收到 {len(str(err.get('input')))} 个）。"
    if kind == "string_too_short":
        return f"参数 {name} 至少 {ctx.get('min_length')} 个字符。"
    if kind in ("literal_error", "enum"):
        return f"参数 {name} 取值无效（可选：{_choices(ctx.get('expected', ''))}），收到 {value}。"
    if kind in ("value_error", "assertion_error"):
        # Our own validators raise Chinese messages; pydantic's prefix is dropped.
        msg = str(ctx.get("error") or err.get("msg", ""))
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if any("\u4e00" <= ch <= "\u9fff" for ch in msg):
            return msg.rstrip("。") + "。"
    return f"参数 {name} 取值无效，收到 {value}。"

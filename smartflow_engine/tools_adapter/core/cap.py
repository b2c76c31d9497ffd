"""The reply cap (issue 45 item 6): no reply a model reads is longer than :data:`MAX_REPLY_BYTES`.

On a long window a read can answer hundreds of kilobytes (1000 days x 24 periods: get_overview
~150 KB, analyze_load ~190 KB, analyze_health with ``detail=full`` ~600 KB, an infeasible
check_feasibility naming 8,000 tasks on one line ~150 KB), more than a model's turn should hold.
The call pipeline caps every reply it returns (:func:`cap_reply`, after the loop's evidence
lines), the same on every surface, keeping what the model needs to go on:

- **text**: the first lines up to the cap; a single line longer than :data:`MAX_LINE_BYTES`
  (a list of thousands of tasks) keeps its head. A last line gives the totals (lines and size of
  the whole reply, lines shown) and how to narrow the question (:data:`NARROW`). The head of
  every text reply already holds its totals (days, periods, tasks by status).
- **JSON**: the longest lists are cut to their first items until the reply fits (the longest
  first, each down to the next longest, so several long lists keep alike), and a ``truncated``
  object says which (``{"metrics.days": {"total": 1000, "shown": 212}}``), the
  size of the whole reply and how to narrow the question. Every count, summary and close
  signal stays: they are short, the lists are what grows with the window. A reply no cut
  brings under the cap is the tool's own failure, ``reply_too_long``, with the same advice.

A refusal stays a refusal (its stable code kept). The cap is a function of the reply alone, so the
same call gives the same capped reply.
"""

from __future__ import annotations

import json
from typing import Any

from .spec import Refused, ToolSpec, refused

MAX_REPLY_BYTES = 64 * 1024
MAX_LINE_BYTES = 4 * 1024
# Room kept for the closing line (text) or the ``truncated`` object (JSON).
_RESERVE = 1024

# How to ask for less, per tool (the arguments that page or filter); others get the generic line.
NARROW: dict[str, str] = {
    "get_overview": "可用 query_range 查看某天，或用 analyze_load 的 day_from/day_to 看一段天",
    "list_tasks": "可按 status 或 category 过滤",
    "find_free": "可用 day 限定某天",
    "check_feasibility": "完整的任务清单可用 list_tasks 按状态与类别查看",
    "propose_placement": "用 apply_proposal 应用后可用 query_range 逐天查看",
    "analyze_load": "可用 day_from/day_to 或 scope=week、week_from/week_to 缩小范围",
    "analyze_tolerance": "可用 day_from/day_to 或 scope=week、week_from/week_to 缩小范围",
    "analyze_context": "可用 day_from/day_to 缩小范围",
    "analyze_subjects": "可用 category 只看一个科目",
    "analyze_health": "可用 dimensions 只看部分维度，或 detail=summary",
    "query_target_tasks": "可用 limit、target_filter 或 candidate_scope 缩小范围",
    "query_available_slots": "可用 limit 或 day_range 缩小范围",
    "get_round_log": "可用 offset/limit 翻页",
}
_GENERIC = "可用参数缩小查询范围"


def narrow_hint(tool: str) -> str:
    return NARROW.get(tool, _GENERIC)


def cap_reply(spec: ToolSpec, reply: str, limit: int | None = None) -> str:
    """``reply`` within ``limit`` UTF-8 bytes (default :data:`MAX_REPLY_BYTES`; see the module
    docstring); a reply that fits is returned as it is."""
    limit = MAX_REPLY_BYTES if limit is None else limit
    size = len(reply.encode("utf-8"))
    if size <= limit:
        return reply
    if spec.output == "json":
        return _cap_json(spec, reply, size, limit, narrow_hint(spec.name))
    text = _cap_text(reply, size, limit, narrow_hint(spec.name))
    if isinstance(reply, Refused):
        return refused(text, reply.error_code)
    return text


# ---------------------------------------------------------------------------------- text
def _head(text: str, budget: int) -> str:
    """The longest prefix of ``text`` within ``budget`` UTF-8 bytes."""
    return text.encode("utf-8")[:budget].decode("utf-8", "ignore")


def _cap_text(text: str, size: int, limit: int, hint: str) -> str:
    lines = text.split("\n")
    long_lines = 0
    shortened = []
    for line in lines:
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            long_lines += 1
            line = f"{_head(line, MAX_LINE_BYTES)}…（此行共{len(line)}字，已截断）"
        shortened.append(line)
    kept: list[str] = []
    used = 0
    for line in shortened:
        cost = len(line.encode("utf-8")) + 1
        if used + cost > limit - _RESERVE:
            break
        kept.append(line)
        used += cost
    parts = [f"回复共{len(lines)}行、{_kb(size)}，超过{_kb(limit)}上限"]
    if len(kept) < len(lines):
        parts.append(f"只显示前{len(kept)}行")
    if long_lines:
        parts.append(f"{long_lines}行过长只显示开头")
    return "\n".join([*kept, f"（{'，'.join(parts)}。{hint}。）"])


def _kb(size: int) -> str:
    return f"{size / 1024:.0f}KB"


# ---------------------------------------------------------------------------------- JSON
def _cap_json(spec: ToolSpec, reply: str, size: int, limit: int, hint: str) -> str:
    """The reply with its lists cut to their first items, the longest first and evenly (each
    list down to the next longest), until it fits; a reply that is not a JSON object, or that
    no cut brings under the cap, becomes the tool's own failure, ``reply_too_long``."""
    try:
        data = json.loads(reply)
    except ValueError:
        data = None
    if isinstance(data, dict):
        lists = _lists(data, "")
        over = len(_dump(data).encode("utf-8")) - (limit - _RESERVE)
        kept = _plan(lists, over)
        for path, (holder, key, sizes) in lists.items():
            if kept[path] < len(sizes):
                holder[key] = holder[key][: kept[path]]
        cuts = {p: {"total": len(s), "shown": kept[p]} for p, (_, _, s) in lists.items()}
        data["truncated"] = {
            "reply_kb": round(size / 1024, 1),
            "limit_kb": limit // 1024,
            "cut": {p: c for p, c in cuts.items() if c["shown"] < c["total"]},
            "hint": hint,
        }
        text = _dump(data)
        if len(text.encode("utf-8")) <= limit:
            return text
    return spec.error(
        "reply_too_long", f"回复共{_kb(size)}，超过{_kb(limit)}上限，无法截短。{hint}。"
    )


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _lists(node: dict[str, Any], path: str) -> dict[str, tuple[Any, Any, list[int]]]:
    """Every list of more than one item in ``node`` and its maps (not inside another list: that
    list is cut instead), by path: its holder, key and each item's size in bytes."""
    out: dict[str, tuple[Any, Any, list[int]]] = {}
    for key, value in node.items():
        sub = f"{path}.{key}" if path else str(key)
        if isinstance(value, list) and len(value) > 1:
            out[sub] = (node, key, [len(_dump(v).encode("utf-8")) + 2 for v in value])
        elif isinstance(value, dict):
            out.update(_lists(value, sub))
    return out


def _plan(lists: dict[str, tuple[Any, Any, list[int]]], over: int) -> dict[str, int]:
    """How many leading items each list keeps so that about ``over`` bytes go: the longest list
    gives items until it is no longer than the next (at least one a step), each keeps one."""
    kept = {p: len(s) for p, (_, _, s) in lists.items()}
    size = {p: sum(s) for p, (_, _, s) in lists.items()}
    while over > 0:
        open_ = [p for p in lists if kept[p] > 1]
        if not open_:
            break
        top = max(open_, key=lambda p: size[p])
        floor = max((size[p] for p in open_ if p != top), default=0)
        sizes = lists[top][2]
        while kept[top] > 1 and over > 0:
            kept[top] -= 1
            size[top] -= sizes[kept[top]]
            over -= sizes[kept[top]]
            if size[top] < floor:
                break
    return kept

"""Analysis tools (p1 §4.3-§4.7): analyze_load, analyze_subjects, analyze_context,
analyze_tolerance, analyze_health.

Read-only; each returns the analysis envelope as JSON text. Static argument checks live in the
models below (the Toolbox turns a violation into ``invalid_args``); window-dependent checks (days,
weeks, sizes beyond the day) are the analyzers', with ``out_of_range``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool

from ...analyzers import (
    AnalysisResult,
    analyze_context,
    analyze_health,
    analyze_load,
    analyze_subjects,
    analyze_tolerance,
)
from ...state.model import MAX_SLOTS_PER_DAY
from ..core.args import Args, Day
from ..core.spec import ToolContext, ToolSpec, json_error
from .close_text import annotate_close_signal

Level = Literal["strict", "normal", "relaxed"]
Scope = Literal["full", "week", "day_range"]
Week = Annotated[
    int, Field(strict=True, ge=0, le=10_000, description="周次（与 day_mapping 的 week 一致）")
]
Name = Annotated[str, Field(min_length=1, max_length=64)]

_LEVEL: Any = Field(default="normal", description="阈值档位")
_SCOPE: Any = Field(
    default=None, description="full=全窗口 / week=按周 / day_range=按天；不传则按所给范围推断"
)
_DAY_FROM: Any = Field(default=None, description="起始天（day_range 必填）")
_DAY_TO: Any = Field(default=None, description="结束天（day_range 必填）")
_WEEK_FROM: Any = Field(default=None, description="起始周（week 可选）")
_WEEK_TO: Any = Field(default=None, description="结束周（week 可选）")


class LoadArgs(Args):
    scope: Scope | None = _SCOPE
    week_from: Week | None = _WEEK_FROM
    week_to: Week | None = _WEEK_TO
    day_from: Day | None = _DAY_FROM
    day_to: Day | None = _DAY_TO
    granularity: Literal["day", "week", "time_of_day"] = Field(
        default="day", description="week 附加周聚合 / time_of_day 附加时段拆分"
    )
    detail: Literal["summary", "full"] = Field(default="summary", description="full 附加全部聚合")
    threshold: Level = _LEVEL


class SubjectsArgs(Args):
    category: Name | None = Field(default=None, description="只看某科目（任务类别）；不传为全部")
    include_pending: StrictBool = Field(default=True, description="是否统计待安排任务")
    detail: Literal["summary", "full"] = Field(
        default="summary", description="full 附加每日时段分布"
    )
    threshold: Level = _LEVEL


class ContextArgs(Args):
    day_from: Day | None = Field(default=None, description="起始天；不传为第1天")
    day_to: Day | None = Field(default=None, description="结束天；不传为最后一天")
    detail: Literal["summary", "day_detail"] = Field(
        default="summary", description="day_detail 附加每日科目序列、块与切换对"
    )
    hard_categories: list[Name] | None = Field(
        default=None, max_length=50, description="硬科目类别，用于判定硬课相邻"
    )
    threshold: Level = _LEVEL


class ToleranceArgs(Args):
    scope: Scope | None = _SCOPE
    week_from: Week | None = _WEEK_FROM
    week_to: Week | None = _WEEK_TO
    day_from: Day | None = _DAY_FROM
    day_to: Day | None = _DAY_TO
    min_usable_size: int = Field(
        default=2,
        strict=True,
        ge=1,
        le=MAX_SLOTS_PER_DAY,
        description="≥该长度的连续空位视为可用空窗",
    )
    min_daily_buffer: int = Field(
        default=2, strict=True, ge=0, le=MAX_SLOTS_PER_DAY, description="每日至少需要的可用空闲时段"
    )
    detail: Literal["summary", "full"] = Field(
        default="summary", description="full 附加每日空窗块及两侧占用类型"
    )
    threshold: Level = _LEVEL


class HealthArgs(Args):
    dimensions: list[Annotated[str, Field(max_length=32)]] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="体检维度：load/subjects/context/tolerance（默认全部，非法的忽略）",
    )
    threshold: Level = Field(
        default="normal", description="阈值档位：strict 早约10%触发，relaxed 晚约10%"
    )
    detail: Literal["summary", "full"] = Field(
        default="summary", description="full 附加各维度完整指标"
    )


def _reply(result: AnalysisResult) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False)


def _handler(name: str, fn: Callable[..., AnalysisResult]) -> Callable[[ToolContext, Any], str]:
    def handle(ctx: ToolContext, args: Args) -> str:
        if ctx.state is None:  # the Toolbox refuses first; a direct call gets the same reply
            return json_error(name, "no_state", f"当前没有加载日程，无法调用 {name}。")
        return _reply(fn(ctx.state, **args.model_dump(exclude_none=True)))

    handle.__name__ = name
    return handle


def _health(ctx: ToolContext, args: HealthArgs) -> str:
    if ctx.state is None:
        return json_error(
            "analyze_health", "no_state", "当前没有加载日程，无法调用 analyze_health。"
        )
    result = analyze_health(
        ctx.state,
        **args.model_dump(exclude_none=True),
        time_limit_s=min(2.0, ctx.max_time_limit_s),
        num_workers=ctx.num_workers,
        frozen_days=int(ctx.frozen_days or 0),  # issue 28: feasibility and floor honour it
    )
    if result.success:
        if ctx.loop is not None:  # a session's round: its fields, on the result itself
            ctx.loop.on_health(ctx, args, result)
        annotate_close_signal(result.metrics)  # the floor's figures in the student's words
    return _reply(result)


ANALYSIS_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "analyze_health",
        "read",
        HealthArgs,
        _health,
        "整体体检（first_full/global_reopt 的默认入口）：先判可行性，再合并负载、科目、切换、"
        "容错的问题（按严重度排序），给出至多3条建议动作与收口信号 close_signal；"
        "不可行时给出四类协商选项。单步移动都无帮助（fixable=false）而证明的下限更低时，"
        "给出 least_change_repair 动作：用 apply_proposal（keep_placed=true、max_moves，"
        "先 preview=true 看效果）做最少改动修复；体检本身不搜索。"
        "close_signal.improvable=true：已达收口规则但仍有可改善的动作，本次请求继续。",
        output="json",
    ),
    ToolSpec(
        "analyze_load",
        "read",
        LoadArgs,
        _handler("analyze_load", analyze_load),
        "负载分析：利用率、每日负载的标准差与极差、峰谷日；找出过满的天与过大的波动。",
        output="json",
    ),
    ToolSpec(
        "analyze_subjects",
        "read",
        SubjectsArgs,
        _handler("analyze_subjects", analyze_subjects),
        "科目节奏分析：每个科目的出现天、间隔、集中度（归一化 HHI）、预算进度与距截止天数。",
        output="json",
    ),
    ToolSpec(
        "analyze_context",
        "read",
        ContextArgs,
        _handler("analyze_context", analyze_context),
        "认知负荷分析：每天学习任务的科目切换次数、连续同科目块、碎片度、硬科目相邻。",
        output="json",
    ),
    ToolSpec(
        "analyze_tolerance",
        "read",
        ToleranceArgs,
        _handler("analyze_tolerance", analyze_tolerance),
        "容错分析：空闲时段、可用空窗与碎片空窗、碎片率、缺少缓冲的天数。",
        output="json",
    ),
)

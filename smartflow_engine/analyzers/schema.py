"""``metric_schema`` of every analysis tool: meaning, unit and direction of each metric (p1 §4.2).

Keys are paths into ``metrics`` (``days[].total_used`` is the field of every ``days`` entry).
Directions: ``lower_better``, ``higher_better``, ``neutral`` (a fact, not a goal).
"""

from __future__ import annotations

from typing import Any

_Row = tuple[str, str, str, str]  # key, meaning, unit, direction


def _table(rows: tuple[_Row, ...]) -> dict[str, dict[str, str]]:
    return {
        key: {"meaning": meaning, "unit": unit, "direction": direction}
        for key, meaning, unit, direction in rows
    }


_LOAD: tuple[_Row, ...] = (
    ("summary.days", "分析范围内的天数", "day", "neutral"),
    ("summary.capacity", "分析范围内的总时段数（天数×每天时段数）", "slot", "neutral"),
    (
        "summary.total_used",
        "总占用时段数 = course_used + task_used（嵌入任务不计）",
        "slot",
        "neutral",
    ),
    ("summary.course_used", "课程/日程事件占用的时段数", "slot", "neutral"),
    ("summary.task_used", "学习任务占用的时段数", "slot", "neutral"),
    ("summary.free_slots", "空闲时段数", "slot", "neutral"),
    ("summary.pending_count", "整个窗口的待安排任务数", "task", "lower_better"),
    ("summary.pending_slots", "待安排任务需要的时段总数", "slot", "lower_better"),
    ("summary.utilization_rate", "总利用率 = total_used / capacity", "ratio", "neutral"),
    ("summary.mean_daily_load", "日均占用时段数", "slot/day", "neutral"),
    ("summary.peak", "占用最多的一天（同值取最早）及其占用", "day,slot", "lower_better"),
    ("summary.valley", "占用最少的一天（同值取最早）及其占用", "day,slot", "neutral"),
    ("summary.load_std_dev", "每日 total_used 的样本标准差（单日为 0）", "slot", "lower_better"),
    ("summary.load_range", "最大日占用 − 最小日占用", "slot", "lower_better"),
    ("days[].day", "天索引", "day", "neutral"),
    ("days[].week", "该天所在周次", "week", "neutral"),
    ("days[].total_used", "当天总占用时段数", "slot", "neutral"),
    ("days[].course_used", "当天课程/事件占用", "slot", "neutral"),
    ("days[].task_used", "当天学习任务占用", "slot", "neutral"),
    ("days[].utilization", "当天利用率 = total_used / 每天时段数", "ratio", "lower_better"),
    ("days[].morning", "上午（第1-4节）占用", "slot", "neutral"),
    ("days[].afternoon", "下午（第5-8节）占用", "slot", "neutral"),
    ("days[].evening", "晚上（第9节起）占用", "slot", "neutral"),
    (
        "days[].delta_from_prev",
        "当天 total_used − 前一天 total_used（第1天为 null）",
        "slot",
        "neutral",
    ),
    (
        "days[].load_level",
        "负载等级：overloaded ≥ critical 阈值，high ≥ warning 阈值，light < 0.25，其余 normal",
        "level",
        "neutral",
    ),
    ("weeks[].total_used", "该周总占用（仅分析范围内的天）", "slot", "neutral"),
    ("weeks[].utilization", "该周利用率", "ratio", "neutral"),
    ("weeks[].week", "周次", "week", "neutral"),
    ("weeks[].days", "该周在分析范围内的天数", "day", "neutral"),
    ("weeks[].capacity", "该周总时段数", "slot", "neutral"),
    ("weeks[].course_used", "该周课程/事件占用", "slot", "neutral"),
    ("weeks[].task_used", "该周学习任务占用", "slot", "neutral"),
    ("time_of_day.<part>.course_used", "该时段段的课程/事件占用", "slot", "neutral"),
    ("time_of_day.<part>.task_used", "该时段段的学习任务占用", "slot", "neutral"),
    ("time_of_day.<part>.capacity", "该时段段的总时段数", "slot", "neutral"),
    ("time_of_day.<part>.used", "该时段段（morning/afternoon/evening）的总占用", "slot", "neutral"),
    ("time_of_day.<part>.utilization", "该时段段的利用率", "ratio", "neutral"),
)

_SUBJECTS: tuple[_Row, ...] = (
    ("summary.subject_count", "科目（学习任务类别）数", "subject", "neutral"),
    ("summary.task_count", "各科目 task_count 之和", "task", "neutral"),
    ("summary.placed", "已落位学习任务数", "task", "neutral"),
    ("summary.pending", "待安排学习任务数（仅 include_pending=true）", "task", "lower_better"),
    ("summary.used_slots", "学习任务已落位时段数", "slot", "neutral"),
    ("subjects[].category", "科目名（任务 category）", "name", "neutral"),
    ("subjects[].task_class_id", "匹配的任务类 ID（category_id），无则 null", "id", "neutral"),
    (
        "subjects[].task_count",
        "该科目任务数（include_pending=false 时只计已落位）",
        "task",
        "neutral",
    ),
    ("subjects[].placed", "已落位任务数", "task", "neutral"),
    ("subjects[].pending", "待安排任务数（仅 include_pending=true）", "task", "lower_better"),
    ("subjects[].used_slots", "已落位时段数（含嵌入）", "slot", "neutral"),
    ("subjects[].pending_slots", "待安排时段数（仅 include_pending=true）", "slot", "lower_better"),
    ("subjects[].present_days", "有该科目落位的天", "day[]", "neutral"),
    ("subjects[].gaps", "相邻出现日的间隔 next_day − prev_day − 1", "day[]", "lower_better"),
    ("subjects[].avg_gap", "间隔均值（无间隔为 null）", "day", "lower_better"),
    ("subjects[].max_gap", "最大间隔（无间隔为 null）", "day", "lower_better"),
    ("subjects[].min_gap", "最小间隔（无间隔为 null）", "day", "neutral"),
    ("subjects[].std_gap", "间隔样本标准差（单个间隔为 0，无间隔为 null）", "day", "lower_better"),
    (
        "subjects[].concentration",
        "按天时段占比的归一化 HHI：(Σp² − 1/N)/(1 − 1/N)，"
        "N = min(落位块数, 窗口天数)，0 分散 1 集中；只有一块时为 0",
        "ratio",
        "lower_better",
    ),
    ("subjects[].total_slots", "任务类预算总时段（task_classes.total_slots）", "slot", "neutral"),
    (
        "subjects[].budget_progress",
        "used_slots / total_slots（无预算为 null）",
        "ratio",
        "higher_better",
    ),
    (
        "subjects[].planned_progress",
        "(used_slots + pending_slots) / total_slots",
        "ratio",
        "higher_better",
    ),
    ("subjects[].end_day", "任务类截止天（end_day）", "day", "neutral"),
    (
        "subjects[].days_to_end",
        "end_day − 1：以窗口第1天为今天，距截止的天数",
        "day",
        "higher_better",
    ),
    ("subjects[].daily_slots", "每天的该科目时段数（detail=full）", "slot", "neutral"),
)

_CONTEXT: tuple[_Row, ...] = (
    ("overall.days", "分析范围内的天数", "day", "neutral"),
    ("overall.active_days", "有学习任务落位的天数", "day", "neutral"),
    ("overall.study_slots", "学习任务占用的时段数（含嵌入）", "slot", "neutral"),
    ("overall.total_switches", "总切换次数", "count", "lower_better"),
    (
        "overall.avg_daily_switches",
        "日均切换 = total_switches / active_days",
        "count/day",
        "lower_better",
    ),
    ("overall.max_daily_switches", "单日最多切换", "count", "lower_better"),
    ("overall.block_count", "连续同科目块数", "block", "neutral"),
    ("overall.avg_block_length", "平均块长度 = study_slots / block_count", "slot", "higher_better"),
    ("overall.longest_block", "最长同科目连续块", "slot", "neutral"),
    ("overall.heavy_adjacent", "相邻两块都属于 hard_categories 的次数", "count", "lower_better"),
    ("days[].occupied_slots", "当天学习任务时段数", "slot", "neutral"),
    ("days[].day", "天索引（只列有学习任务的天）", "day", "neutral"),
    (
        "days[].switch_count",
        "相邻两个学习时段都非空且科目不同的次数（课程与空闲时段断开序列）",
        "count",
        "lower_better",
    ),
    ("days[].fragmentation", "switch_count / max(occupied_slots − 1, 1)", "ratio", "lower_better"),
    ("days[].block_count", "当天连续同科目块数", "block", "lower_better"),
    ("days[].heavy_adjacent", "当天相邻硬科目对数", "count", "lower_better"),
    (
        "days[].sequence",
        "按节次的科目序列，null 为非学习时段（detail=day_detail）",
        "name[]",
        "neutral",
    ),
    ("days[].blocks", "连续同科目块（detail=day_detail）", "block[]", "neutral"),
    (
        "days[].adjacent_pairs",
        "发生切换的相邻对及是否为硬科目相邻（detail=day_detail）",
        "pair[]",
        "neutral",
    ),
)

_TOLERANCE: tuple[_Row, ...] = (
    ("overall.days", "分析范围内的天数", "day", "neutral"),
    ("overall.total_free", "空闲时段总数", "slot", "higher_better"),
    (
        "overall.usable_slots",
        "位于长度 ≥ min_usable_size 的连续空窗内的空闲时段",
        "slot",
        "higher_better",
    ),
    (
        "overall.fragmented_slots",
        "碎片空窗时段 = total_free − usable_slots",
        "slot",
        "lower_better",
    ),
    (
        "overall.fragmentation_rate",
        "fragmented_slots / total_free（无空闲时为 0）",
        "ratio",
        "lower_better",
    ),
    (
        "overall.days_without_buffer",
        "usable_slots < min_daily_buffer 的天数",
        "day",
        "lower_better",
    ),
    ("overall.days_with_buffer", "满足缓冲的天数", "day", "higher_better"),
    ("overall.largest_free_block", "最长连续空窗", "slot", "higher_better"),
    ("overall.min_usable_size", "本次使用的可用空窗最小长度", "slot", "neutral"),
    ("overall.min_daily_buffer", "本次使用的每日缓冲阈值", "slot", "neutral"),
    ("days[].free_slots", "当天空闲时段", "slot", "higher_better"),
    ("days[].day", "天索引", "day", "neutral"),
    ("days[].usable_slots", "当天可用空窗时段", "slot", "higher_better"),
    ("days[].fragmented_slots", "当天碎片空窗时段", "slot", "lower_better"),
    ("days[].buffer_sufficient", "usable_slots ≥ min_daily_buffer", "bool", "higher_better"),
    ("days[].largest_free_block", "当天最长连续空窗", "slot", "higher_better"),
    (
        "days[].free_blocks",
        "当天空窗块及两侧占用类型 course/task/edge（detail=full）",
        "block[]",
        "neutral",
    ),
)

_HEALTH: tuple[_Row, ...] = (
    ("dimensions", "本次体检的维度", "name[]", "neutral"),
    ("load", "负载核心指标（analyze_load 的 summary）", "object", "neutral"),
    ("subjects", "科目核心指标：科目数、最大间隔、最高集中度、预算滞后科目", "object", "neutral"),
    ("context", "切换核心指标（analyze_context 的 overall）", "object", "neutral"),
    ("tolerance", "容错核心指标（analyze_tolerance 的 overall）", "object", "neutral"),
    ("issue_counts", "合并去重后各严重度的问题数", "count", "lower_better"),
    (
        "close_signal.acceptable_to_close",
        "可接受收口：critical=0 且 warning≤1",
        "bool",
        "higher_better",
    ),
    ("close_signal.critical", "critical 问题数", "count", "lower_better"),
    ("close_signal.warning", "warning 问题数", "count", "lower_better"),
    ("close_signal.rule", "收口规则", "text", "neutral"),
    (
        "close_signal.reason",
        "收口依据：rules_met 达标 / pending_placeable 达标但仍有可放下的待安排任务 / best_achievable 已达证明下限 / open 未收口",
        "name",
        "neutral",
    ),
    (
        "close_signal.best_achievable",
        "当前已达到证明的下限（规则无法全部满足时可收口）",
        "bool",
        "higher_better",
    ),
    (
        "close_signal.floor",
        "可重排全部未锁定学习任务（冻结天的除外）时任何排法都无法低于的 critical/warning 下限（proven 表示有"
        "证明；propose_placement 的下限只让其方案范围内的任务移动、证明更细，可能更高），"
        "binding 列出造成下限的规则及数字",
        "object",
        "neutral",
    ),
    (
        "close_signal.floor_cut",
        "time_limit：本次体检的时间限制用完，下限未算完（floor.proven 为 false）",
        "name",
        "neutral",
    ),
    ("ignored_dimensions", "被忽略的非法维度名", "name[]", "neutral"),
    (
        "details",
        "各维度完整指标（detail=full），含义同各分析工具的 metric_schema",
        "object",
        "neutral",
    ),
)

METRIC_SCHEMAS: dict[str, dict[str, dict[str, str]]] = {
    "analyze_load": _table(_LOAD),
    "analyze_subjects": _table(_SUBJECTS),
    "analyze_context": _table(_CONTEXT),
    "analyze_tolerance": _table(_TOLERANCE),
    "analyze_health": _table(_HEALTH),
}


def metric_schema(tool: str) -> dict[str, Any]:
    """A fresh copy (callers may not mutate the shared table)."""
    return {k: dict(v) for k, v in METRIC_SCHEMAS[tool].items()}

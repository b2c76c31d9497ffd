"""Chinese sentences for the close signal's floor (issue 10): the figures of each binding rule
(data from :mod:`smartflow_engine.solver.health_floor`) in the student's terms."""

from __future__ import annotations

from typing import Any

_SEVERITY = {"critical": "严重", "warning": "警告"}


def _exact_bound(why: dict[str, Any]) -> str:
    """The bound an exact model of the per-day rules proved (its least criticals, criticals +
    warnings and, when known, warnings at the least criticals)."""
    least = why.get("min_warning_at_min_critical")
    then = f"；严重问题最少时，警告至少{least}个" if least is not None else ""
    return (
        f"每日负载与每日余量的问题至少{why['min_critical']}个严重、严重与警告合计至少"
        f"{why['min_issues']}个{then}。"
    )


def binding_text(rule: str, why: dict[str, Any]) -> str:
    """One sentence for one binding entry of ``close_signal.floor``."""
    kind = why.get("kind")
    if rule == "day_utilization" and kind == "fixed_load":
        days = "、".join(
            f"第{d['day']}天已有{d['fixed_periods']}节固定占用"
            f"（{_SEVERITY.get(d['severity'], d['severity'])}）"
            for d in why["days"]
        )
        return f"{days}（每天{why['slots_per_day']}节），固定课程/锁定任务无法移动，这些天的负载问题无法消除。"
    if rule == "day_utilization" and kind == "exact_days":
        lengths = "、".join(str(n) for n in why["block_lengths"])
        return (
            f"要放下{why['periods_to_place']}节任务（任务块长{lengths}节），每块只能放进某天"
            f"足够长的连续空位；逐天精确排布后，{_exact_bound(why)}"
        )
    if rule == "day_utilization" and kind == "ordered_days":
        return (
            f"要放下{why['periods_to_place']}节任务，且每门课程的任务须按顺序排（后一项不能排在"
            f"前一项结束之前）；按顺序逐天精确排布后，{_exact_bound(why)}"
        )
    if rule == "day_utilization":
        where, these = "", "其余天"
        if why.get("confined"):
            first, last = why["days"]
            where = f"按各课程允许的日期、星期和任务顺序，第{first}-{last}天之间"
            these = "这些天"
        return (
            f"{where}至少要放下{why['periods_to_place']}节任务，{these}在负载低于"
            f"{why['warning_load']}节时只能容纳{why['room_below_warning']}节，至少"
            f"{why['days_forced_over_warning']}天会达到警告负载、"
            f"{why['days_forced_over_critical']}天达到严重负载（{why['critical_load']}节）。"
        )
    if rule == "context_switch":
        return f"第{why['day']}天固定任务之间已有{why['fixed_switches']}次科目切换，无法减少。"
    if rule == "heavy_adjacent":
        return (
            f"第{why['day']}天固定任务之间已有{why['fixed_pairs']}处两门高难度科目相邻，无法拆开。"
        )
    if rule == "buffer":
        return (
            f"空闲{why['free_periods']}节，放下{why['periods_to_place']}节任务后，无法让"
            f"{why['days']}天都留出{why['buffer_periods']}节连续余量（其中"
            f"{why['days_without_room']}天本身就没有足够空位），至少{why['days_without_buffer']}天"
            f"没有余量。"
        )
    if rule == "load_imbalance":
        if why.get("kind") == "own_periods":
            return (
                f"每门课程的任务只能排在它允许的日期、星期和时段（及顺序所限的日子）里，"
                f"任务再怎么分摊，每日负载标准差至少{why['min_load_std_dev']}。"
            )
        return (
            f"固定占用{why['fixed_periods']}节分布不均，任务再怎么分摊，每日负载标准差至少"
            f"{why['min_load_std_dev']}、极差至少{why['min_load_range']}节。"
        )
    if rule == "budget_lag":
        return (
            f"{why['category']}全部任务排上也只有{why['max_used_slots']}节，低于预算"
            f"{why['total_slots']}节的40%，且距截止仅{why['days_to_end']}天。"
        )
    if rule == "subject_gap":
        return (
            f"{why['category']}在第{why['after_day']}天与第{why['before_day']}天之间只能排在"
            f"任务类时间窗内、有足够空位的日子，最长间隔至少{why['min_max_gap']}天。"
        )
    if rule == "subject_concentration":
        return (
            f"{why['category']}的任务只能落在{why['days_reachable']}天内（任务类时间窗、"
            f"固定块或空位所限），集中度至少{why['min_concentration']}。"
        )
    if rule == "free_fragmentation":
        return (
            f"固定占用之间有{why['isolated_periods']}节孤立的单节空位，只有"
            f"{why['one_period_blocks']}个单节任务能填，空闲碎片率至少"
            f"{why['min_fragmentation_rate']}。"
        )
    if rule == "capacity_gap":
        return f"学习任务共{why['study_periods']}节，窗口内空位和可嵌入时段只有{why['room']}节。"
    return f"{rule}：{why}"


def annotate_close_signal(metrics: dict[str, Any]) -> None:
    """Add a ``text`` sentence to every binding entry of ``metrics.close_signal.floor``."""
    floor = metrics.get("close_signal", {}).get("floor")
    if not floor:
        return
    for entry in floor.get("binding", []):
        entry["text"] = binding_text(entry["rule"], entry["why"])

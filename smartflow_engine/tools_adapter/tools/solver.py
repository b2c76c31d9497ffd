"""Solver-backed tools: check_feasibility and propose_placement (read), apply_proposal,
spread_even and min_context_switch (write; min_context_switch is hidden by default, P1-B).

The solver returns data; this module phrases it in the spec's style (read tools: facts only, no
advice; write tools: what changed, then each touched day's occupancy). Every solver time limit is
capped by ``ctx.max_time_limit_s`` and runs with ``ctx.num_workers`` and ``ctx.calibration`` (the
solver's figures; a proposal's work budget is its ``work_share`` of the asked limit). Writes
compute first and then apply through :func:`~smartflow_engine.state.relocate` (simultaneous, all
or nothing).

A tool's ``time_limit_s`` is the whole call's wall clock (issue 24 item 6): one
:class:`~smartflow_engine.solver.budget.Deadline` from the call pipeline's start stamp covers the
session's health evidence, the solves, applying the answer and the reply, whose long lists are
capped (:data:`MAX_CHANGE_LINES` changes, :data:`MAX_OCCUPANCY_DAYS` touched days). A call its
limit cut says so in its reply.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Annotated, Literal, TypeVar

from pydantic import Field, StrictBool, model_validator
from pydantic.json_schema import SkipJsonSchema

from ...calendar_filters import ProposalScope
from ...concepts import movable as study_movable
from ...solver import (
    FeasibilityReport,
    NegotiationFigures,
    Placement,
    Proposal,
    check_feasibility,
    negotiation_figures,
    propose_placement,
    repair_placement,
)
from ...solver.budget import Deadline
from ...solver.objective import TERM_NAMES
from ...solver.ordered import tasks_have_inner_order
from ...solver.reoptimize import Reoptimization, min_context_switch, spread_even
from ...state import MAX_BATCH, Request, ScheduleState, relocate
from ..core.args import Args, Day, Slot, TaskId
from ..core.calendar_args import scope_of
from ..core.disruption import CUT_WORDS, NOTHING_TO_APPLY
from ..core.render import (
    MAX_INLINE,
    MAX_LINES,
    applied_lines,
    capped,
    day_label,
    day_span,
    gap_words,
    left_out,
    occupancy_line,
    pending_left_line,
    periods,
)
from ..core.spec import ToolContext, ToolSpec, refused
from .write import refusal_text

_Plan = TypeVar("_Plan")
_Scoped = TypeVar("_Scoped", "ProposeArgs", "ApplyArgs")

MAX_MOVES = 20  # least-change repair: most placed tasks one call may move
# Wall time a solver tool keeps back for what follows its solves (applying the answer, the
# session's health evidence after a write, rendering): a fixed part for the reply and stalls of
# an overloaded machine; a part per task the answer may place or move (applying 3,000 placements
# on a 1000-day window took 0.4-0.7 s on the loaded 2-core machine); and the evidence after the
# write, estimated from what the call spent before its handler (the same analyzers on the state
# before the write; measured 1.5-2.5x that after placing 3,000 tasks).
REPLY_RESERVE_S = 0.05
REPLY_RESERVE_PER_TASK_S = 2e-4
EVIDENCE_FACTOR = 2.0
# A re-optimisation leaves as many tasks placed: its evidence after costs about the one before.
SAME_EVIDENCE_FACTOR = 1.0
# A reply lists at most this many changed tasks and touched days' occupancy lines (rendering a
# day costs ~1 ms on a 1000-day window: rendering every touched day took 1-2 s), then says how
# many it left out.
MAX_CHANGE_LINES = MAX_LINES
MAX_OCCUPANCY_DAYS = 20

TimeLimit = Annotated[
    float,
    Field(gt=0, le=600, allow_inf_nan=False, description="时限（秒）"),
]
Seed = Annotated[int, Field(strict=True, ge=0, le=2**31 - 1, description="随机种子")]
WeightName = Literal[
    "load_imbalance", "same_category", "isolated_free", "context_switch", "late", "time_of_day"
]
Weight = Annotated[float, Field(ge=0, le=1000, allow_inf_nan=False)]
assert set(WeightName.__args__) == set(TERM_NAMES)  # type: ignore[attr-defined]

_REASONS = {
    "ok": "",
    "insufficient_capacity": "空闲时段总量不足（insufficient_capacity）",
    "fragmented": "空闲时段总量够，但连续空闲段不够长（fragmented）",
    "class_window": "任务类的时间窗或禁排时段过紧（class_window）",
    "unknown": "时限内未得出证明（unknown）",
}
_TERM_WORDS = {
    "load_imbalance": "负载不均",
    "same_category": "同类同日",
    "isolated_free": "孤立空闲时段",
    "context_switch": "科目切换",
    "late": "超期天数",
    "time_of_day": "偏好外时段",
}
_MAX_DAYS_LISTED = 12


# The limit of propose_placement / apply_proposal when the call gives none (issue 26): a longer
# window gets more of the search and of the exact model's time, within the goals
# (apply_proposal {} at most 2 s on 30 days, 5 s on 120): 2 s up to 30 days, 1 s more per
# 36 days beyond, at most 4.5 s. See docs/decisions.md.
PROPOSAL_LIMIT_S = (2.0, 30, 36.0, 4.5)  # base, days it covers, days per extra second, most
PROPOSAL_LIMIT_TEXT = "缺省{0:g}-{3:g}秒，随天数增加".format(*PROPOSAL_LIMIT_S)


def proposal_limit(num_days: int) -> float:
    """The default limit of a proposal on a window of ``num_days`` days (see above)."""
    base, covered, per, most = PROPOSAL_LIMIT_S
    return min(most, base + max(0, num_days - covered) / per)


def _limit(ctx: ToolContext, asked: float) -> float:
    return min(float(asked), float(ctx.max_time_limit_s))


def _clock(ctx: ToolContext, asked: float) -> Deadline:
    """The call's deadline: the capped limit from the call pipeline's start stamp."""
    return Deadline.start(_limit(ctx, asked), ctx.call_started)


def _after_reserve(ctx: ToolContext, clock: Deadline, tasks: int, evidence: float) -> float:
    """Wall time to keep for what follows the solves (see :data:`REPLY_RESERVE_S`):
    ``evidence`` is the evidence after the write in units of what the call spent before its
    handler (0: a read tool)."""
    reserve = REPLY_RESERVE_S + REPLY_RESERVE_PER_TASK_S * tasks
    if evidence and ctx.loop is not None:
        reserve += evidence * clock.spent()
    return reserve


def _occupancy_lines(state: ScheduleState, days: Iterable[int]) -> list[str]:
    """The touched days' occupancy, the first :data:`MAX_OCCUPANCY_DAYS` of them."""
    shown, rest = capped(sorted(set(days)), MAX_OCCUPANCY_DAYS)
    lines = [occupancy_line(state, d) for d in shown]
    if rest:
        lines.append(left_out(rest, "天", "可用 query_range 查看"))
    return lines


def _label(state: ScheduleState, task_id: int | None) -> str:
    task = state.task(task_id) if task_id is not None else None
    return task.label if task is not None else f"[{task_id}]"


def _days_text(days: Iterable[int]) -> str:
    days = list(days)
    if not days:
        return "无"
    shown = "、".join(day_label(d) for d in days[:_MAX_DAYS_LISTED])
    return shown + (f"等{len(days)}天" if len(days) > _MAX_DAYS_LISTED else "")


def _num(value: float, digits: int = 1) -> str:
    """``3``, ``2.5``, ``0.001``: no trailing zeros."""
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# ---------------------------------------------------------------------------------- check
class FeasibilityArgs(Args):
    time_limit_s: TimeLimit = 5.0
    include_suggested: StrictBool = Field(
        default=False, description="是否把已预排任务也当作可重排的范围"
    )


def feasibility_text(
    state: ScheduleState,
    report: FeasibilityReport,
    figures: NegotiationFigures | None = None,
    time_limit_s: float | None = None,
    *,
    include_suggested: bool = False,
) -> str:
    """The check_feasibility reply: verdict, figures, bottleneck, negotiation figures.

    No wall-clock figure appears, so the same question gets the same reply everywhere.
    """
    if report.is_feasible is True:
        head = "可行性：可行（已证明）。"
    elif report.is_feasible is False:
        head = f"可行性：不可行（已证明），原因：{_REASONS[report.reason_code]}。"
    else:
        within = f"{_num(time_limit_s, 3)}秒" if time_limit_s is not None else "时限"
        head = f"可行性：未知（{within}内未得出证明）。"
    lines = [head]
    # Which tasks the figure counts, named (issue 45 item 1: analyze_health counts the
    # suggested tasks too, so its required_task_slots may differ from this line's).
    who = "待安排与已预排任务" if include_suggested else "待安排任务"
    need = f"范围内{who}{report.task_count}个，共需{report.required_task_slots}个时段"
    if report.feasible_slots is not None:
        lines.append(
            f"{need}；最多可同时放下{report.feasible_slots}个时段，缺口{report.capacity_gap}个。"
        )
    else:
        low, high = report.feasible_slots_bounds
        gap = ""
        if report.is_feasible is False:  # infeasibility proven, the maximum not (issue 42)
            gap = f"，缺口{gap_words(None, report.capacity_gap_bounds)}个（最大值未在时限内证明）"
        lines.append(f"{need}；已找到可同时放下{low}个时段的安排，上界{high}个{gap}。")
    lines.append(
        f"空闲容量{report.free_capacity_slots}个时段（含可嵌入水课时段），"
        f"余量{report.slack_slots}个。"
    )
    b = report.bottleneck
    if b is not None and (b.durations or b.classes):
        lines.append("瓶颈：")
        for d in b.durations:
            lines.append(
                f"  需≥{d.min_duration}个连续时段的任务{d.task_count}个（共需{d.required_slots}个时段），"
                f"最多只能放下{d.placeable_slots}个时段；长度≥{d.min_duration}的空闲段或可嵌入时段"
                f"共{d.bins}个，分布在：{_days_text(d.days)}。"
            )
        for c in b.classes:
            banned = f"，禁排第{'、'.join(str(p) for p in c.banned)}节" if c.banned else ""
            lines.append(
                f"  任务类[{c.class_id}]{c.name}（{day_span(c.start_day, c.end_day)}{banned}）："
                f"任务{c.task_count}个共需{c.required_slots}个时段，窗口内可用{c.window_free_slots}"
                f"个时段，最多放下{c.placeable_slots}个时段。"
            )
    if b is not None and b.conflict_set:
        ids = "、".join(_label(state, t) for t in b.conflict_set)
        lines.append(f"无法同时放下的任务组：{ids}（{_conflict_note(report, figures)}）。")
    if figures is not None and report.is_feasible is False:
        parts = []
        if figures.extra_days_needed is not None:
            parts.append(f"窗口末尾追加{figures.extra_days_needed}个空白天后可全部放下")
        elif figures.extra_days_possible is False:
            parts.append("追加空白天无法全部放下（有任务类的截止日早于窗口结束）")
        for value, what in (
            (figures.lifting_banned_suffices, "取消禁排时段"),
            (figures.lifting_class_constraints_suffices, "取消任务类时间窗与禁排时段"),
            (figures.lifting_weekdays_suffices, "取消任务类的禁排星期"),
            (figures.lifting_order_suffices, "取消任务类内的先后顺序"),
        ):
            if value is True:
                parts.append(f"{what}后可全部放下")
            elif value is False:
                parts.append(f"{what}后仍放不下")
        cut = gap_words(figures.slots_to_cut, report.capacity_gap_bounds)
        parts.append(f"删减任务需减少{cut}个时段")
        if not figures.proven:
            parts.append("其余协商数据在时限内未得出")
        lines.append("协商数据：" + "；".join(parts) + "。")
    return "\n".join(lines)


def _conflict_note(report: FeasibilityReport, figures: NegotiationFigures | None) -> str:
    """What the conflict set means: the group alone cannot all be placed; when proven minimal,
    removing any one of them lets the rest of the group fit; the window's own shortfall is
    stated separately, so nobody reads "remove one task and everything fits"."""
    b = report.bottleneck
    if b is not None and len(b.conflict_set) == 1:
        parts = ["这个任务本身就放不下"]
    else:
        parts = ["这一组任务本身就无法全部放下"]
        if b is not None and b.conflict_set_minimal:
            parts.append("去掉其中任意一个，组内其余任务都能放下")
    least = report.capacity_gap_bounds[0] if report.capacity_gap is None else report.capacity_gap
    if least:
        cut = report.capacity_gap if report.capacity_gap is not None else f"至少{least}"
        whole = f"整个窗口仍需减少{cut}个时段"
        if figures is not None and figures.extra_days_needed:
            whole += f"（或在末尾追加{figures.extra_days_needed}天）"
        parts.append(whole + "才能全部放下")
    return "；".join(parts)


def check_feasibility_tool(ctx: ToolContext, args: FeasibilityArgs) -> str:
    state = ctx.state
    assert state is not None
    clock = _clock(ctx, args.time_limit_s)
    # One limit for the check and its negotiation figures (they used to get one each).
    report = check_feasibility(
        state,
        time_limit_s=clock.left(REPLY_RESERVE_S),
        num_workers=ctx.num_workers,
        include_suggested=args.include_suggested,
        calibration=ctx.calibration,
    )
    figures = None
    if report.is_feasible is False:
        figures = negotiation_figures(
            state,
            report,
            time_limit_s=clock.left(REPLY_RESERVE_S),
            num_workers=ctx.num_workers,
            include_suggested=args.include_suggested,
            calibration=ctx.calibration,
        )
    return feasibility_text(
        state, report, figures, clock.limit_s, include_suggested=args.include_suggested
    )


# ---------------------------------------------------------------------------------- propose
# The proposal's scope follows the request's mode unless the call gives it (issue 26).
SCOPE_SUGGESTED = "也重排已预排任务；缺省 local_adjust 为 false，其余 true"
SCOPE_KEEP = (
    "最少改动修复：放置待安排任务，至多移动 max_moves 个已落位任务；缺省 local_adjust 为 true"
)


def _scoped(ctx: ToolContext, args: _Scoped) -> _Scoped:
    """``args`` with the proposal's scope decided (issue 26): what the call gave, else by the
    request's mode. first_full and global_reopt re-plan the pending and suggested study tasks
    (existing ones stay); local_adjust keeps what is placed and repairs with least change; the
    bare Toolbox (no execute loop, no mode) places the pending tasks only."""
    if _calendar(args):  # the calendar's tasks/slots decide what moves (refused with these two)
        return args.model_copy(update={"include_suggested": False, "keep_placed": False})
    mode = ctx.loop.request_mode if ctx.loop is not None else ""
    keep = args.keep_placed
    if keep is None:
        keep = mode == "local_adjust" and not args.include_suggested
    include = args.include_suggested
    if include is None:
        include = mode in ("first_full", "global_reopt") and not keep
    return args.model_copy(update={"include_suggested": include, "keep_placed": keep})


class ProposalOptions(Args):
    """The options of a computed proposal, one definition for both proposal tools."""

    time_limit_s: TimeLimit | None = Field(
        default=None, description=f"时限（秒）；{PROPOSAL_LIMIT_TEXT}"
    )
    seed: Seed = 0
    include_suggested: StrictBool | None = Field(default=None, description=SCOPE_SUGGESTED)
    allow_late: StrictBool = Field(default=False, description="允许超过截止日（计罚）")
    weights: dict[WeightName, Weight] | None = Field(
        default=None,
        description="软目标权重：load_imbalance 负载不均、same_category 同类同日、"
        "isolated_free 孤立空闲、context_switch 切换、late 超期、time_of_day 偏好外时段",
    )
    threshold: Literal["strict", "normal", "relaxed"] = Field(
        default="normal", description="体检阈值档位"
    )
    keep_placed: StrictBool | None = Field(default=None, description=SCOPE_KEEP)
    max_moves: int = Field(
        default=3,
        ge=0,
        le=MAX_MOVES,
        description="keep_placed/tasks 时最多移动数",
    )


class ProposeArgs(ProposalOptions):
    pass


def _by_day(state: ScheduleState, placements: list[Placement]) -> list[str]:
    """One line per day of the proposal, the first :data:`MAX_LINES` days."""
    rows: dict[int, list[str]] = {}
    for p in sorted(placements, key=lambda p: (p.day, p.slot_start, p.task_id)):
        span = periods(p.slot_start, p.slot_end)
        item = (
            f"{_label(state, p.task_id)}(嵌入{_label(state, p.embed_host)} {span}节)"
            if p.embed_host is not None
            else f"{_label(state, p.task_id)}({span}节)"
        )
        rows.setdefault(p.day, []).append(item)
    shown, rest = capped(sorted(rows.items()), MAX_LINES)
    lines = [f"  {day_label(d)}：{' '.join(items)}" for d, items in shown]
    if rest:
        lines.append("  " + left_out(rest, "天", "应用后可用 query_range 查看"))
    return lines


def _objective_line(
    objective: dict[str, float],
    start: dict[str, float] | None,
    health: tuple[int | None, int | None] = (None, None),
    start_health: tuple[int, int] | None = None,
) -> str:
    """The soft terms (no bound on them is claimed since issue 26: the health floor, in the
    health line, is the proof a proposal carries). A total above the start's says why: the
    health counts come first, and the start had more issues."""
    terms = "，".join(f"{_TERM_WORDS[k]}{_num(round(objective[k], 1))}" for k in TERM_NAMES)
    tail = ""
    if start is not None:
        tail = f"（起始方案{_num(round(start['weighted_total'], 1))}"
        fewer = None not in health and start_health is not None and health < start_health
        if fewer and objective["weighted_total"] > start["weighted_total"]:
            tail += "，其体检问题更多：先少问题、再比软目标"
        tail += "）"
    return f"目标分项：{terms}；加权合计{_num(round(objective['weighted_total'], 1))}{tail}。"


_STATUS_WORDS = {
    "optimal": "放下的时段数已证明最多，软目标已证明最优",
    "feasible": "放下的时段数已证明最多，软目标未证明最优",
    "unknown": "时限内未证明放下的时段数最多",
}


def _planned(ctx: ToolContext, tool: str, args: Args, compute: Callable[[], _Plan]) -> _Plan:
    """The plan of a re-optimising write: ``compute()``, except that a preview keeps its plan
    and the real call that follows on the same state with the same arguments takes it (issue 28:
    applying gives exactly what the preview showed, even when the wall clock cut the search)."""
    state = ctx.state
    assert state is not None
    if not ctx.previewing and not ctx.plans:
        return compute()
    key = (tool, args.model_dump_json(exclude={"preview"}))
    digest = hashlib.sha256(state.to_json(indent=None).encode()).hexdigest()
    if ctx.previewing:
        plan = compute()
        ctx.plans.clear()
        ctx.plans[key] = (digest, plan)
        return plan
    held = ctx.plans.pop(key, None)
    ctx.plans.clear()  # one plan, taken once: anything else in between makes it stale
    if held is not None and held[0] == digest:
        kept: _Plan = held[1]
        return kept
    return compute()


def _proposal(
    ctx: ToolContext,
    args: ProposeArgs | ApplyArgs,
    *,
    apply: bool = False,
    both_scopes: bool = False,
) -> tuple[Proposal, Deadline]:
    """The proposal both tools compute: a full one, or (keep_placed) the least-change repair,
    and the call's deadline.

    The limit is the whole call's wall clock (issues 10 and 24): the solver gets what the call
    has not spent yet, less the reserve for what follows (applying, the session's evidence, the
    reply). A full proposal's deterministic work stays that of the asked limit, so the proposal
    for a seed does not depend on how long the call took to get here.
    """
    state = ctx.state
    assert state is not None
    asked = args.time_limit_s
    clock = _clock(ctx, proposal_limit(state.num_days) if asked is None else asked)
    movable = len(state.pending_tasks())
    if args.keep_placed or args.include_suggested:
        movable += sum(1 for t in state.tasks if t.status == "suggested")
    reserve = _after_reserve(ctx, clock, movable if apply else 0, EVIDENCE_FACTOR if apply else 0.0)

    def compute() -> Proposal:
        within = _within(state, args)
        if within is not None:
            return _within_proposal(ctx, args, within, lambda: clock.left(reserve), clock.limit_s)
        if args.keep_placed:
            return repair_placement(
                state,
                max_moves=args.max_moves,
                time_limit_s=clock.left(reserve),
                seed=args.seed,
                threshold=args.threshold,
                num_workers=ctx.num_workers,
                calibration=ctx.calibration,
            )
        work_s, plan_work_s = _works(ctx, state, clock.limit_s)
        return propose_placement(
            state,
            time_limit_s=clock.left(reserve),
            work_limit_s=work_s,
            plan_work_s=plan_work_s,
            seed=args.seed,
            weights=_weights(args.weights),
            # (the wider scope is never worse than the narrow one: the solver compares both)
            include_suggested=both_scopes or bool(args.include_suggested),
            num_workers=ctx.num_workers,
            allow_late=args.allow_late,
            threshold=args.threshold,
            calibration=ctx.calibration,
        )

    if not apply:  # propose_placement is a read: it has no preview to keep
        return compute(), clock
    return _planned(ctx, "apply_proposal", args, compute), clock


def _works(ctx: ToolContext, state: ScheduleState, limit_s: float) -> tuple[float, float]:
    """A full proposal's work and its day plan's (issue 42, :func:`...solver.placement.deepen`):
    on a window with an item order, a limit at least ``day_plan_min_extra_s`` above the default
    gives ``day_plan_extra_share`` of the extra seconds to the plan (CP-SAT deterministic time
    at ``exact_det_per_s`` a second, at most ``day_plan_max_work``), the rest to the proposal;
    otherwise (a window proven not to fit, whose proposal leaves tasks out, included) the whole
    limit's work is the proposal's and there is no plan. Both follow from the asked limit and
    a check of fixed work, so the reply does not depend on how busy the machine is (unless
    the check's clock cuts it: it then counts as fitting)."""
    cal = ctx.calibration
    extra = limit_s - proposal_limit(state.num_days)
    if extra < cal.day_plan_min_extra_s or not tasks_have_inner_order(state.tasks):
        return cal.work_share * limit_s, 0.0
    # a plan needs every task placed: a window proven not to fit even with the suggested
    # tasks re-planned keeps the whole limit's work for its proposal (a check on a fixed work)
    fits = check_feasibility(
        state, time_limit_s=cal.day_plan_check_share * extra, num_workers=ctx.num_workers,
        include_suggested=True, explain=False, calibration=cal,
        work_s=cal.day_plan_check_work,
    )  # fmt: skip
    if fits.is_feasible is False:
        return cal.work_share * limit_s, 0.0
    plan_s = cal.day_plan_extra_share * extra
    return cal.work_share * (limit_s - plan_s), min(
        cal.day_plan_max_work, cal.exact_det_per_s * plan_s
    )


def _calendar(args: Args) -> bool:
    """Whether the call limits the proposal by the calendar (``tasks`` / ``slots``)."""
    return getattr(args, "tasks", None) is not None or getattr(args, "slots", None) is not None


def _within(state: ScheduleState, args: Args) -> ProposalScope | None:
    """The call's calendar scope (its arguments were checked before the handler ran)."""
    if not _calendar(args):
        return None
    scope = scope_of(state, getattr(args, "tasks", None), getattr(args, "slots", None))
    assert not isinstance(scope, str), scope
    return scope


def _within_proposal(
    ctx: ToolContext,
    args: ProposeArgs | ApplyArgs,
    within: ProposalScope,
    left: Callable[[], float],
    limit_s: float,
) -> Proposal:
    """A proposal limited by the calendar (issue 43): the selected tasks move, each only within
    its allowed places and its class rules, the rest stays. With ``max_moves`` given, at most
    that many of them move: the first proposal's first ``max_moves`` moves (by place) are
    proposed again as the only moving tasks (the others stay where they are), each proposal
    with half the call's time and work."""
    state = ctx.state
    assert state is not None
    cap = args.max_moves if "max_moves" in args.model_fields_set else None

    def run(scope: ProposalScope, share: float) -> Proposal:
        return propose_placement(
            state,
            time_limit_s=left() * share,
            work_limit_s=ctx.calibration.work_share * limit_s * share,
            seed=args.seed,
            weights=_weights(args.weights),
            num_workers=ctx.num_workers,
            allow_late=args.allow_late,
            threshold=args.threshold,
            calibration=ctx.calibration,
            within=scope,
        )

    if cap is None:
        return run(within, 1.0)
    first = run(within, 0.5)
    moved = [
        pl.task_id for pl in first.placements if pl.task_id in within.movable and _moved(state, pl)
    ]
    if len(moved) <= cap and not _stuck(within, first):
        return first
    chosen = frozenset(moved[:cap])
    narrow = ProposalScope(
        chosen,
        {tid: m for tid, m in within.allowed.items() if tid in chosen or tid not in within.movable},
    )
    return run(narrow, 1.0)


def _moved(state: ScheduleState, pl: Placement) -> bool:
    task = state.task(pl.task_id)
    return (
        task is None or not task.slots or _moves(state, Request(pl.task_id, pl.day, pl.slot_start))
    )


def _stuck(within: ProposalScope, proposal: Proposal) -> list[int]:
    """The selected placed tasks ``proposal`` found no place for."""
    return [tid for tid in proposal.unplaced if tid in within.movable]


def _stuck_text(state: ScheduleState, within: ProposalScope, proposal: Proposal) -> str:
    """Why a calendar proposal cannot move every selected task: the proven maximum and the
    tasks its plan could not move ("" when every one moves)."""
    stuck = _stuck(within, proposal)
    if not stuck:
        return ""
    need = sum(_need(state, t) for t in within.allowed)
    most = (
        f"已证明按这些限制最多能放下{proposal.max_slots}个时段（共需{need}个）"
        if proposal.max_slots is not None
        else f"时限内未证明最多能放下多少时段（共需{need}个）"
    )
    shown, rest = capped(stuck, MAX_INLINE)
    items = " ".join(_label(state, t) for t in shown) + (left_out(rest) if rest else "")
    return (
        f"选中的{len(within.movable)}个任务中有{len(stuck)}个无法移入指定范围：{items}；{most}。"
        "可放宽 slots，或用 max_moves 只移动放得下的任务"
    )


def _wide_by_default(ctx: ToolContext, args: ProposeArgs | ApplyArgs) -> bool:
    """Whether the mode alone (no scope argument) makes this proposal re-plan suggested tasks."""
    mode = ctx.loop.request_mode if ctx.loop is not None else ""
    return (
        args.include_suggested is None
        and args.keep_placed is None
        and mode in ("first_full", "global_reopt")
    )


def _cut_text(proposal: Proposal, clock: Deadline) -> str:
    """What the wall clock cut, in the reply's words ("" when nothing was cut)."""
    if proposal.start_only:
        return (
            f"时限{_num(clock.limit_s, 3)}秒对这个窗口过短，{CUT_WORDS[1]}初始贪心方案（未优化），"
            "可加大 time_limit_s"
        )
    if proposal.wall_limited:
        return f"{CUT_WORDS[0]}，同一seed的结果可能不同"
    return ""


# Who moves in the population of a proposal's proven floor, in the reply's words (issue 45 item
# 1): analyze_health's floor lets every unlocked study task move and has no exact model (a
# millisecond read), so it may be lower; naming the proposal's population keeps the two apart.
FLOOR_SCOPE_WORDS = {
    "pending": "已落位任务都不动、只放置待安排任务",
    "suggested": "已安排任务不动、放置待安排任务并重排已预排任务",
    "repair": "放置待安排任务并移动任意多个未锁定的已落位任务",
    "calendar": "只在指定范围内移动选中的任务、其余不动",
}
FLOOR_SCOPE_NOTE = "analyze_health 的下限可重排全部未锁定的学习任务、证明更粗，可能更低"
# The note when analyze_health's floor moves the same tasks (no placed movable study task stays
# out of the proposal's movers): the one difference is the strength of the proof.
FLOOR_SAME_NOTE = "analyze_health 的下限移动同样的任务、证明更粗，可能更低"


def _floor_scope(state: ScheduleState, proposal: Proposal, calendar: bool) -> str:
    """The key of :data:`FLOOR_SCOPE_WORDS` naming the population of ``proposal``'s floor (the
    same words for the same population: without a placed suggested task, re-planning them
    moves nothing more than placing the pending tasks, whatever the scope argument)."""
    if calendar:
        return "calendar"
    if proposal.start == "current":
        return "repair"
    wide = proposal.include_suggested and any(
        t.status == "suggested" and t.slots for t in state.tasks
    )
    return "suggested" if wide else "pending"


def _floor_note(state: ScheduleState, scope: str) -> str:
    """The note after a proposal's floor comparing it to analyze_health's: none for a repair (the
    same population), :data:`FLOOR_SAME_NOTE` when every placed study task analyze_health's floor
    may move is one the proposal moves too, else :data:`FLOOR_SCOPE_NOTE` (issue 45 item 1)."""
    if scope == "repair":
        return ""
    if scope in ("pending", "suggested"):
        movers = {"pending"} if scope == "pending" else {"pending", "suggested"}
        if not any(
            t.slots and t.status not in movers and study_movable(state, t) for t in state.tasks
        ):
            return f"（{FLOOR_SAME_NOTE}）"
    return f"（{FLOOR_SCOPE_NOTE}）"


def _health_line(state: ScheduleState, proposal: Proposal, calendar: bool = False) -> str:
    """The proposal's analyze_health counts (issue 10), what the close stage started from, and
    the proven floor of the proposal's own population, named (issue 45 item 1)."""
    if proposal.critical is None or proposal.warning is None:
        return ""
    line = (
        f"体检（{proposal.threshold}档）：应用后 critical {proposal.critical} 个、warning "
        f"{proposal.warning} 个"
    )
    if proposal.start_health is not None and proposal.start_health != (
        proposal.critical,
        proposal.warning,
    ):
        # the plan the close stage started from, not today's schedule (issue 45 item 1)
        line += f"（优化前的起始方案 {proposal.start_health[0]}/{proposal.start_health[1]}）"
    if proposal.planned:  # (issue 42: the day plan, which a longer limit buys, replaced it)
        line += "；此方案来自日级规划（时限比缺省长时启用），问题比搜索所得更少"
    if proposal.start == "current":
        line += f"；移动了{proposal.local_moves}个已落位任务"
    if proposal.floor is not None:
        fc, fw = proposal.floor
        lw = proposal.floor_least_warning
        at_floor = proposal.critical <= fc and (
            proposal.critical + proposal.warning <= fc + fw
            or (lw is not None and proposal.warning <= lw)
        )
        scope = _floor_scope(state, proposal, calendar)
        note = _floor_note(state, scope)
        who = FLOOR_SCOPE_WORDS[scope]
        line += (
            f"；已证明{who}的任何方案至少有 critical {fc} 个、critical 与 warning 合计 "
            f"{fc + fw} 个，"
            + (f"critical 为 {fc} 个的方案 warning 至少 {lw} 个，" if lw is not None else "")
            + ("本方案已达此下限" if at_floor else "本方案尚高于此下限")
            + note
        )
    return line + "。"


def _proposal_requests(
    state: ScheduleState, proposal: Proposal, args: ProposeArgs | ApplyArgs
) -> tuple[list[Request], str | None]:
    """What applying ``proposal`` asks of the state: the requests (only tasks that change
    place when placed ones may move) and the status they take (keep_placed: their own)."""
    requests = [Request(p.task_id, p.day, p.slot_start) for p in proposal.placements]
    calendar = _calendar(args)
    if args.include_suggested or args.keep_placed or calendar:
        requests = [r for r in requests if _moves(state, r)]
    return requests, None if args.keep_placed or calendar else "suggested"


def propose_tool(ctx: ToolContext, args: ProposeArgs) -> str:
    state = ctx.state
    assert state is not None
    both = _wide_by_default(ctx, args)
    args = _scoped(ctx, args)
    proposal, clock = _proposal(ctx, args, both_scopes=both)
    # the disruption line's (issue 28), within what the call's limit has left; it refers to the
    # health line's counts after when that line gives them (issue 45 item 1)
    ctx.proposed = (
        *_proposal_requests(state, proposal, args),
        clock,
        proposal.critical is not None and proposal.warning is not None,
        bool(proposal.unplaced),
    )
    placed = proposal.placements
    if not placed and not proposal.unplaced:
        if proposal.start == "current":  # keep_placed: nothing to place and no move helps
            cut = _cut_text(proposal, clock)
            found = "时限内未找到" if cut else "没有找到"
            lines = [f"最少改动修复：{found}能减少体检问题的调整，日程保持不变。"]
            lines += [
                line
                for line in (_health_line(state, proposal), f"注意：{cut}。" if cut else "")
                if line
            ]
            return "\n".join(lines)
        return "没有待安排任务，无需粗排。"
    slots = sum(p.length for p in placed)
    lines = [
        f"粗排方案（{_STATUS_WORDS[proposal.status]}）：放置{len(placed)}个任务，共{slots}个"
        f"时段；未放置{len(proposal.unplaced)}个。"
    ]
    lines += _by_day(state, placed)
    if proposal.unplaced:
        shown, rest = capped(proposal.unplaced, MAX_INLINE)
        items = " ".join(f"{_label(state, t)}(需{_need(state, t)}时段)" for t in shown)
        lines.append(f"未放置：{items}" + (left_out(rest) if rest else ""))
    within = _within(state, args)
    if within is not None and (stuck := _stuck_text(state, within, proposal)):
        lines.append(stuck + "。")
    lines.append(
        _objective_line(
            proposal.objective,
            proposal.start_objective,
            (proposal.critical, proposal.warning),
            proposal.start_health,
        )
    )
    if health := _health_line(state, proposal, _calendar(args)):
        lines.append(health)
    cut = _cut_text(proposal, clock)
    lines.append(f"方案未写入日程（seed={proposal.seed}{'；' + cut if cut else ''}）。")
    return "\n".join(lines)


def _weights(weights: dict[WeightName, float] | None) -> dict[str, float] | None:
    return {str(k): float(v) for k, v in weights.items()} if weights else None


def _need(state: ScheduleState, task_id: int) -> int:
    task = state.task(task_id)
    return task.need() if task is not None else 0


# ---------------------------------------------------------------------------------- apply
class PlacementItem(Args):
    task_id: TaskId
    day: Day
    slot_start: Slot


class ApplyArgs(ProposalOptions):
    """Either explicit ``placements`` (e.g. copied from a propose_placement reply), applied as
    given, or none: the proposal is computed with the other arguments and applied whole."""

    placements: list[PlacementItem] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_BATCH,
        description="要应用的放置；不传则计算方案并应用",
    )
    # Accepted as on propose_placement, not published here: the first_full tool list's token
    # budget pays for tasks/slots instead (docs/decisions.md, issue 43 phase 2).
    weights: SkipJsonSchema[dict[WeightName, Weight] | None] = None

    @model_validator(mode="after")
    def _one_way(self) -> ApplyArgs:
        if self.placements is not None and self.model_fields_set & {
            "time_limit_s",
            "seed",
            "include_suggested",
            "allow_late",
            "weights",
            "threshold",
            "keep_placed",
            "max_moves",
        }:
            raise ValueError(
                "placements 与 time_limit_s/seed/include_suggested/allow_late/"
                "weights/threshold/keep_placed/max_moves 不能同时给出"
            )
        return self


def _apply_refusal(reason: str) -> str:
    return refused(f"应用方案失败，全部回滚，无任何变更。\n原因：{reason}")


def apply_proposal_tool(ctx: ToolContext, args: ApplyArgs) -> str:
    state = ctx.state
    assert state is not None
    if args.placements is not None:
        requests = [Request(p.task_id, p.day, p.slot_start) for p in args.placements]
        for r in requests:
            task = state.task(r.task_id)
            if task is None:
                return _apply_refusal(f"任务 [{r.task_id}] 不存在。")
            if task.status == "existing":
                return _apply_refusal(f"{task.label} 是已安排任务，粗排只放置待安排或已预排任务。")
    cut = ""
    if args.placements is None:
        both = _wide_by_default(ctx, args)
        args = _scoped(ctx, args)
        proposal, clock = _proposal(ctx, args, apply=True, both_scopes=both)
        cut = _cut_text(proposal, clock)
        within = _within(state, args)
        if (
            within is not None
            and "max_moves" not in args.model_fields_set
            and (stuck := _stuck_text(state, within, proposal))
        ):  # every selected task moves, or none (docs/decisions.md, issue 43 phase 2)
            return _apply_refusal(stuck + "。" + (f"\n注意：{cut}。" if cut else ""))
        requests, _ = _proposal_requests(state, proposal, args)
        if not requests:
            tail = f"\n注意：{cut}。" if cut else ""
            return NOTHING_TO_APPLY + "\n" + pending_left_line(state) + tail
    # keep_placed moves tasks of any status: a moved one keeps its status, a placed one is
    # suggested; otherwise every task of the proposal becomes suggested.
    result = relocate(
        state,
        requests,
        op="apply_proposal",
        status_after=None if args.keep_placed or _calendar(args) else "suggested",
        allow_late=args.allow_late,
    )
    if not result.ok:
        assert result.refusal is not None
        text = refusal_text(state, "batch_move", result.refusal)
        return refused(text.replace("批量移动失败", "应用方案失败", 1))
    ctx.record(result.changes)
    calendar = _calendar(args)
    lines, days = applied_lines(
        state,
        result.changes,
        from_to=calendar and all(ch.block_before is not None for ch in result.changes),
        limit=MAX_CHANGE_LINES,
        more_hint="可用 list_tasks 查看已预排任务",
    )
    head = (
        f"已应用方案，按 tasks/slots 移动或放置了{len(result.changes)}个任务："
        if calendar
        else f"已应用粗排方案，{len(result.changes)}个任务变为已预排："
    )
    lines = [head, *lines]
    lines += _occupancy_lines(state, days)
    lines.append(pending_left_line(state))
    if cut:
        lines.append(f"注意：{cut}。")
    return "\n".join(lines)


def _moves(state: ScheduleState, r: Request) -> bool:
    task = state.task(r.task_id)
    if task is None or task.status == "pending":
        return True
    block = task.slots[0]
    return (block.day, block.slot_start) != (r.day, r.slot_start)


# ---------------------------------------------------------------------------------- re-optimise
def _apply_moves(ctx: ToolContext, op: str, result: Reoptimization) -> tuple[bool, list[str]]:
    state = ctx.state
    assert state is not None
    requests = [Request(after.task_id, after.day, after.slot_start) for _, after in result.moves]
    op_result = relocate(state, requests, op=op, placed_only=True)
    if not op_result.ok:  # the solver only proposes valid moves; kept as a guard
        return False, []
    ctx.record(op_result.changes)
    lines, days = applied_lines(state, op_result.changes, from_to=True, limit=MAX_CHANGE_LINES)
    lines += _occupancy_lines(state, days)
    return True, lines


class SpreadArgs(Args):
    category: str = Field(
        min_length=1, max_length=64, description="要均匀分散的任务类别（如“复习”）"
    )
    time_limit_s: TimeLimit = 2.0
    seed: Seed = 0


def _reoptimize_clock(ctx: ToolContext, asked: float, scope: int) -> tuple[Deadline, float]:
    """The call's deadline and the wall time its re-optimisation may use (the rest is kept
    for applying the moves of at most ``scope`` tasks, the evidence and the reply)."""
    clock = _clock(ctx, asked)
    return clock, clock.left(_after_reserve(ctx, clock, scope, SAME_EVIDENCE_FACTOR))


def _moves_reply(
    ctx: ToolContext, tool: str, result: Reoptimization, *, unchanged: str, head: str
) -> str:
    """Apply a re-optimisation's moves atomically and reply: ``unchanged`` when nothing moves,
    ``head`` and one line per move when applied, a rollback line when refused; a search the
    time limit cut says so on a last line."""
    if result.status == "unknown":
        return f"{tool} 未完成：时限内未能建好并求解模型，日程未变更（可加大 time_limit_s 重试）。"
    cut = "\n注意：搜索被时限截断，结果未证明最优。" if result.wall_limited else ""
    if not result.moves:
        return unchanged + cut
    ok, lines = _apply_moves(ctx, tool, result)
    if not ok:
        return refused(f"{tool} 失败，全部回滚，无任何变更。")
    return "\n".join([head, *lines]) + cut


def spread_even_tool(ctx: ToolContext, args: SpreadArgs) -> str:
    state = ctx.state
    assert state is not None
    if not any(t.category == args.category for t in state.tasks):
        return refused(f"spread_even 未执行：没有类别为「{args.category}」的任务，日程未变更。")
    clock, left = _reoptimize_clock(
        ctx, args.time_limit_s, sum(1 for t in state.tasks if t.category == args.category)
    )
    result = _planned(
        ctx,
        "spread_even",
        args,
        lambda: spread_even(
            state,
            args.category,
            time_limit_s=left,
            seed=args.seed,
            num_workers=ctx.num_workers,
            work_limit_s=clock.limit_s,
            calibration=ctx.calibration,
        ),
    )
    if result.status == "empty":
        return refused(
            f"spread_even 未执行：类别「{args.category}」没有可移动的已落位任务"
            f"（固定、嵌有任务或多时段块的任务不参与），日程未变更。"
        )
    b, a = result.before, result.after
    figures = (
        f"分布偏差{_num(round(b['spread_deviation'], 1))}→{_num(round(a['spread_deviation'], 1))}，"
        f"出现天数{int(b['days_used'])}→{int(a['days_used'])}，"
        f"最长间隔{int(b['max_gap'])}→{int(a['max_gap'])}天"
    )
    return _moves_reply(
        ctx,
        "spread_even",
        result,
        unchanged=(
            f"spread_even 完成：类别「{args.category}」的{len(result.task_ids)}个任务未移动"
            f"（当前分布已是找到的最均匀分布，{figures}）。"
        ),
        head=(
            f"spread_even 完成：类别「{args.category}」的{len(result.task_ids)}个任务中移动了"
            f"{len(result.moves)}个，{figures}："
        ),
    )


class SwitchArgs(Args):
    day_from: Day | None = Field(default=None, description="起始天，缺省为第1天")
    day_to: Day | None = Field(default=None, description="结束天，缺省为最后一天")
    allow_cross_day: StrictBool = Field(
        default=False, description="是否允许任务换到范围内的其他天（默认只在当天内调整顺序）"
    )
    time_limit_s: TimeLimit = 2.0
    seed: Seed = 0


def min_context_switch_tool(ctx: ToolContext, args: SwitchArgs) -> str:
    state = ctx.state
    assert state is not None
    first = args.day_from or 1
    last = args.day_to or state.num_days
    if not 1 <= first <= last <= state.num_days:
        return refused(
            f"参数错误：天范围第{first}-{last}天无效（规划窗口为第1-{state.num_days}天，"
            f"且 day_from ≤ day_to）。"
        )
    scope = sum(1 for t in state.tasks if t.slots and first <= t.slots[0].day <= last)
    clock, left = _reoptimize_clock(ctx, args.time_limit_s, scope)
    result = _planned(
        ctx,
        "min_context_switch",
        args,
        lambda: min_context_switch(
            state,
            first,
            last,
            allow_cross_day=args.allow_cross_day,
            time_limit_s=left,
            seed=args.seed,
            num_workers=ctx.num_workers,
            work_limit_s=clock.limit_s,
            calibration=ctx.calibration,
        ),
    )
    if result.status == "empty":
        return refused(
            f"min_context_switch 未执行：{day_span(first, last)}没有可移动的已落位任务，"
            "日程未变更。"
        )
    figures = (
        f"科目切换{int(result.before['context_switch'])}→{int(result.after['context_switch'])}次"
    )
    return _moves_reply(
        ctx,
        "min_context_switch",
        result,
        unchanged=(
            f"min_context_switch 完成：{day_span(first, last)}的{len(result.task_ids)}个任务未移动"
            f"（{figures}，已是找到的最少切换）。"
        ),
        head=(
            f"min_context_switch 完成：{day_span(first, last)}移动了{len(result.moves)}个任务，"
            f"{figures}："
        ),
    )


SOLVER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "check_feasibility",
        "read",
        FeasibilityArgs,
        check_feasibility_tool,
        "精确判定待安排任务能否同时放下（CP-SAT，守全部规则）："
        "是否可行（已证明/未知）、所需与可放下的时段数、缺口、原因与协商数据。",
    ),
    ToolSpec(
        "propose_placement",
        "read",
        ProposeArgs,
        propose_tool,
        "计算粗排方案：先放下最多的时段，再减少体检问题，再按权重优化软目标。只返回方案，"
        "不改日程（用 apply_proposal 应用）。",
    ),
    ToolSpec(
        "apply_proposal",
        "write",
        ApplyArgs,
        apply_proposal_tool,
        "应用粗排方案（原子操作）：传 placements 时按给出的放置应用；不传时按同样参数计算 propose_placement 的方案"
        "并整体应用。被放置的任务变为已预排。",
    ),
    ToolSpec(
        "spread_even",
        "write",
        SpreadArgs,
        spread_even_tool,
        "把某类别的已落位（非固定）任务在其可用天数内尽量均匀分散（CP-SAT 重排，原子操作）。",
    ),
    ToolSpec(
        "min_context_switch",
        "write",
        SwitchArgs,
        min_context_switch_tool,
        "在指定天范围内重排已落位（非固定）任务以减少科目切换（默认每个任务留在原来那天）。",
        modes=frozenset(),
    ),
)

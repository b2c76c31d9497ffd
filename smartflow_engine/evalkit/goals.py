"""Graders: each part of a task's goal checked on the final state and the call trace.

One checker per goal part, in one table (:data:`CHECKS`); :func:`grade` runs those the task's
goal names. A trial passes when every one holds (τ-bench: graded by the final state).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..analyzers.destinations import health_result
from ..state import ScheduleState
from .tasks import EvalTask

if TYPE_CHECKING:
    from ..tools_adapter.core.pipeline import Status


@dataclass
class CallRecord:
    """One tool call of a trial: what was asked and what happened (``wrote``: the call changed
    tasks of the window)."""

    name: str
    args: Any
    status: Status  # the call's status, as the session reports it
    error_code: str = ""
    wrote: bool = False
    is_write: bool = False


@dataclass
class Outcome:
    """A trial's end: the final state, the calls in order, and whether the policy asked for a
    call past the cap."""

    state: ScheduleState
    calls: list[CallRecord] = field(default_factory=list)
    exhausted: bool = False


@dataclass
class CheckResult:
    goal: str
    ok: bool
    detail: str = ""


def counts(state: ScheduleState) -> tuple[int, int]:
    """``analyze_health``'s (critical, warning) of ``state`` at the normal level."""
    issues = health_result(state).issues
    return (
        sum(1 for i in issues if i.severity == "critical"),
        sum(1 for i in issues if i.severity == "warning"),
    )


def check_health(task: EvalTask, out: Outcome) -> CheckResult:
    goal = task.goal.health
    assert goal is not None
    crit, warn = counts(out.state)
    if goal.rule == "close":
        ok = crit == 0 and warn <= 1
        want = "critical=0 && warning<=1"
    else:
        ok = crit <= goal.critical and crit + warn <= goal.critical + goal.warning
        want = f"floor critical={goal.critical}, warning={goal.warning}"
    return CheckResult("health", ok, f"critical={crit}, warning={warn}; goal {want}")


def check_placed(task: EvalTask, out: Outcome) -> CheckResult:
    want = task.goal.placed_periods
    assert want is not None
    pending = {t["state_id"] for t in task.state["tasks"] if t.get("status") == "pending"}
    placed = sum(
        sum(b.length for b in t.slots)
        for t in out.state.tasks
        if t.state_id in pending and t.is_placed
    )
    return CheckResult("placed", placed >= want, f"{placed} of {want} pending periods placed")


def check_edit(task: EvalTask, out: Outcome) -> CheckResult:
    edit = task.goal.edit
    assert edit is not None
    allowed = set(edit.days)
    wrong = []
    for tid in edit.task_ids:
        t = out.state.task(tid)
        days = [b.day for b in t.slots] if t is not None else []
        if not days or any(d not in allowed for d in days):
            wrong.append(f"[{tid}] on days {days}")
    detail = "; ".join(wrong) if wrong else f"tasks {edit.task_ids} on days {sorted(allowed)}"
    return CheckResult("edit", not wrong, detail)


def check_locked(task: EvalTask, out: Outcome) -> CheckResult:
    before = {t["state_id"]: t for t in task.state["tasks"]}
    moved = []
    for tid in task.goal.locked_ids:
        t = out.state.task(tid)
        slots = [b.model_dump() for b in t.slots] if t is not None else None
        if slots != before[tid].get("slots", []):
            moved.append(tid)
    return CheckResult(
        "locked", not moved, f"locked tasks moved: {moved}" if moved else "no locked task moved"
    )


def check_frozen(task: EvalTask, out: Outcome) -> CheckResult:
    """Days ``1..frozen_days`` hold exactly the blocks they held before: nothing on them moved
    away, nothing new landed on them."""
    k = task.goal.frozen_days

    def blocks(tasks: list[dict[str, Any]]) -> set[tuple[int, int, int, int]]:
        return {
            (t["state_id"], b["day"], b["slot_start"], b["slot_end"])
            for t in tasks
            for b in t.get("slots") or ()
            if b["day"] <= k
        }

    before = blocks(task.state["tasks"])
    after = blocks(out.state.to_dict()["tasks"])
    gone, new = sorted(before - after), sorted(after - before)
    if not gone and not new:
        return CheckResult("frozen", True, f"days 1-{k} unchanged")
    parts = []
    if gone:
        parts.append(f"moved off: {[b[0] for b in gone]}")
    if new:
        parts.append(f"landed on: {[b[0] for b in new]}")
    return CheckResult("frozen", False, f"days 1-{k}: " + "; ".join(parts))


def check_negotiation(task: EvalTask, out: Outcome) -> CheckResult:
    choice = task.goal.negotiation
    first_write = next((i for i, c in enumerate(out.calls) if c.wrote), None)
    resolved = next(
        (
            i
            for i, c in enumerate(out.calls)
            if c.name == "resolve_negotiation"
            and c.status == "ok"
            and isinstance(c.args, dict)
            and c.args.get("choice") == choice
        ),
        None,
    )
    if resolved is None:
        return CheckResult("negotiation", False, f"no resolve_negotiation({choice}) recorded")
    if first_write is not None and first_write < resolved:
        name = out.calls[first_write].name
        return CheckResult(
            "negotiation", False, f"{name} (call {first_write + 1}) wrote before the negotiation"
        )
    return CheckResult("negotiation", True, f"{choice} recorded at call {resolved + 1}")


def check_round_cap(task: EvalTask, out: Outcome) -> CheckResult:
    cap = task.goal.max_tool_calls
    used = len(out.calls)
    ok = used <= cap and not out.exhausted
    extra = " (asked for more)" if out.exhausted else ""
    return CheckResult("round_cap", ok, f"{used} of {cap} tool calls{extra}")


# ---------------------------------------------------------------------------------- calendar goals
def _blocks(tasks: list[dict[str, Any]]) -> dict[int, list[tuple[int, int, int]]]:
    return {
        t["state_id"]: sorted(
            (b["day"], b["slot_start"], b["slot_end"]) for b in t.get("slots") or ()
        )
        for t in tasks
    }


def check_into(task: EvalTask, out: Outcome) -> CheckResult:
    goal = task.goal.calendar
    assert goal is not None
    after = _blocks(out.state.to_dict()["tasks"])
    wrong = []
    for part in goal.into:
        days = set(part.days)
        inside = [
            tid for tid in part.task_ids if after.get(tid) and all(b[0] in days for b in after[tid])
        ]
        if part.count is None and len(inside) != len(part.task_ids):
            outside = [tid for tid in part.task_ids if tid not in inside]
            wrong.append(f"{outside} not on days {sorted(days)}")
        elif part.count is not None and len(inside) != part.count:
            wrong.append(
                f"{len(inside)} of {part.task_ids} on days {sorted(days)}, want {part.count}"
            )
    return CheckResult("into", not wrong, "; ".join(wrong) or "every named task where asked")


def check_unchanged(task: EvalTask, out: Outcome) -> CheckResult:
    goal = task.goal.calendar
    assert goal is not None
    before = _blocks(task.state["tasks"])
    after = _blocks(out.state.to_dict()["tasks"])
    moved = [tid for tid in goal.unchanged if before.get(tid) != after.get(tid)]
    return CheckResult(
        "unchanged", not moved, f"moved: {moved}" if moved else f"{len(goal.unchanged)} kept"
    )


def check_avoid(task: EvalTask, out: Outcome) -> CheckResult:
    """No task the request moved or placed uses the periods the student ruled out."""
    goal = task.goal.calendar
    assert goal is not None
    avoid = set(goal.avoid_periods)
    before = _blocks(task.state["tasks"])
    hits = [
        (tid, b)
        for tid, blocks in _blocks(out.state.to_dict()["tasks"]).items()
        if blocks != before.get(tid)
        for b in blocks
        if avoid & set(range(b[1], b[2] + 1))
    ]
    return CheckResult("avoid", not hits, f"on ruled-out periods: {hits}" if hits else "none")


def check_even(task: EvalTask, out: Outcome) -> CheckResult:
    goal = task.goal.calendar
    assert goal is not None and goal.even is not None
    even = goal.even
    per_day = dict.fromkeys(even.days, 0)
    for tid, blocks in _blocks(out.state.to_dict()["tasks"]).items():
        if tid in even.task_ids and blocks and blocks[0][0] in per_day:
            per_day[blocks[0][0]] += 1
    gap = max(per_day.values()) - min(per_day.values())
    return CheckResult("even", gap <= even.max_gap, f"per day {per_day} (gap {gap})")


def rule_breaks(data: dict[str, Any]) -> list[str]:
    """Every task-class rule a state's JSON breaks, in the reference system's meanings, read by
    the kit itself (not by the engine): a class's days (``start_day``/``end_day``), banned
    weekdays (``excluded_days_of_week``), banned half-day blocks (``excluded_slots``, block b =
    periods 2b-1 and 2b) and single periods (``excluded_periods``), water courses only when
    ``allow_filler_course``, and the order of its items (``task_order``: for two placed items
    a < b of one class, a ends strictly before b starts)."""
    classes = {c["id"]: c for c in data.get("task_classes") or ()}
    weekday = {m["day_index"]: m["day_of_week"] for m in data["window"].get("day_mapping") or ()}
    out: list[str] = []
    ordered: dict[int, list[tuple[int, tuple[int, int], tuple[int, int], int]]] = {}
    for t in data["tasks"]:
        cid = t.get("category_id", t.get("task_class_id"))
        slots = t.get("slots") or []
        if t.get("source", "task_item") == "event" or not slots or cid is None:
            continue
        who = f"[{t['state_id']}]"
        c = classes.get(cid)
        if c is not None:
            banned = {p for b in c.get("excluded_slots") or () for p in (2 * b - 1, 2 * b)}
            banned |= set(c.get("excluded_periods") or ())
            for b in slots:
                day = b["day"]
                if not c.get("start_day", 1) <= day <= c.get("end_day", day):
                    out.append(f"{who} day {day} outside class {cid}'s days")
                if weekday.get(day) in set(c.get("excluded_days_of_week") or ()):
                    out.append(f"{who} day {day} on a banned weekday of class {cid}")
                if banned & set(range(b["slot_start"], b["slot_end"] + 1)):
                    out.append(f"{who} day {day} on banned periods of class {cid}")
            if t.get("embed_host") is not None and not c.get("allow_filler_course", True):
                out.append(f"{who} in a water course, which class {cid} does not allow")
        if t.get("task_order"):
            first = min((b["day"], b["slot_start"]) for b in slots)
            last = max((b["day"], b["slot_end"]) for b in slots)
            ordered.setdefault(cid, []).append((t["task_order"], first, last, t["state_id"]))
    for cid, items in ordered.items():
        items.sort()
        for (oa, _, last_a, a), (ob, first_b, _, b) in itertools.pairwise(items):
            if not last_a < first_b:
                out.append(
                    f"[{a}] (order {oa}) does not end before [{b}] (order {ob}) of class {cid}"
                )
    return out


def check_rules(task: EvalTask, out: Outcome) -> CheckResult:
    breaks = rule_breaks(out.state.to_dict())
    return CheckResult("rules", not breaks, "; ".join(breaks[:5]) or "every class rule held")


Check = Callable[[EvalTask, Outcome], CheckResult]
# goal part -> (applies to the task, checker)
CHECKS: dict[str, tuple[Callable[[EvalTask], bool], Check]] = {
    "health": (lambda t: t.goal.health is not None, check_health),
    "placed": (lambda t: t.goal.placed_periods is not None, check_placed),
    "edit": (lambda t: t.goal.edit is not None, check_edit),
    "locked": (lambda t: True, check_locked),
    "frozen": (lambda t: t.goal.frozen_days > 0, check_frozen),
    "negotiation": (lambda t: t.goal.negotiation is not None, check_negotiation),
    "into": (lambda t: t.goal.calendar is not None and bool(t.goal.calendar.into), check_into),
    "unchanged": (
        lambda t: t.goal.calendar is not None and bool(t.goal.calendar.unchanged),
        check_unchanged,
    ),
    "avoid": (
        lambda t: t.goal.calendar is not None and bool(t.goal.calendar.avoid_periods),
        check_avoid,
    ),
    "even": (
        lambda t: t.goal.calendar is not None and t.goal.calendar.even is not None,
        check_even,
    ),
    "rules": (lambda t: t.goal.calendar is not None and t.goal.calendar.rules, check_rules),
    "round_cap": (lambda t: True, check_round_cap),
}


def grade(task: EvalTask, out: Outcome) -> list[CheckResult]:
    """Every goal part of ``task`` checked on ``out``, in the table's order."""
    return [check(task, out) for applies, check in CHECKS.values() if applies(task)]

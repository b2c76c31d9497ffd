"""``upsert_task_class`` (p1 §4.9, §6.2): create or update a task class and its items in one
transaction, then validate what was written; the caller commits only when validation passes.

Items are matched by ``id`` when given, else by their content within the class (so sending the
whole draft again updates it instead of duplicating it); unmatched items are created. Items the
call does not mention are kept. Validation looks at the class as written, with all its items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from . import models as m
from .days import ordinal
from .load import fallback_duration

STRATEGIES = ("steady", "rapid")
TOLERANCE_PREFERENCES = ("strict", "normal", "relaxed")  # the analyzers' threshold levels
SOURCES = ("chat", "memory", "web")
SLOTS_PER_DAY = 12  # the standard day (tool-layer §2): 6 pairs of periods
MAX_WINDOW_DAYS = 182  # a class spans at most half a year
MAX_ITEMS = 200  # items per class

# Every validation issue code, and what it says (the adapter renders the Chinese text).
ISSUE_CODES = (
    "missing_field",  # a required field is absent or blank
    "duplicate_class_name",  # another class of the user has this name
    "time_window_reversed",  # end before start
    "time_window_too_long",  # more than MAX_WINDOW_DAYS days
    "invalid_value",  # a value outside its allowed set or range
    "slot_out_of_range",  # excluded_slots outside 1..SLOTS_PER_DAY
    "duplicate_value",  # a period listed twice in excluded_slots
    "no_allowed_slot",  # every period of the day is excluded
    "total_slots_too_small",  # budget below the items' total duration
    "total_slots_exceeds_window",  # budget above the periods the window offers
    "duplicate_item_name",  # two items with the same content
    "duration_exceeds_allowed_run",  # an item longer than the longest run of allowed periods
    "unknown_dependency",  # depends_on names no item of the class
    "self_dependency",  # an item depends on itself
    "dependency_cycle",  # depends_on forms a cycle
    "too_many_items",  # more than MAX_ITEMS items in the class
)


class WeekDayInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    week: int
    day_of_week: int


class TaskClassInput(BaseModel):
    """Fields to write; ``None`` leaves a stored value as it is (on create: not given)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    start: WeekDayInput | None = None
    end: WeekDayInput | None = None
    total_slots: int | None = None
    strategy: str | None = None
    tolerance_preference: str | None = None
    excluded_slots: list[int] | None = None
    preferences: dict[str, Any] | None = None  # ordinary fields, merged key by key


class TaskItemInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    content: str | None = None
    duration: int | None = None
    priority: int | None = None
    depends_on: list[str] | None = None


@dataclass(frozen=True)
class ValidationIssue:
    """One repairable problem: ``field`` is a path into the call's arguments (``task_class.name``,
    ``items[2].duration``; ``items(id=17)`` for a stored item the call did not mention)."""

    code: str
    field: str
    actual: Any = None
    expected: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "field": self.field,
            "actual": self.actual,
            "expected": self.expected,
        }


@dataclass
class UpsertResult:
    success: bool
    task_class_id: int | None
    created: bool
    issues: list[ValidationIssue] = field(default_factory=list)
    error_code: str = ""  # "" | not_found | validation_failed | db_error
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ItemSnapshot:
    path: str
    content: str
    duration: int | None
    depends_on: list[str]


@dataclass
class ClassSnapshot:
    """A task class as written, for :func:`validate_task_class`."""

    name: str
    start: tuple[int, int] | None
    end: tuple[int, int] | None
    total_slots: int | None
    strategy: str | None
    tolerance_preference: str | None
    excluded_slots: list[int]
    items: list[ItemSnapshot]
    other_class_names: set[str] = field(default_factory=set)
    # The column cannot be NULL, so "never given" is known only when the class is created.
    excluded_slots_given: bool = True


def validate_task_class(snap: ClassSnapshot) -> list[ValidationIssue]:
    """Field legality and completeness of a written class (p1 §4.8 后置校验), as data."""
    issues: list[ValidationIssue] = []

    def add(code: str, where: str, actual: Any = None, expected: Any = None) -> None:
        issues.append(ValidationIssue(code, where, actual, expected))

    tc = "task_class"
    if not snap.name.strip():
        add("missing_field", f"{tc}.name")
    elif snap.name.strip() in snap.other_class_names:
        add("duplicate_class_name", f"{tc}.name", snap.name)
    # Key fields of p1 §4.8 (a missing one fails validation, §4.9).
    for key, value in (
        ("start", snap.start),
        ("end", snap.end),
        ("total_slots", snap.total_slots),
        ("strategy", snap.strategy),
        ("tolerance_preference", snap.tolerance_preference),
    ):
        if value is None:
            add("missing_field", f"{tc}.{key}")
    if not snap.excluded_slots_given:
        add("missing_field", f"{tc}.excluded_slots")
    if snap.strategy is not None and snap.strategy not in STRATEGIES:
        add("invalid_value", f"{tc}.strategy", snap.strategy, list(STRATEGIES))
    if (
        snap.tolerance_preference is not None
        and snap.tolerance_preference not in TOLERANCE_PREFERENCES
    ):
        add(
            "invalid_value",
            f"{tc}.tolerance_preference",
            snap.tolerance_preference,
            list(TOLERANCE_PREFERENCES),
        )

    window_days: int | None = None
    if snap.start is not None and snap.end is not None:
        for key, (_week, dow) in (("start", snap.start), ("end", snap.end)):
            if not 1 <= dow <= 7:
                add("invalid_value", f"{tc}.{key}.day_of_week", dow, "1-7")
        span = ordinal(*snap.end) - ordinal(*snap.start) + 1
        if span < 1:
            add(
                "time_window_reversed",
                f"{tc}.end",
                {"week": snap.end[0], "day_of_week": snap.end[1]},
                {"week": snap.start[0], "day_of_week": snap.start[1]},
            )
        elif span > MAX_WINDOW_DAYS:
            add("time_window_too_long", f"{tc}.end", span, MAX_WINDOW_DAYS)
        else:
            window_days = span

    bad = sorted({s for s in snap.excluded_slots if not 1 <= s <= SLOTS_PER_DAY})
    if bad:
        add("slot_out_of_range", f"{tc}.excluded_slots", bad, f"1-{SLOTS_PER_DAY}")
    if len(set(snap.excluded_slots)) != len(snap.excluded_slots):
        dups = sorted({s for s in snap.excluded_slots if snap.excluded_slots.count(s) > 1})
        add("duplicate_value", f"{tc}.excluded_slots", dups)
    allowed = [s for s in range(1, SLOTS_PER_DAY + 1) if s not in set(snap.excluded_slots)]
    if not allowed:
        add("no_allowed_slot", f"{tc}.excluded_slots", len(snap.excluded_slots))
    longest = _longest_run(allowed)

    if not snap.items:
        add("missing_field", "items")
    if len(snap.items) > MAX_ITEMS:
        add("too_many_items", "items", len(snap.items), MAX_ITEMS)
    total_duration = 0
    seen: dict[str, str] = {}
    for item in snap.items:
        content = item.content.strip()
        if not content:
            add("missing_field", f"{item.path}.content")
        elif content in seen:
            add("duplicate_item_name", f"{item.path}.content", content, f"unique ({seen[content]})")
        else:
            seen[content] = item.path
        duration = item.duration
        if duration is None:
            duration = fallback_duration(snap.total_slots, len(snap.items), SLOTS_PER_DAY)
        elif not 1 <= duration <= SLOTS_PER_DAY:
            add("invalid_value", f"{item.path}.duration", duration, f"1-{SLOTS_PER_DAY}")
            continue
        if allowed and duration > longest:
            add("duration_exceeds_allowed_run", f"{item.path}.duration", duration, longest)
        total_duration += duration
    if snap.total_slots is not None:
        if snap.total_slots < 1:
            add("invalid_value", f"{tc}.total_slots", snap.total_slots, ">= 1")
        elif snap.total_slots < total_duration:
            add("total_slots_too_small", f"{tc}.total_slots", snap.total_slots, total_duration)
        if window_days is not None and allowed:
            cap = window_days * len(allowed)
            if snap.total_slots > cap:
                add("total_slots_exceeds_window", f"{tc}.total_slots", snap.total_slots, cap)
    issues += _dependency_issues(snap.items)
    return issues


def _longest_run(allowed: list[int]) -> int:
    best = run = 0
    prev = None
    for s in allowed:
        run = run + 1 if prev is not None and s == prev + 1 else 1
        best, prev = max(best, run), s
    return best


def _dependency_issues(items: Sequence[ItemSnapshot]) -> list[ValidationIssue]:
    names = {it.content.strip(): it for it in items if it.content.strip()}
    issues: list[ValidationIssue] = []
    graph: dict[str, list[str]] = {}
    for it in items:
        me = it.content.strip()
        for dep in it.depends_on:
            dep = dep.strip()
            if dep == me:
                issues.append(ValidationIssue("self_dependency", f"{it.path}.depends_on", dep))
            elif dep not in names:
                issues.append(
                    ValidationIssue(
                        "unknown_dependency", f"{it.path}.depends_on", dep, sorted(names)
                    )
                )
            else:
                graph.setdefault(me, []).append(dep)
    # A cycle: depth-first search with colours (0 new, 1 on the stack, 2 done).
    colour: dict[str, int] = {}
    for start in graph:
        if colour.get(start):
            continue
        stack = [(start, iter(graph.get(start, ())))]
        colour[start] = 1
        while stack:
            node, deps = stack[-1]
            nxt = next(deps, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
            elif colour.get(nxt, 0) == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(graph.get(nxt, ()))))
            elif colour[nxt] == 1:
                on_stack = [n for n, _ in stack]
                cycle = [*on_stack[on_stack.index(nxt) :], nxt]
                issues.append(
                    ValidationIssue("dependency_cycle", f"{names[node].path}.depends_on", cycle)
                )
                return issues
    return issues


def upsert_task_class(
    session: Session,
    user_id: int,
    class_id: int,
    fields: TaskClassInput,
    items: Sequence[TaskItemInput],
    source: str | None = None,
) -> UpsertResult:
    """Write the class then its items, then validate; the caller commits on success only."""
    created = class_id == 0
    if created:
        row = m.TaskClass(user_id=user_id, name="", excluded_slots=[], preferences={})
        session.add(row)
    else:
        found = session.get(m.TaskClass, class_id)
        if found is None or found.user_id != user_id:  # another user's id reads as missing
            return UpsertResult(
                False, None, False, error_code="not_found", detail={"task_class_id": class_id}
            )
        row = found
    _write_class(row, fields)
    if source is not None:
        row.source = source
    session.flush()

    stored = list(
        session.scalars(
            select(m.TaskClassItem)
            .where(m.TaskClassItem.category_id == row.id)
            .order_by(m.TaskClassItem.position, m.TaskClassItem.id)
        )
    )
    by_id = {it.id: it for it in stored}
    by_content = {it.content: it for it in reversed(stored)}
    claimed: set[int] = set()
    touched: list[tuple[m.TaskClassItem, str]] = []  # each item of the call, with its path
    next_pos = max((it.position for it in stored), default=-1) + 1
    for i, inp in enumerate(items):
        target: m.TaskClassItem | None = None
        if inp.id is not None:
            target = by_id.get(inp.id)
            if target is None:
                return UpsertResult(
                    False,
                    None if created else row.id,
                    False,
                    error_code="not_found",
                    detail={"item_id": inp.id},
                )
        elif inp.content is not None:
            match = by_content.get(inp.content.strip())
            if match is not None and match.id not in claimed:
                target = match
        if target is None:
            target = m.TaskClassItem(
                user_id=user_id,
                category_id=row.id,
                content="",
                status="pending",
                position=next_pos,
                depends_on=[],
            )
            next_pos += 1
            session.add(target)
        else:
            claimed.add(target.id)
        if inp.content is not None:
            target.content = inp.content.strip()
        if inp.duration is not None:
            target.duration = inp.duration
        if inp.priority is not None:
            target.priority = inp.priority
        if inp.depends_on is not None:
            target.depends_on = [d.strip() for d in inp.depends_on]
        touched.append((target, f"items[{i}]"))
    session.flush()
    paths = {it.id: path for it, path in touched}

    # Post-write validation on what the tables now hold.
    session.refresh(row)
    written = list(
        session.scalars(
            select(m.TaskClassItem)
            .where(m.TaskClassItem.category_id == row.id)
            .order_by(m.TaskClassItem.position, m.TaskClassItem.id)
        )
    )
    others = set(
        session.scalars(
            select(m.TaskClass.name).where(m.TaskClass.user_id == user_id, m.TaskClass.id != row.id)
        )
    )
    snap = ClassSnapshot(
        name=row.name,
        start=_pair(row.start_week, row.start_day_of_week),
        end=_pair(row.end_week, row.end_day_of_week),
        total_slots=row.total_slots,
        strategy=row.strategy,
        tolerance_preference=row.tolerance_preference,
        excluded_slots=list(row.excluded_slots or []),
        items=[
            ItemSnapshot(
                paths.get(it.id, f"items(id={it.id})"),
                it.content,
                it.duration,
                list(it.depends_on or []),
            )
            for it in written
        ],
        other_class_names={n.strip() for n in others},
        excluded_slots_given=not created or fields.excluded_slots is not None,
    )
    issues = validate_task_class(snap)
    if issues:
        return UpsertResult(
            False, None if created else row.id, False, issues, error_code="validation_failed"
        )
    return UpsertResult(True, row.id, created)


def _pair(week: int | None, dow: int | None) -> tuple[int, int] | None:
    return (week, dow) if week is not None and dow is not None else None


def _write_class(row: m.TaskClass, fields: TaskClassInput) -> None:
    if fields.name is not None:
        row.name = fields.name.strip()
    if fields.start is not None:
        row.start_week, row.start_day_of_week = fields.start.week, fields.start.day_of_week
    if fields.end is not None:
        row.end_week, row.end_day_of_week = fields.end.week, fields.end.day_of_week
    if fields.total_slots is not None:
        row.total_slots = fields.total_slots
    if fields.strategy is not None:
        row.strategy = fields.strategy
    if fields.tolerance_preference is not None:
        row.tolerance_preference = fields.tolerance_preference
    if fields.excluded_slots is not None:
        row.excluded_slots = list(fields.excluded_slots)
    if fields.preferences:
        row.preferences = {**(row.preferences or {}), **fields.preferences}

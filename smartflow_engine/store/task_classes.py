"""``upsert_task_class`` (p1 §4.9, §6.2): create or update a task class and its items in one
transaction, then validate what was written; the caller commits only when validation passes.

Items are matched by ``id`` when given, else by their content within the class (so sending the
whole draft again updates it instead of duplicating it); unmatched items are created. Items the
call does not mention are kept. Validation looks at the class as written, with all its items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from . import models as m
from .days import ordinal
from .load import extensions, fallback_duration, has_extension

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


class BackendConfig(BaseModel):
    """SmartFlow-Agent's ``UserAddTaskClassConfig``: ``excluded_slots`` are half-day blocks
    1..6 (block b = sections 2b-1, 2b), ``excluded_days_of_week`` weekdays 1..7."""

    model_config = ConfigDict(extra="forbid")

    total_slots: int | None = None
    allow_filler_course: bool | None = None
    strategy: str | None = None
    excluded_slots: list[int] | None = None
    excluded_days_of_week: list[int] | None = None


class TaskClassInput(BaseModel):
    """Fields to write; ``None`` leaves a stored value as it is (on create: not given).

    Two payloads are accepted: today's (``start``/``end`` teaching-week days, single banned
    periods in ``excluded_slots``, ``tolerance_preference``, preferences) and SmartFlow-Agent's
    ``UserAddTaskClassRequest`` (``mode``, ``start_date``/``end_date``, the profile and
    ``config``), which :meth:`from_backend` reads."""

    model_config = ConfigDict(extra="forbid")

    # SmartFlow-Agent's payload
    mode: str | None = None
    start_date: date | None = None
    end_date: date | None = None
    subject_type: str | None = None
    difficulty_level: str | None = None
    cognitive_intensity: str | None = None
    config: BackendConfig | None = None
    # today's payload

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
    order: int | None = None  # SmartFlow-Agent's item order (1..)
    content: str | None = None
    duration: int | None = None
    priority: int | None = None
    depends_on: list[str] | None = None


def from_backend(payload: dict[str, Any]) -> tuple[TaskClassInput, list[TaskItemInput]]:
    """SmartFlow-Agent's ``{task_class: {...}, items: [{order, content}]}`` (or its flat
    ``UserAddTaskClassRequest``) as the store's inputs.

    Raises
    ------
    pydantic.ValidationError
        A field of the wrong type or an unknown one.
    """
    body = dict(payload.get("task_class", payload))
    items = payload.get("items", body.pop("items", []))
    body.pop("items", None)
    fields = TaskClassInput.model_validate(body)
    return fields, [TaskItemInput.model_validate(it) for it in items or []]


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
    # SmartFlow-Agent's payload: half-day blocks and weekdays (None: not that payload)
    backend: bool = False
    excluded_blocks: list[int] = field(default_factory=list)
    excluded_days: list[int] = field(default_factory=list)


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
    # Key fields of p1 §4.8 (a missing one fails validation, §4.9); SmartFlow-Agent's payload
    # has no tolerance_preference and its bans are optional.
    keys: list[tuple[str, Any]] = [
        ("start", snap.start),
        ("end", snap.end),
        ("total_slots", snap.total_slots),
        ("strategy", snap.strategy),
    ]
    if not snap.backend:
        keys.append(("tolerance_preference", snap.tolerance_preference))
    for key, value in keys:
        if value is None:
            add("missing_field", f"{tc}.{key}")
    if not snap.excluded_slots_given and not snap.backend:
        add("missing_field", f"{tc}.excluded_slots")
    bad_blocks = sorted({b for b in snap.excluded_blocks if not 1 <= b <= SLOTS_PER_DAY // 2})
    if bad_blocks:
        add(
            "slot_out_of_range",
            f"{tc}.config.excluded_slots",
            bad_blocks,
            f"1-{SLOTS_PER_DAY // 2}",
        )
    bad_days = sorted({d for d in snap.excluded_days if not 1 <= d <= 7})
    if bad_days:
        add("invalid_value", f"{tc}.config.excluded_days_of_week", bad_days, "1-7")
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
    banned = set(snap.excluded_slots) | {
        s for b in snap.excluded_blocks for s in (2 * b - 1, 2 * b) if 1 <= b <= SLOTS_PER_DAY // 2
    }
    allowed = [s for s in range(1, SLOTS_PER_DAY + 1) if s not in banned]
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
    *,
    semester_start: date | None = None,
) -> UpsertResult:
    """Write the class then its items, then validate; the caller commits on success only.

    The backend's columns take what they can hold (name, dates from ``start``/``end`` when the
    semester start is known, ``total_slots``, ``strategy``); the rest (``start``/``end`` as
    teaching-week days, single banned periods, ``tolerance_preference``, preferences, an item's
    duration, priority and dependencies) goes to the extension table, and without one
    ``detail["not_stored"]`` names the fields that were dropped."""
    ext_ok = has_extension(session)
    created = class_id == 0
    if created:
        row = m.TaskClass(user_id=user_id, name="", mode="auto")
        session.add(row)
        class_ext: dict[str, Any] = {}
    else:
        found = session.get(m.TaskClass, class_id)
        if found is None or found.user_id != user_id:  # another user's id reads as missing
            return UpsertResult(
                False, None, False, error_code="not_found", detail={"task_class_id": class_id}
            )
        row = found
        class_ext = extensions(session, "task_class", [row.id]).get(row.id, {})
    not_stored = _write_class(row, class_ext, fields, semester_start)
    if source is not None:
        class_ext["source"] = source
    session.flush()

    stored = list(
        session.scalars(
            select(m.TaskItem)
            .where(m.TaskItem.category_id == row.id)
            .order_by(m.TaskItem.order, m.TaskItem.id)
        )
    )
    item_ext = extensions(session, "task_item", [it.id for it in stored])
    by_id = {it.id: it for it in stored}
    by_content = {(it.content or ""): it for it in reversed(stored)}
    claimed: set[int] = set()
    touched: list[tuple[m.TaskItem, str, dict[str, Any]]] = []  # item, path, its extension
    next_pos = max((it.order or 0 for it in stored), default=0) + 1
    for i, inp in enumerate(items):
        target: m.TaskItem | None = None
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
            target = m.TaskItem(
                category_id=row.id, content="", status=m.ITEM_UNSCHEDULED, order=next_pos
            )
            next_pos += 1
            session.add(target)
            ext: dict[str, Any] = {}
        else:
            claimed.add(target.id)
            ext = item_ext.setdefault(target.id, {})
        if inp.content is not None:
            target.content = inp.content.strip()
        if inp.order is not None:
            target.order = inp.order
        for key in ("duration", "priority"):
            if getattr(inp, key) is not None:
                ext[key] = getattr(inp, key)
        if inp.depends_on is not None:
            ext["depends_on"] = [d.strip() for d in inp.depends_on]
        touched.append((target, f"items[{i}]", ext))
    session.flush()
    paths = {it.id: path for it, path, _ in touched}
    for it, _, ext in touched:
        item_ext[it.id] = ext
    if ext_ok:
        _save_ext(session, "task_class", {row.id: class_ext})
        _save_ext(session, "task_item", {it.id: ext for it, _, ext in touched})
    else:
        not_stored += sorted({f"items.{k}" for _, _, ext in touched for k in ext})
        not_stored += [f"task_class.{k}" for k in sorted(class_ext) if k not in not_stored]

    # Post-write validation on what the tables now hold.
    session.refresh(row)
    written = list(
        session.scalars(
            select(m.TaskItem)
            .where(m.TaskItem.category_id == row.id)
            .order_by(m.TaskItem.order, m.TaskItem.id)
        )
    )
    others = set(
        session.scalars(
            select(m.TaskClass.name).where(m.TaskClass.user_id == user_id, m.TaskClass.id != row.id)
        )
    )
    snap = ClassSnapshot(
        name=row.name or "",
        start=_pair(class_ext.get("start")) or _date_pair(row.start_date),
        end=_pair(class_ext.get("end")) or _date_pair(row.end_date),
        total_slots=row.total_slots,
        strategy=class_ext.get("strategy", row.strategy),
        tolerance_preference=class_ext.get("tolerance_preference"),
        excluded_slots=list(class_ext.get("excluded_periods", [])),
        items=[
            ItemSnapshot(
                paths.get(it.id, f"items(id={it.id})"),
                it.content or "",
                item_ext.get(it.id, {}).get("duration"),
                list(item_ext.get(it.id, {}).get("depends_on", [])),
            )
            for it in written
        ],
        other_class_names={n.strip() for n in others if n},
        excluded_slots_given=not created or fields.excluded_slots is not None,
        backend=fields.config is not None,
        excluded_blocks=list(row.excluded_slots or []),
        excluded_days=list(row.excluded_days_of_week or []),
    )
    issues = validate_task_class(snap)
    if issues:
        return UpsertResult(
            False, None if created else row.id, False, issues, error_code="validation_failed"
        )
    detail = {"not_stored": not_stored} if not_stored and not ext_ok else {}
    return UpsertResult(True, row.id, created, detail=detail)


def _save_ext(session: Session, kind: str, data: dict[int, dict[str, Any]]) -> None:
    """Replace the extension rows of ``data``'s ids (an empty dict removes the row)."""
    if not data:
        return
    session.execute(
        delete(m.Extension).where(m.Extension.kind == kind, m.Extension.ref_id.in_(list(data)))
    )
    session.add_all(
        [m.Extension(kind=kind, ref_id=ref, data=value) for ref, value in data.items() if value]
    )
    session.flush()


def _pair(value: Any) -> tuple[int, int] | None:
    if isinstance(value, dict) and "week" in value and "day_of_week" in value:
        return int(value["week"]), int(value["day_of_week"])
    return None


def _date_pair(value: datetime | date | None) -> tuple[int, int] | None:
    """A date as a (week, day_of_week) pair on a Monday-aligned count (spans and order hold)."""
    if value is None:
        return None
    n = value.toordinal() - 1  # 0001-01-01 is a Monday
    return n // 7, n % 7 + 1


def _as_date(semester_start: date | None, week: int, dow: int) -> datetime | None:
    if semester_start is None or week < 1 or not 1 <= dow <= 7:
        return None
    day = semester_start + timedelta(days=(week - 1) * 7 + dow - 1)
    return datetime(day.year, day.month, day.day)


def _set_strategy(row: m.TaskClass, ext: dict[str, Any], strategy: str) -> None:
    """The column holds steady/rapid; another value is kept aside for the validation to name."""
    row.strategy = strategy if strategy in STRATEGIES else None
    if strategy in STRATEGIES:
        ext.pop("strategy", None)
    else:
        ext["strategy"] = strategy


def _write_class(
    row: m.TaskClass, ext: dict[str, Any], fields: TaskClassInput, semester_start: date | None
) -> list[str]:
    """Write ``fields`` into the class row and its extension data; returns the fields that
    have no column of the backend's (stored only with the extension table)."""
    if fields.name is not None:
        row.name = fields.name.strip()
    for attr in ("mode", "subject_type", "difficulty_level", "cognitive_intensity"):
        if getattr(fields, attr) is not None:
            setattr(row, attr, getattr(fields, attr))
    for key, day in (("start", fields.start_date), ("end", fields.end_date)):
        if day is not None:
            setattr(row, f"{key}_date", datetime(day.year, day.month, day.day))
            ext.pop(key, None)  # the date wins over an older teaching-week day
    cfg = fields.config
    if cfg is not None:
        if cfg.total_slots is not None:
            row.total_slots = cfg.total_slots
        if cfg.allow_filler_course is not None:
            row.allow_filler_course = cfg.allow_filler_course
        if cfg.strategy is not None:
            _set_strategy(row, ext, cfg.strategy)
        if cfg.excluded_slots is not None:
            row.excluded_slots = list(cfg.excluded_slots)
        if cfg.excluded_days_of_week is not None:
            row.excluded_days_of_week = list(cfg.excluded_days_of_week)
    for key, value in (("start", fields.start), ("end", fields.end)):
        if value is not None:
            ext[key] = value.model_dump()
            dated = _as_date(semester_start, value.week, value.day_of_week)
            if dated is not None:
                setattr(row, f"{key}_date", dated)
    if fields.total_slots is not None:
        row.total_slots = fields.total_slots
    if fields.strategy is not None:
        _set_strategy(row, ext, fields.strategy)
    if fields.tolerance_preference is not None:
        ext["tolerance_preference"] = fields.tolerance_preference
    if fields.excluded_slots is not None:
        # today's payload bans single periods (the backend's column holds half-day blocks)
        ext["excluded_periods"] = list(fields.excluded_slots)
    if fields.preferences:
        ext.update(fields.preferences)
    return [f"task_class.{k}" for k in sorted(ext)]

"""The schedule state: the spec's §3 JSON as validated pydantic models.

The state is the single source of truth; the occupancy grid (:mod:`.grid`) is derived from it and
kept in step by the operations in :mod:`.ops`. Invariants are checked where the state is built, with
a one-line message naming the task, the day and the periods.
"""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .calendar import Calendar, mapping_problem, parse_date
from .class_rules import ClassRules
from .grid import Grid

Status = Literal["existing", "suggested", "pending"]
TaskSource = Literal["event", "task_item"]  # ScheduleEvent (a course) or TaskClassItem (study)
STATUSES: tuple[Status, ...] = get_args(Status)

MAX_DAYS = 1000
MAX_SLOTS_PER_DAY = 24
MAX_TASK_ID = 2**31 - 1


class StateError(ValueError):
    """A state that breaks an invariant (overlap, range out of the window, ...)."""


class SlotRange(BaseModel):
    """One contiguous block of periods on one day, both ends inclusive."""

    # Strict: a state file's integers are JSON integers, not "1", 1.0 or true.
    model_config = ConfigDict(extra="forbid", strict=True)

    day: int
    slot_start: int
    slot_end: int

    @property
    def length(self) -> int:
        return self.slot_end - self.slot_start + 1


class DayMapping(BaseModel):
    """One day of the window in the calendar: its teaching week, weekday and (optionally) date."""

    model_config = ConfigDict(extra="forbid", strict=True)

    day_index: int
    week: int = Field(ge=1, le=MAX_DAYS)  # teaching weeks count from 1
    day_of_week: int = Field(ge=1, le=7)
    date: str | None = None  # YYYY-MM-DD (our extension: a date per day)


class Window(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    total_days: int = Field(ge=1, le=MAX_DAYS)
    slots_per_day: int = Field(default=12, ge=1, le=MAX_SLOTS_PER_DAY)
    day_mapping: list[DayMapping] = Field(default_factory=list)
    # The date of week 1's Monday, YYYY-MM-DD (our extension; SMARTFLOW_SEMESTER_START fills it).
    semester_start: str | None = None

    @property
    def total_slots(self) -> int:
        return self.total_days * self.slots_per_day


Level = Literal["low", "medium", "high"]
SubjectType = Literal["quantitative", "memory", "reading", "mixed"]
TolerancePreference = Literal["strict", "normal", "relaxed"]

# The reference system's TaskClassMeta writes these lists as JSON null when empty (Go nil slices).
_NULLABLE_LISTS = ("excluded_slots", "excluded_days_of_week")
# ... and these strings are left out when empty (omitempty); an empty one means "not given".
_OPTIONAL_TEXTS = (
    "start_date",
    "end_date",
    "subject_type",
    "difficulty_level",
    "cognitive_intensity",
)


class TaskClass(BaseModel):
    """A task class: the reference system's ``TaskClassMeta`` plus our own fields.

    What each field means (the constraints are read through :attr:`ScheduleState.class_rules`,
    never from these fields directly):

    - ``excluded_slots``: banned **half-day blocks** 1..6 (block b = periods 2b-1 and 2b);
    - ``excluded_days_of_week``: banned weekdays, 1 = Monday … 7 = Sunday;
    - ``allow_filler_course``: whether the class's items may be embedded in water courses;
    - ``start_date`` / ``end_date`` (YYYY-MM-DD) and our ``start_day`` / ``end_day`` (window
      days): the days its items may use, all bounds holding together;
    - ``excluded_periods`` (ours): single banned periods, on every day;
    - ``strategy``, ``total_slots`` and the profile (``subject_type``, ``difficulty_level``,
      ``cognitive_intensity``) and the p1 preference fields describe the class to the analyzers
      and the solver (docs/decisions.md lists what each one does).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    # the reference system's TaskClassMeta
    id: int
    name: str
    strategy: str | None = None  # "steady" | "rapid" upstream
    total_slots: int | None = Field(default=None, ge=0)
    allow_filler_course: bool = True
    excluded_slots: list[int] = Field(default_factory=list)
    excluded_days_of_week: list[int] = Field(default_factory=list)
    start_date: str | None = None
    end_date: str | None = None
    subject_type: SubjectType | None = None
    difficulty_level: Level | None = None
    cognitive_intensity: Level | None = None
    # ours
    start_day: int | None = None
    end_day: int | None = None
    excluded_periods: list[int] = Field(default_factory=list)
    # the p1 plan's task-class fields (upsert_task_class, §4.8-4.9)
    tolerance_preference: TolerancePreference | None = None
    time_of_day: str | None = None
    time_of_day_weight: float | None = None
    preferred_slots: list[int] | None = None
    same_category_aggregation_preference: bool | None = None
    aggregate_same_category: bool | None = None
    milestones: list[str] | None = None
    knowledge_tags: list[str] | None = None
    notes: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _upstream_empties(cls, data: Any) -> Any:
        """Go's empty values mean "not given": a null list is empty, an empty string absent."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for key in _NULLABLE_LISTS:
            if key in out and out[key] is None:
                out[key] = []
        for key in _OPTIONAL_TEXTS:
            if out.get(key) == "":
                out[key] = None
        return out

    @model_validator(mode="after")
    def _check_meaning(self) -> TaskClass:
        who = f"task class [{self.id}] {self.name}"
        if self.excluded_slots and "allow_filler_course" not in self.model_fields_set:
            # Before issue 42 excluded_slots held single periods; the same numbers now mean
            # half-day blocks. A class without allow_filler_course (which the reference system
            # always writes) may be in the old form: refuse rather than guess.
            raise StateError(
                f"{who}: excluded_slots {self.excluded_slots} are half-day blocks 1-6 (block b is "
                f"periods 2b-1 and 2b, as in SmartFlow-Agent's TaskClassMeta) and this class does "
                f"not say allow_filler_course; write banned single periods as excluded_periods "
                f"{self.excluded_slots}, or give allow_filler_course (true/false) beside "
                f"excluded_slots to mean half-day blocks"
            )
        for name in ("start_date", "end_date"):
            value = getattr(self, name)
            if value is not None:
                try:
                    parse_date(value)
                except ValueError as exc:
                    raise StateError(f"{who}: {name} {exc}") from None
        if (
            self.start_date is not None
            and self.end_date is not None
            and parse_date(self.start_date) > parse_date(self.end_date)
        ):
            raise StateError(
                f"{who}: start_date {self.start_date} is after end_date {self.end_date} "
                f"(no day left)"
            )
        bad_days = [d for d in self.excluded_days_of_week if not 1 <= d <= 7]
        if bad_days:
            raise StateError(
                f"{who}: excluded_days_of_week {bad_days} outside 1-7 (1 = Monday, 7 = Sunday)"
            )
        return self


class Task(BaseModel):
    """One task of the window: a course, a placed study task or a pending one.

    ``task_class_id`` is its task class (the reference system writes it twice, also as
    ``category_id``; either key is read, :meth:`ScheduleState.to_dict` writes the spec's
    ``category_id``); ``task_order`` its place in the class's sequence (items of one class keep
    their order, :mod:`.class_rules`).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    state_id: int = Field(ge=1, le=MAX_TASK_ID)
    source: TaskSource = "task_item"
    source_id: int = 0
    name: str
    category: str = ""
    status: Status
    locked: bool = False
    can_embed: bool = False
    slots: list[SlotRange] = Field(default_factory=list)
    duration: int | None = None
    task_class_id: int | None = None
    task_order: int | None = Field(default=None, ge=1)
    embedded_by: int | list[int] | None = None
    embed_host: int | None = None
    event_type: Literal["course", "task"] | None = None  # upstream's flush hint: carries nothing

    @model_validator(mode="before")
    @classmethod
    def _class_id_alias(cls, data: Any) -> Any:
        """``category_id`` is ``task_class_id``'s alias (upstream writes both, equal);
        ``task_order`` 0 means none (upstream enforces orders above 0 only)."""
        if not isinstance(data, dict) or (
            "category_id" not in data and data.get("task_order") != 0
        ):
            return data
        out = dict(data)
        if "category_id" in out:
            alias = out.pop("category_id")
            if "task_class_id" in out and out["task_class_id"] != alias:
                raise StateError(
                    f"task [{out.get('state_id')}] {out.get('name')}: task_class_id "
                    f"{out['task_class_id']} and category_id {alias} differ (category_id is "
                    f"task_class_id's other name)"
                )
            out["task_class_id"] = alias
        if out.get("task_order") == 0:
            out["task_order"] = None
        return out

    @property
    def category_id(self) -> int | None:
        """The task class id (``task_class_id``), under the spec's name."""
        return self.task_class_id

    @category_id.setter
    def category_id(self, value: int | None) -> None:
        self.task_class_id = value

    @property
    def is_placed(self) -> bool:
        return self.status != "pending"

    @property
    def label(self) -> str:
        return f"[{self.state_id}]{self.name}"

    def need(self) -> int:
        """Periods the task needs when placed: its duration, or its first block's length."""
        if self.duration is not None:
            return self.duration
        return self.slots[0].length if self.slots else 0


class ScheduleState(BaseModel):
    """A planning window and its tasks (the spec's §3.1 JSON, plus DESIGN.md's extensions)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    window: Window
    tasks: list[Task] = Field(default_factory=list)
    task_classes: list[TaskClass] = Field(default_factory=list)
    # The reference agent's run-time queue (its LLM's work list): kept as given, read by nothing.
    runtime_queue: Any = None

    _index: dict[int, Task] = PrivateAttr(default_factory=dict)
    _grid: Grid | None = PrivateAttr(default=None)
    _rules: ClassRules | None = PrivateAttr(default=None)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_json(cls, source: str | Path | dict[str, Any]) -> ScheduleState:
        """Load a state from JSON text, a path to a JSON file, or an already-parsed dict.

        Raises
        ------
        StateError
            One line naming what is wrong (invalid JSON, overlap, range out of the window, ...).
        """
        if isinstance(source, dict):
            data = source
        else:
            if isinstance(source, Path) or not source.lstrip().startswith("{"):
                text = _read_text(Path(source))
            else:
                text = source
            try:
                data = _loads(text)
            except json.JSONDecodeError as exc:
                raise StateError(f"invalid JSON: {exc}") from None
            except RecursionError:
                raise StateError("invalid JSON: nested too deeply") from None
        try:
            return cls.model_validate(data)
        except StateError:
            raise
        except ValueError as exc:
            raise StateError(_first_error_line(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """The state as the spec's JSON object; ``embedded_by`` is derived from the guests."""
        guests = self.guests_by_host()
        data = self.model_dump(mode="json", exclude_none=True)
        tidy_state_dict(data, bool(self.task_classes))
        for task_data in data["tasks"]:
            host = self._index.get(task_data.get("embed_host", 0))
            tidy_task_dict(
                task_data, host is not None and host.locked, guests.get(task_data["state_id"])
            )
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def copy_state(self) -> ScheduleState:
        """An independent deep copy (grid rebuilt lazily)."""
        return ScheduleState.model_validate(self.to_dict())

    # ------------------------------------------------------------------ lookups
    @property
    def num_days(self) -> int:
        return self.window.total_days

    @property
    def slots_per_day(self) -> int:
        return self.window.slots_per_day

    def task(self, task_id: int) -> Task | None:
        return self._index.get(task_id)

    def task_class(self, class_id: int | None) -> TaskClass | None:
        if class_id is None:
            return None
        for tc in self.task_classes:
            if tc.id == class_id:
                return tc
        return None

    def pending_tasks(self) -> list[Task]:
        return [t for t in self.tasks if t.status == "pending"]

    def placed_tasks(self) -> list[Task]:
        return [t for t in self.tasks if t.status != "pending"]

    def guests_by_host(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for t in self.tasks:
            if t.embed_host is not None:
                out.setdefault(t.embed_host, []).append(t.state_id)
        return out

    def is_locked(self, task: Task) -> bool:
        """A task is locked by its own flag or, for a guest, by its host's (lock inheritance)."""
        if task.locked:
            return True
        if task.embed_host is not None:
            host = self._index.get(task.embed_host)
            return bool(host is not None and host.locked)
        return False

    @property
    def grid(self) -> Grid:
        if self._grid is None:
            self._grid = Grid.build(self)
        return self._grid

    @property
    def class_rules(self) -> ClassRules:
        """The one reading of every class constraint (days, dates, weekdays, half-day blocks,
        banned periods, water-course permission, item order): see :mod:`.class_rules`."""
        if self._rules is None:
            self._rules = ClassRules(self)
        return self._rules

    @property
    def calendar(self) -> Calendar:
        """Each day's week, weekday and date, as far as the window says them."""
        return self.class_rules.calendar

    def apply_semester_start(self, semester_start: str | date | None) -> bool:
        """Give the window the date of week 1's Monday when it states no dates of its own (the
        ``SMARTFLOW_SEMESTER_START`` setting of a tool surface). Returns whether it was applied.

        Raises
        ------
        StateError
            ``semester_start`` is not a Monday written YYYY-MM-DD (nothing changes).
        """
        window = self.window
        if semester_start is None or window.semester_start is not None:
            return False
        if any(m.date is not None for m in window.day_mapping):
            return False
        text = semester_start.isoformat() if isinstance(semester_start, date) else semester_start
        trial = window.model_copy(update={"semester_start": text})
        try:
            parse_date(text)
        except ValueError as exc:
            raise StateError(f"semester start {exc}") from None
        if problem := mapping_problem(trial):
            raise StateError(problem)
        window.semester_start = text
        self._rules = None
        return True

    # ------------------------------------------------------------------ validation
    @model_validator(mode="before")
    @classmethod
    def _check_values(cls, data: Any) -> Any:
        if problem := _bad_value(data):
            raise StateError(problem)
        return data

    @model_validator(mode="after")
    def _check_invariants(self) -> ScheduleState:
        _validate(self)
        for task in self.tasks:  # derived from the guests' embed_host from here on
            if task.embedded_by is not None:
                task.embedded_by = None
        self._index = {t.state_id: t for t in self.tasks}
        self._grid = None
        self._rules = None
        return self


def tidy_state_dict(data: dict[str, Any], has_classes: bool) -> None:
    """The state's dump (``model_dump(mode="json", exclude_none=True)``, tasks or not) as
    :meth:`ScheduleState.to_dict` writes it: no empty ``task_classes``, a class's
    ``excluded_periods`` only when it bans something."""
    if not has_classes:
        data.pop("task_classes", None)
    for class_data in data.get("task_classes", ()):
        if not class_data.get("excluded_periods"):  # our extension: written when it says something
            class_data.pop("excluded_periods", None)


def tidy_task_dict(data: dict[str, Any], host_locked: bool, hosted: list[int] | None) -> None:
    """A task's dump as :meth:`ScheduleState.to_dict` writes it: the class under the spec's
    name ``category_id``, no empty slots of a pending task, ``can_embed`` only when true, a
    guest of a locked host locked, ``embedded_by`` from the guests (``hosted``)."""
    data.pop("embedded_by", None)
    if "task_class_id" in data:
        data["category_id"] = data.pop("task_class_id")
    if not data.get("slots") and data["status"] == "pending":
        data.pop("slots", None)
    if not data.get("can_embed"):
        data.pop("can_embed", None)
    if host_locked:
        data["locked"] = True  # a guest of a locked host is locked (is_locked)
    if hosted:
        data["embedded_by"] = hosted[0] if len(hosted) == 1 else hosted


MAX_NESTING = 64  # levels of JSON nesting a state may have (extra fields included)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read state file {path}: {exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bom = {b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}.get(raw[:2])
        found = f" (it looks like {bom})" if bom else ""
        raise StateError(
            f"state file {path} is not UTF-8 text{found}: byte {exc.start} "
            f"cannot be decoded; save it as UTF-8"
        ) from None


def _loads(text: str) -> Any:
    """JSON text to Python values: pydantic-core's parser (~1.5x the standard library's speed,
    which a cohort batch of thousands of states notices), and on anything it refuses the
    standard library's, which decides and words the error as before (lone surrogates, NaN and
    malformed text)."""
    try:
        return pydantic_core.from_json(text, allow_inf_nan=True)
    except (ValueError, TypeError):  # TypeError: text that is not UTF-8 (a lone surrogate)
        return json.loads(text)


def _bad_value(data: Any) -> str | None:
    """The first value JSON cannot carry faithfully: a string (or key) with a lone UTF-16
    surrogate (it cannot be written as UTF-8), a NaN or infinite number (not standard JSON), or
    nesting deeper than :data:`MAX_NESTING`. Iterative, so no input exhausts the stack.

    Every state loaded pays this check (a cohort batch parses thousands), so the common case is
    decided by :func:`_clean`, which builds no paths; the path-naming walk runs only when it
    finds something (or cannot tell), to name where."""
    return None if _clean(data) else _first_bad_value(data)


def _clean(data: Any) -> bool:
    """Whether ``data`` surely holds no bad value: walked level by level, containers only
    descended, every string (and key) encoded once at the end. ``False`` also when it meets a
    type other than JSON's (the naming walk then decides)."""
    level = [data]
    strings: list[str] = []
    for _depth in range(MAX_NESTING + 1):
        if not level:
            break
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                strings.extend(value)  # keys: a non-string one fails the join below
                items: Any = value.values()
            elif kind is list:
                items = value
            else:
                items = (value,)
            for v in items:
                kind = type(v)
                if kind is str:
                    strings.append(v)
                elif kind is dict or kind is list:
                    below.append(v)
                elif kind is float:
                    if not math.isfinite(v):
                        return False
                elif kind is not int and kind is not bool and v is not None:
                    return False
        level = below
        if _depth == MAX_NESTING - 1 and level:
            return False  # a container MAX_NESTING levels down
    try:
        "".join(strings).encode("utf-8")
    except (TypeError, UnicodeEncodeError):
        return False  # a key that is not a string, or a lone surrogate somewhere
    return True


def _first_bad_value(data: Any) -> str | None:
    """:func:`_bad_value`'s answer, naming the path of the first bad value (slow: builds a path
    for every value)."""
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        where = path or "state"
        if isinstance(value, str):
            if _has_surrogate(value):
                return f"{where}: string holds a lone UTF-16 surrogate (not valid Unicode text)"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return f"{where}: {value} is not a finite number (NaN/Infinity are not JSON)"
        elif isinstance(value, dict | list):
            if depth >= MAX_NESTING:
                return f"{where}: nested more than {MAX_NESTING} levels deep"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, sub in items:
                if isinstance(key, str) and _has_surrogate(key):
                    return f"{where}: a key holds a lone UTF-16 surrogate (not valid Unicode text)"
                name = (
                    f"{path}[{key}]"
                    if isinstance(key, int)
                    else (f"{path}.{key}" if path else str(key))
                )
                stack.append((name, sub, depth + 1))
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _first_error_line(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except Exception:  # pragma: no cover - defensive
            return str(exc).splitlines()[0]
        parts = [str(p) for p in first.get("loc", ())]
        loc = ".".join(parts)
        msg = str(first.get("msg", ""))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if first.get("type") == "extra_forbidden" and parts:
            where = ".".join(parts[:-1]) or "the state"
            return (
                f"{loc}: unknown field {parts[-1]!r} in {where} (not a field of the state "
                f"format: docs/decisions.md, issue 42, lists every field)"
            )
        return f"{loc}: {msg}" if loc else msg
    return str(exc).splitlines()[0]


def _who(task: Task) -> str:
    return f"task [{task.state_id}] {task.name}"


def _fmt(block: SlotRange) -> str:
    return f"day {block.day} periods {block.slot_start}-{block.slot_end}"


def _validate(state: ScheduleState) -> None:
    window = state.window
    num_days, spd = window.total_days, window.slots_per_day
    if window.day_mapping:
        if len(window.day_mapping) != num_days:
            raise StateError(
                f"window.day_mapping has {len(window.day_mapping)} entries, "
                f"total_days is {num_days}"
            )
        calendar: dict[tuple[int, int], int] = {}
        for i, dm in enumerate(window.day_mapping, start=1):
            if dm.day_index != i:
                raise StateError(
                    f"window.day_mapping[{i - 1}] has day_index {dm.day_index}, expected {i}"
                )
            first = calendar.setdefault((dm.week, dm.day_of_week), i)
            if first != i:
                raise StateError(
                    f"window.day_mapping: days {first} and {i} are both week "
                    f"{dm.week} day_of_week {dm.day_of_week}"
                )
            if dm.date is not None:
                try:
                    parse_date(dm.date)
                except ValueError as exc:
                    raise StateError(f"window.day_mapping[{i - 1}].date {exc}") from None
    if window.semester_start is not None:
        try:
            parse_date(window.semester_start)
        except ValueError as exc:
            raise StateError(f"window.semester_start {exc}") from None
    if problem := mapping_problem(window):
        raise StateError(problem)
    seen: dict[int, Task] = {}
    for task in state.tasks:
        if task.state_id in seen:
            raise StateError(
                f"duplicate state_id {task.state_id} ({seen[task.state_id].name} and {task.name})"
            )
        seen[task.state_id] = task
        if task.duration is not None and not 1 <= task.duration <= spd:
            raise StateError(f"{_who(task)}: duration {task.duration} outside 1-{spd}")
        if task.status == "pending":
            if task.slots:
                raise StateError(f"{_who(task)}: pending task has slots ({_fmt(task.slots[0])})")
            if task.duration is None:
                raise StateError(f"{_who(task)}: pending task has no duration")
            if task.embed_host is not None:
                raise StateError(f"{_who(task)}: pending task has embed_host {task.embed_host}")
        elif not task.slots:
            raise StateError(f"{_who(task)}: {task.status} task has no slots")
        for block in task.slots:
            if not 1 <= block.day <= num_days:
                raise StateError(
                    f"{_who(task)}: {_fmt(block)} is outside the window (days 1-{num_days})"
                )
            if not 1 <= block.slot_start <= block.slot_end <= spd:
                raise StateError(
                    f"{_who(task)}: {_fmt(block)} is not a period range within 1-{spd}"
                )
    class_ids: dict[int, TaskClass] = {}
    for tc in state.task_classes:
        if tc.id in class_ids:
            raise StateError(
                f"duplicate task class id {tc.id} ({class_ids[tc.id].name} and {tc.name})"
            )
        class_ids[tc.id] = tc
    blocks = (spd + 1) // 2
    for tc in state.task_classes:
        who = f"task class [{tc.id}] {tc.name}"
        bad = [b for b in tc.excluded_slots if not 1 <= b <= blocks]
        if bad:
            raise StateError(
                f"{who}: excluded_slots {bad} outside 1-{blocks} (half-day blocks: block b is "
                "periods 2b-1 and 2b; single periods go in excluded_periods)"
            )
        bad = [s for s in tc.excluded_periods if not 1 <= s <= spd]
        if bad:
            raise StateError(f"{who}: excluded_periods {bad} outside 1-{spd}")
        if tc.excluded_days_of_week and not window.day_mapping:
            raise StateError(
                f"{who}: excluded_days_of_week {tc.excluded_days_of_week} needs "
                f"window.day_mapping (which day of the window is which weekday)"
            )
        for name, value in (("start_day", tc.start_day), ("end_day", tc.end_day)):
            if value is not None and not 1 <= value <= num_days:
                raise StateError(f"{who}: {name} {value} is outside the window (days 1-{num_days})")
        if tc.start_day is not None and tc.end_day is not None and tc.start_day > tc.end_day:
            raise StateError(
                f"{who}: start_day {tc.start_day} is after end_day {tc.end_day} (no day left)"
            )

    # Occupancy: non-guest tasks may not share a period; a guest lies inside one host block.
    owner: dict[tuple[int, int], Task] = {}
    for task in state.tasks:
        if task.embed_host is not None:
            continue
        for block in task.slots:
            for slot in range(block.slot_start, block.slot_end + 1):
                other = owner.get((block.day, slot))
                if other is not None:
                    what = "itself" if other is task else f"task [{other.state_id}] {other.name}"
                    raise StateError(
                        f"task [{task.state_id}] {task.name} overlaps {what} on "
                        f"day {block.day} period {slot}"
                    )
                owner[(block.day, slot)] = task
    used_host_blocks: dict[tuple[int, int, int], Task] = {}
    for task in state.tasks:
        if task.embed_host is None:
            continue
        who = f"task [{task.state_id}] {task.name}"
        host = seen.get(task.embed_host)
        if host is None:
            raise StateError(f"{who}: embed_host {task.embed_host} does not exist")
        if not host.can_embed:
            raise StateError(f"{who}: host [{host.state_id}] {host.name} is not can_embed")
        if host.embed_host is not None:
            raise StateError(f"{who}: host [{host.state_id}] {host.name} is itself a guest")
        if len(task.slots) != 1:
            raise StateError(f"{who}: a guest must hold exactly one block")
        block = task.slots[0]
        inside = [
            hb
            for hb in host.slots
            if hb.day == block.day
            and hb.slot_start <= block.slot_start
            and block.slot_end <= hb.slot_end
        ]
        if not inside:
            raise StateError(
                f"{who}: guest {_fmt(block)} is not inside a block of host "
                f"[{host.state_id}] {host.name}"
            )
        key = (inside[0].day, inside[0].slot_start, host.state_id)
        if key in used_host_blocks:
            prev = used_host_blocks[key]
            raise StateError(
                f"{who}: host [{host.state_id}] {host.name} block {_fmt(inside[0])} "
                f"already holds guest [{prev.state_id}] {prev.name}"
            )
        used_host_blocks[key] = task
    for task in state.tasks:
        if task.embedded_by is None:
            continue
        claimed = task.embedded_by if isinstance(task.embedded_by, list) else [task.embedded_by]
        for gid in claimed:
            guest = seen.get(gid)
            if guest is None or guest.embed_host != task.state_id:
                raise StateError(
                    f"task [{task.state_id}] {task.name}: embedded_by {gid} but that "
                    f"task's embed_host is not {task.state_id}"
                )

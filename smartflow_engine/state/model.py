"""The schedule state: the spec's §3 JSON as validated pydantic models.

The state is the single source of truth; the occupancy grid (:mod:`.grid`) is derived from it and
kept in step by the operations in :mod:`.ops`. Invariants are checked where the state is built, with
a one-line message naming the task, the day and the periods.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal, get_args

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

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
    model_config = ConfigDict(extra="allow", strict=True)

    day_index: int
    week: int = Field(ge=1, le=MAX_DAYS)  # teaching weeks count from 1
    day_of_week: int = Field(ge=1, le=7)


class Window(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    total_days: int = Field(ge=1, le=MAX_DAYS)
    slots_per_day: int = Field(default=12, ge=1, le=MAX_SLOTS_PER_DAY)
    day_mapping: list[DayMapping] = Field(default_factory=list)

    @property
    def total_slots(self) -> int:
        return self.total_days * self.slots_per_day


class TaskClass(BaseModel):
    """TaskClass metadata the analyzers and the solver need (DESIGN.md extension).

    ``start_day``/``end_day`` bound the days its pending tasks may use; ``excluded_slots`` are the
    banned periods (1-based) on every day.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    id: int
    name: str
    total_slots: int | None = Field(default=None, ge=0)
    start_day: int | None = None
    end_day: int | None = None
    excluded_slots: list[int] = Field(default_factory=list)
    strategy: str | None = None


class Task(BaseModel):
    """One task of the window: a course, a placed study task or a pending one."""

    model_config = ConfigDict(extra="allow", strict=True)

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
    category_id: int | None = None
    embedded_by: int | list[int] | None = None
    embed_host: int | None = None

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

    model_config = ConfigDict(extra="allow", strict=True)

    window: Window
    tasks: list[Task] = Field(default_factory=list)
    task_classes: list[TaskClass] = Field(default_factory=list)

    _index: dict[int, Task] = PrivateAttr(default_factory=dict)
    _grid: Grid | None = PrivateAttr(default=None)

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
        if not self.task_classes:
            data.pop("task_classes", None)
        for task_data in data["tasks"]:
            sid = task_data["state_id"]
            task_data.pop("embedded_by", None)
            if not task_data.get("slots") and task_data["status"] == "pending":
                task_data.pop("slots", None)
            if not task_data.get("can_embed"):
                task_data.pop("can_embed", None)
            host = self._index.get(task_data.get("embed_host", 0))
            if host is not None and host.locked:
                task_data["locked"] = True  # a guest of a locked host is locked (is_locked)
            hosted = guests.get(sid)
            if hosted:
                task_data["embedded_by"] = hosted[0] if len(hosted) == 1 else hosted
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
        return self


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
        loc = ".".join(str(p) for p in first.get("loc", ()))
        msg = str(first.get("msg", ""))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
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
    for tc in state.task_classes:
        bad = [s for s in tc.excluded_slots if not 1 <= s <= spd]
        if bad:
            raise StateError(
                f"task class [{tc.id}] {tc.name}: excluded_slots {bad} outside 1-{spd}"
            )
        for name, value in (("start_day", tc.start_day), ("end_day", tc.end_day)):
            if value is not None and not 1 <= value <= num_days:
                raise StateError(
                    f"task class [{tc.id}] {tc.name}: {name} {value} is outside "
                    f"the window (days 1-{num_days})"
                )
        if tc.start_day is not None and tc.end_day is not None and tc.start_day > tc.end_day:
            raise StateError(
                f"task class [{tc.id}] {tc.name}: start_day {tc.start_day} is after "
                f"end_day {tc.end_day} (no day left)"
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

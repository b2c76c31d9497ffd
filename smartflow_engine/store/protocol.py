"""What the engine needs from a database, as a :class:`typing.Protocol` (PyVRP's ``stop/``
style): the tools adapter (sessions, the store tools, the HTTP and MCP servers) is typed against
:class:`ScheduleStore`, and :class:`.sql_store.Store` (SQLAlchemy) is its one implementation.

The result types are imported for the type checker only, so this module needs no SQL driver.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..state import Change, DayMapping, ScheduleState

if TYPE_CHECKING:
    from .commit import CommitResult
    from .rough_build import RoughBuild
    from .task_classes import TaskClassInput, TaskItemInput, UpsertResult

DayMappingLike = Iterable[DayMapping | Mapping[str, Any]]


@runtime_checkable
class ScheduleStore(Protocol):
    """Load a window, write a session back (or preview that write), upsert task classes (the
    ``upsert_task_class`` tool) and answer a rough build (``POST /v1/rough-build``). Every method acts on one user's rows only."""

    def load_window(
        self,
        user_id: int,
        day_mapping: DayMappingLike,
        *,
        slots_per_day: int = 12,
        task_class_ids: Collection[int] | None = None,
    ) -> ScheduleState: ...

    def commit(
        self, user_id: int, state: ScheduleState, changes: Sequence[Change]
    ) -> CommitResult: ...

    def preview_commit(
        self, user_id: int, state: ScheduleState, changes: Sequence[Change]
    ) -> CommitResult: ...

    def upsert_task_class(
        self,
        user_id: int,
        class_id: int,
        task_class: TaskClassInput,
        items: Sequence[TaskItemInput] = (),
        source: str | None = None,
    ) -> UpsertResult: ...

    def rough_build(
        self,
        user_id: int,
        task_class_ids: Collection[int],
        *,
        time_limit_s: float = 5.0,
        num_workers: int = 1,
        slots_per_day: int = 12,
    ) -> RoughBuild: ...

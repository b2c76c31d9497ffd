"""``commit``: write a session's change log back to the tables in one transaction (§6 数据库交互).

The log is first reduced to its net effect per task: the blocks the task held when the session
loaded the window and no longer holds (``removed``), and the blocks it holds now that it did not
hold then (``added``); a block left and later taken again cancels out. Then, in one transaction:

1. optimistic checks (on rows read ``FOR UPDATE``): every task still is what the session loaded
   (its item/event exists with the status the log starts from) and every removed block's rows are
   still there, as owner rows of the task's event carrying no guest the session did not see (a
   guest embedded by another commit meanwhile would otherwise lose its place with the host's
   rows), or, for a guest, as its host's rows carrying the guest;
2. removed blocks: a guest's mark is cleared from its host's rows, owner rows are deleted;
3. statuses: a placed task item gets its ``schedule_events`` row, an unplaced one loses it; an
   event's status follows the task (an unplaced event that still holds periods outside the block,
   e.g. other weeks of a course, is split off as a new pending event);
4. added blocks: owner rows inserted (after a check that nobody else holds those periods), then
   guests marked on their host's rows.

Any failure rolls everything back and is reported as a :class:`CommitResult` with ``ok=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import time
from typing import Any, cast

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Connection,
    Table,
    any_,
    bindparam,
    delete,
    false,
    insert,
    select,
    text,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from ..state import Change, ScheduleState, SlotRange, Task
from . import models as m
from .days import DayIndex, StoreError, expand
from .load import extensions, has_extension, is_task_event

COMMIT_ERRORS = (
    "invalid_changes",  # the log does not fit the state (unknown task, block the task lacks, ...)
    "stale",  # a row the session started from changed or vanished meanwhile
    "conflict",  # a target period is held by another event in the database
    "db_error",  # the database refused (connection, lock, constraint); nothing was written
    "outcome_unknown",  # COMMIT was sent and its answer lost: written or not is not known
)


@dataclass
class CommitResult:
    """What a commit did, or why it wrote nothing.

    ``source_ids`` maps a task's ``state_id`` to a new ``source_id`` given by this commit (an
    event split off as pending); the session's state has already been updated accordingly.
    """

    ok: bool
    error_code: str = ""
    error: str = ""
    task_id: int | None = None
    # Why a refusal happened, as data for the adapters' replies: ``reason`` (see
    # :class:`CommitFailure`) and the day, periods and names involved.
    detail: dict[str, Any] = field(default_factory=dict)
    tasks_written: int = 0
    rows_inserted: int = 0
    rows_deleted: int = 0
    events_created: int = 0
    events_deleted: int = 0
    events_updated: int = 0  # existing events whose status or duration the commit sets
    items_updated: int = 0  # task items whose status or duration the commit sets
    guests_marked: int = 0  # host rows that receive an embedded guest
    guests_cleared: int = 0  # host rows whose guest leaves
    source_ids: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CommitFailure(Exception):
    """Raised inside the transaction; the caller rolls back and reports it.

    ``reason`` says what changed, for the Chinese replies: ``item_gone``, ``item_scheduled``,
    ``item_unscheduled``, ``event_gone``, ``event_status``, ``host_gone``, ``periods_changed``,
    ``guest_added``, ``period_taken``, ``host_not_free``, ``bad_log``; ``detail`` carries the day,
    periods and names involved.
    """

    def __init__(
        self,
        code: str,
        message: str,
        task_id: int | None = None,
        reason: str = "bad_log",
        **detail: Any,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.task_id = task_id
        self.detail = {"reason": reason, **detail}


@dataclass
class NetChange:
    """One task's net effect over a change log."""

    task: Task  # as it is now (the session's state)
    status_before: str
    removed: list[tuple[SlotRange, int | None]] = field(default_factory=list)  # block, host
    added: list[SlotRange] = field(default_factory=list)


def net_changes(state: ScheduleState, changes: Sequence[Change]) -> list[NetChange]:
    """Reduce a change log to one :class:`NetChange` per task, in order of first change.

    Raises
    ------
    CommitFailure
        ``invalid_changes``: a change names a task the state lacks, or the net result disagrees
        with the state (an added block the task does not hold, a pending task that gained one).
    """
    nets: dict[int, NetChange] = {}
    tasks = task_index(state)
    for ch in changes:
        task = tasks.get(ch.task_id)
        if task is None:
            raise CommitFailure(
                "invalid_changes",
                f"the change log names task [{ch.task_id}], which the state does not hold",
                ch.task_id,
            )
        net = nets.setdefault(ch.task_id, NetChange(task, ch.status_before))
        if ch.block_before is not None:
            if ch.block_before in net.added:
                net.added.remove(ch.block_before)
            else:
                net.removed.append((ch.block_before, ch.embed_host_before))
        if ch.block_after is not None:
            net.added.append(ch.block_after)
    for net in nets.values():
        task = net.task
        for block, host in list(net.removed):
            if block in net.added and host == task.embed_host:  # back where it started
                net.removed.remove((block, host))
                net.added.remove(block)
        for block in net.added:
            if block not in task.slots:
                raise CommitFailure(
                    "invalid_changes",
                    f"task [{task.state_id}] {task.name}: the "
                    f"log puts it on day {block.day} periods {block.slot_start}-"
                    f"{block.slot_end}, the state does not",
                    task.state_id,
                )
        if task.status == "pending" and task.slots:
            raise CommitFailure(
                "invalid_changes",
                f"task [{task.state_id}] {task.name} is pending but holds periods",
                task.state_id,
            )
    return list(nets.values())


Cell = tuple[int, int, int]  # (week, day_of_week, section)
ITEMS = cast(Table, m.TaskItem.__table__)
CLASSES = cast(Table, m.TaskClass.__table__)
EXT = cast(Table, m.Extension.__table__)
Clock = Callable[[int, int], tuple[time, time]]
EVENTS = cast(Table, m.ScheduleEvent.__table__)
SCHEDULES = cast(Table, m.Schedule.__table__)


@dataclass
class _NewEvent:
    """An event row this commit inserted."""

    id: int


def _is_pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _in_ids(conn: Connection, column: Any, ids: Any) -> Any:
    """``column IN (ids)`` for integer ids, in the form each driver handles fastest (a commit of a
    120-day window names some 250 ids per statement):

    - PostgreSQL: ``column = ANY(CAST(:ids AS BIGINT[]))`` with the ids as one array literal
      (``'{1,2,3}'``): one short cached statement, and one string to send instead of a list
      psycopg dumps element by element.
    - MariaDB/MySQL and SQLite: ``column IN (1, 2, 3)`` written out at execution time
      (``literal_execute``: the compiled statement stays cached, the ``int``-coerced ids are
      rendered by the integer type); PyMySQL would otherwise escape every bound id in Python,
      and SQLite caps the number of bound parameters.
    """
    ids = [int(i) for i in ids]
    if not ids:
        return false()
    if _is_pg(conn):
        # Untyped (no ``::VARCHAR`` bind cast): PostgreSQL then types the parameter itself as
        # BIGINT[] from the CAST, a plain array parameter the planner matches to the index.
        return column == any_(
            sql_cast(bindparam(None, _pg_array(ids), type_=NullType()), ARRAY(BigInteger))
        )
    return column.in_(bindparam(None, ids, type_=BigInteger, expanding=True, literal_execute=True))


def _pg_array(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal (``'{1,NULL,"a \\"b\\""}'``) of ints, bools, strings and
    ``None``, to be ``CAST`` to the column's array type by the statement."""
    if all(type(v) is int for v in values):
        return "{" + ",".join(map(str, values)) + "}"
    out = []
    for v in values:
        if v is None:
            out.append("NULL")
        elif isinstance(v, bool):
            out.append("t" if v else "f")
        elif isinstance(v, int):
            out.append(str(v))
        else:
            out.append('"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "{" + ",".join(out) + "}"


def _mysql_insert(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], returning: str = ""
) -> Any:
    """One multi-row ``INSERT ... VALUES`` on MariaDB/MySQL with the integers, booleans and
    NULLs written out and only the strings bound (``%s``, escaped by the driver): PyMySQL's
    ``executemany`` escapes every value in Python, which for a 120-day commit's 568 schedule
    rows cost more than the server's work."""
    columns = list(rows[0])
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    params: list[Any] = []
    values = []
    for row in rows:
        cells = []
        for name in columns:
            v = row[name]
            if v is None:
                cells.append("NULL")
            elif isinstance(v, bool):
                cells.append("1" if v else "0")
            elif isinstance(v, int):
                cells.append(str(int(v)))
            else:
                cells.append(mark)
                params.append(v)
        values.append("(" + ",".join(cells) + ")")
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES {', '.join(values)}" + (
        f" RETURNING {returning}" if returning else ""
    )
    return conn.exec_driver_sql(sql, tuple(params))


def _is_mysql(conn: Connection) -> bool:
    return conn.dialect.name in ("mysql", "mariadb")


# PostgreSQL: a whole batch of rows as one array literal per column (a short, cached statement).
_PG_INSERT_SCHEDULES = text(
    "INSERT INTO schedules (user_id, event_id, week, day_of_week, section) "
    "SELECT * FROM unnest(CAST(:user_id AS BIGINT[]), CAST(:event_id AS BIGINT[]), "
    "CAST(:week AS BIGINT[]), CAST(:day_of_week AS BIGINT[]), CAST(:section AS BIGINT[]))"
)
_EVENT_COLUMNS = (
    "user_id",
    "name",
    "location",
    "type",
    "rel_id",
    "task_source_type",
    "can_be_embedded",
    "start_time",
    "end_time",
)
_PG_INSERT_EVENTS = text(
    f"INSERT INTO schedule_events ({', '.join(_EVENT_COLUMNS)}) "
    "SELECT * FROM unnest(CAST(:user_id AS BIGINT[]), CAST(:name AS VARCHAR[]), "
    "CAST(:location AS VARCHAR[]), CAST(:type AS VARCHAR[]), CAST(:rel_id AS BIGINT[]), "
    "CAST(:task_source_type AS VARCHAR[]), CAST(:can_be_embedded AS BOOLEAN[]), "
    "CAST(:start_time AS TIME[]), CAST(:end_time AS TIME[])) RETURNING id, rel_id"
)


def _columns(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, str]:
    """One PostgreSQL array literal per column (see :func:`_pg_array`)."""
    return {name: _pg_array([r[name] for r in rows]) for name in names}


@dataclass
class _Row:
    id: int
    event_id: int
    guest_id: int | None  # the task item embedded there (``embedded_task_id``)


class _Rows:
    """The rows behind the session's tasks, for one user, fetched in a few batched queries:
    items and events of every task involved, and every ``schedules`` row of the window's weeks,
    all locked ``FOR UPDATE`` where the database supports it (always in this order, so two
    commits wait for each other instead of deadlocking)."""

    def __init__(
        self, session: Session, user_id: int, days: DayIndex, tasks: Sequence[Task]
    ) -> None:
        self.s, self.user_id, self.days = session, user_id, days
        item_ids = {t.source_id for t in tasks if t.source == "task_item"}
        event_ids = {t.source_id for t in tasks if t.source == "event"}
        conn = session.connection()
        mine = select(CLASSES.c.id).where(CLASSES.c.user_id == user_id)
        items = conn.execute(
            select(
                ITEMS.c.id,
                ITEMS.c.status,
                ITEMS.c.content,
                ITEMS.c.category_id,
                ITEMS.c.embedded_time,
            )
            .where(ITEMS.c.category_id.in_(mine), _in_ids(conn, ITEMS.c.id, item_ids))
            .order_by(ITEMS.c.id)
            .with_for_update()
        ).all()
        events = conn.execute(
            select(
                EVENTS.c.id,
                EVENTS.c.type,
                EVENTS.c.rel_id,
                EVENTS.c.task_source_type,
                EVENTS.c.can_be_embedded,
            )
            .where(
                EVENTS.c.user_id == user_id,
                _in_ids(conn, EVENTS.c.id, event_ids)
                | (
                    (EVENTS.c.type == "task")
                    & EVENTS.c.task_source_type.in_((m.TASK_SOURCE_ITEM, ""))
                    & _in_ids(conn, EVENTS.c.rel_id, item_ids)
                ),
            )
            .order_by(EVENTS.c.id)
            .with_for_update()
        ).all()
        by_item = {int(e.rel_id): e for e in events if is_task_event(e)}
        by_id = {e.id: e for e in events}
        item_by_id = {it.id: it for it in items}
        self._items: dict[int, Any] = {}  # a locked item row, None
        self._events: dict[int, Any] = {}  # a locked event row, a new event's _NewEvent, None
        for t in tasks:
            if t.source == "task_item":
                self._items[t.state_id] = item_by_id.get(t.source_id)
                self._events[t.state_id] = by_item.get(t.source_id)
            else:
                self._events[t.state_id] = by_id.get(t.source_id)
        first, last = days.week_range
        self.cells: dict[Cell, _Row] = {
            (w, d, sec): _Row(rid, eid, gid)
            for rid, eid, w, d, sec, gid in conn.execute(
                select(
                    SCHEDULES.c.id,
                    SCHEDULES.c.event_id,
                    SCHEDULES.c.week,
                    SCHEDULES.c.day_of_week,
                    SCHEDULES.c.section,
                    SCHEDULES.c.embedded_task_id,
                )
                .where(
                    SCHEDULES.c.user_id == user_id,
                    SCHEDULES.c.week >= first,
                    SCHEDULES.c.week <= last,
                )
                .with_for_update()
            )
        }
        self.hosted_items = {r.guest_id for r in self.cells.values() if r.guest_id is not None}

    def item(self, task: Task) -> Any:
        return self._items.get(task.state_id)

    def event(self, task: Task) -> Any:
        return self._events.get(task.state_id)

    def set_event(self, task: Task, row: Any) -> None:
        self._events[task.state_id] = row

    def block_cells(self, block: SlotRange) -> list[Cell]:
        week, dow = self.days.weekday(block.day)
        return [(week, dow, s) for s in expand(block)]

    def where(self, block: SlotRange) -> Any:
        """The WHERE clause of a block's rows (the user's rows on that day, those sections)."""
        week, dow = self.days.weekday(block.day)
        return (
            (SCHEDULES.c.user_id == self.user_id)
            & (SCHEDULES.c.week == week)
            & (SCHEDULES.c.day_of_week == dow)
            & SCHEDULES.c.section.in_(list(expand(block)))
        )

    def target(self, block: SlotRange) -> dict[str, int]:
        """A block as the backend's ``embedded_time``."""
        week, dow = self.days.weekday(block.day)
        return {
            "week": week,
            "day_of_week": dow,
            "section_from": block.slot_start,
            "section_to": block.slot_end,
        }


def commit_changes(
    session: Session,
    user_id: int,
    state: ScheduleState,
    changes: Sequence[Change],
    *,
    clock: Clock | None = None,
) -> CommitResult:
    """Apply ``changes`` inside the caller's transaction as SmartFlow-Agent's backend writes an
    applied item; raise :class:`CommitFailure` on any problem (the caller rolls back).

    ``clock(section_from, section_to)`` gives a task event's start and end time (default: the
    ``SMARTFLOW_SECTION_CLOCK`` setting)."""
    try:
        days = DayIndex.build(state.window.day_mapping)
    except StoreError as exc:
        raise CommitFailure("invalid_changes", f"the state's window: {exc}") from None
    nets = net_changes(state, changes)
    tasks = task_index(state)
    involved = {n.task.state_id: n.task for n in nets}
    for net in nets:  # the hosts a guest leaves or joins
        for host_id in [h for _, h in net.removed if h is not None] + [net.task.embed_host]:
            if host_id is not None:
                involved.setdefault(host_id, _host(tasks, host_id))
    rows = _Rows(session, user_id, days, list(involved.values()))
    result = CommitResult(ok=True)

    # 1. Optimistic checks; collect the rows the removed blocks leave.
    to_delete: dict[int, tuple[Task, SlotRange]] = {}  # owner rows → the task and block leaving
    to_clear: set[int] = set()
    for net in nets:
        _check(tasks, rows, net, to_delete, to_clear)
    _check_no_new_guests(session, rows, to_delete, to_clear)
    # 2. Removed blocks.
    conn = session.connection()
    if to_clear:
        conn.execute(
            update(SCHEDULES)
            .where(_in_ids(conn, SCHEDULES.c.id, to_clear))
            .values(embedded_task_id=None)
        )
        result.guests_cleared = len(to_clear)
    if to_delete:
        conn.execute(delete(SCHEDULES).where(_in_ids(conn, SCHEDULES.c.id, to_delete)))
        result.rows_deleted += len(to_delete)
    # 3. Items and task events follow their tasks.
    _update_items(session, rows, nets, result, clock or _default_clock())
    # 4. Added blocks: owners first (the sections must be free once the removed rows are gone),
    #    then guests onto their hosts' rows.
    inserts: list[dict[str, Any]] = []
    for net in nets:
        if net.task.embed_host is not None or not net.added:
            continue
        ev = rows.event(net.task)
        assert ev is not None
        for block in net.added:
            for week, dow, section in rows.block_cells(block):
                held = rows.cells.get((week, dow, section))
                if held is not None and held.id not in to_delete:
                    t = net.task
                    name = session.scalar(select(EVENTS.c.name).where(EVENTS.c.id == held.event_id))
                    raise CommitFailure(
                        "conflict",
                        f"task [{t.state_id}] {t.name}: day "
                        f"{block.day} period {section} is held by {name!r} in "
                        "the database",
                        t.state_id,
                        "period_taken",
                        day=block.day,
                        slot=section,
                        holder=name,
                    )
                inserts.append(
                    {
                        "user_id": user_id,
                        "event_id": ev.id,
                        "week": week,
                        "day_of_week": dow,
                        "section": section,
                    }
                )
    insert_rows(conn, inserts)
    result.rows_inserted = len(inserts)
    for net in nets:
        t = net.task
        if t.embed_host is None or not net.added:
            continue
        host_ev = rows.event(_host(tasks, t.embed_host))
        item = rows.item(t)
        if t.source != "task_item" or item is None:
            raise CommitFailure(
                "invalid_changes",
                f"task [{t.state_id}] {t.name}: only a task item can be embedded in a course "
                "(the host's rows carry a task item id)",
                t.state_id,
            )
        for block in net.added:
            if host_ev is None:
                raise CommitFailure(
                    "conflict",
                    f"task [{t.state_id}] {t.name}: its host holds no periods in the database",
                    t.state_id,
                    "host_not_free",
                    day=block.day,
                    host=t.embed_host,
                )
            out = conn.execute(
                update(SCHEDULES)
                .where(
                    rows.where(block),
                    SCHEDULES.c.event_id == host_ev.id,
                    SCHEDULES.c.embedded_task_id.is_(None),
                )
                .values(embedded_task_id=item.id)
            )
            if int(out.rowcount) != block.length:
                raise CommitFailure(
                    "conflict",
                    f"task [{t.state_id}] {t.name}: the "
                    f"host's periods on day {block.day} are not free to embed "
                    "into in the database",
                    t.state_id,
                    "host_not_free",
                    day=block.day,
                    host=t.embed_host,
                )
            result.guests_marked += block.length
    session.flush()
    result.tasks_written = len(nets)
    result.items_updated = sum(1 for n in nets if n.task.source == "task_item")
    result.events_updated += sum(1 for n in nets if n.task.source == "event")
    return result


def insert_rows(session: Session | Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``schedules`` rows (keys ``user_id``, ``event_id``, ``week``, ``day_of_week``,
    ``section``) in as few statements as the driver allows, each failing cleanly as a whole.

    - PostgreSQL: one ``INSERT ... SELECT * FROM unnest(<one array per column>)``, a short
      statement psycopg prepares once. Not ``executemany``: psycopg runs that in pipeline mode,
      and a refused row (a unique period taken by a concurrent commit) then leaves psycopg
      printing "pipeline aborted" to stderr while the transaction rolls back (issue 12 item 14);
      nor ``insert().values([...])``: five bound parameters per row compiled by SQLAlchemy and
      rewritten by psycopg on every commit cost more than the round trips saved.
    - MariaDB/MySQL: one multi-row ``INSERT ... VALUES`` with the integers written out
      (:func:`_mysql_insert`); SQLite: ``executemany`` (no round trips).
    """
    conn = session.connection() if isinstance(session, Session) else session
    if rows and _is_pg(conn):
        conn.execute(
            _PG_INSERT_SCHEDULES,
            _columns(rows, ("user_id", "event_id", "week", "day_of_week", "section")),
        )
    elif rows and _is_mysql(conn):
        _mysql_insert(conn, SCHEDULES, rows)
    elif rows:
        conn.execute(insert(SCHEDULES), list(rows))


def task_index(state: ScheduleState) -> dict[int, Task]:
    """The state's tasks by ``state_id`` (a plain dict: ``ScheduleState.task`` goes through
    pydantic's private-attribute lookup, which a commit naming hundreds of tasks notices)."""
    return {t.state_id: t for t in state.tasks}


def _host(tasks: dict[int, Task], host_id: int) -> Task:
    host = tasks.get(host_id)
    if host is None:
        raise CommitFailure(
            "invalid_changes", f"embed host [{host_id}] is not in the state", host_id, host=host_id
        )
    return host


def _default_clock() -> Clock:
    from ..settings import current

    return current().section_times


def _check(
    tasks: dict[int, Task],
    rows: _Rows,
    net: NetChange,
    to_delete: dict[int, tuple[Task, SlotRange]],
    to_clear: set[int],
) -> None:
    """The optimistic check: the task's rows are as the session found them."""
    t = net.task
    who = f"task [{t.state_id}] {t.name}"
    was_pending = net.status_before == "pending"
    ev = rows.event(t)
    item = None
    if t.source == "task_item":
        item = rows.item(t)
        if item is None:
            raise CommitFailure(
                "stale", f"{who}: task item {t.source_id} no longer exists", t.state_id, "item_gone"
            )
        hosted = item.id in rows.hosted_items
        if was_pending and (
            item.status not in (None, m.ITEM_UNSCHEDULED)
            or ev is not None
            or hosted
            or item.embedded_time is not None
        ):
            raise CommitFailure(
                "stale",
                f"{who}: task item {t.source_id} was scheduled meanwhile",
                t.state_id,
                "item_scheduled",
            )
        if not was_pending and ev is None and not hosted and item.embedded_time is None:
            raise CommitFailure(
                "stale",
                f"{who}: task item {t.source_id} is no longer scheduled",
                t.state_id,
                "item_unscheduled",
            )
    elif t.source == "event":
        if ev is None:
            raise CommitFailure(
                "stale", f"{who}: event {t.source_id} no longer exists", t.state_id, "event_gone"
            )
        if t.status == "pending":
            raise CommitFailure(
                "invalid_changes",
                f"{who}: event {t.source_id} cannot be taken off the timetable (the backend's "
                "tables hold no pending event); move it instead",
                t.state_id,
                "event_unplace",
            )
    else:
        raise CommitFailure("invalid_changes", f"{who}: unknown source {t.source!r}", t.state_id)
    for block, host in net.removed:
        host_ev = rows.event(_host(tasks, host)) if host is not None else None
        if host is not None and host_ev is None:
            raise CommitFailure(
                "stale",
                f"{who}: its host [{host}] holds no periods any more",
                t.state_id,
                "host_gone",
                host=host,
            )
        if host_ev is None and ev is None:
            # an item placed by its embedded_time only: nothing in schedules to undo
            if item is None or item.embedded_time != rows.target(block):
                raise _periods_changed(who, t, block)
            continue
        for cell in rows.block_cells(block):
            row = rows.cells.get(cell)
            if host_ev is None:
                ok = row is not None and row.event_id == ev.id
            else:
                ok = (
                    row is not None
                    and row.event_id == host_ev.id
                    and item is not None
                    and row.guest_id == item.id
                )
            if not ok:
                raise _periods_changed(who, t, block)
            assert row is not None
            if host_ev is not None:
                to_clear.add(row.id)
            else:
                to_delete[row.id] = (t, block)


def _periods_changed(who: str, task: Task, block: SlotRange) -> CommitFailure:
    return CommitFailure(
        "stale",
        f"{who}: its periods {block.slot_start}-{block.slot_end} on day {block.day} changed in "
        "the database meanwhile",
        task.state_id,
        "periods_changed",
        day=block.day,
        slot_start=block.slot_start,
        slot_end=block.slot_end,
    )


def _check_no_new_guests(
    session: Session, rows: _Rows, to_delete: dict[int, tuple[Task, SlotRange]], to_clear: set[int]
) -> None:
    """An owner block leaving its rows must not carry a guest the commit does not move out too:
    the session saw the block without one (a host with a guest cannot move), so the guest was
    embedded by another commit meanwhile, and deleting the rows would lose its placement."""
    by_id = {r.id: r for r in rows.cells.values()}
    for row_id, (t, block) in to_delete.items():
        row = by_id[row_id]
        if row.guest_id is None or row_id in to_clear:
            continue
        name = session.scalar(select(ITEMS.c.content).where(ITEMS.c.id == row.guest_id))
        raise CommitFailure(
            "stale",
            f"task [{t.state_id}] {t.name}: its periods "
            f"{block.slot_start}-{block.slot_end} on day {block.day} now carry "
            f"the embedded {name!r} in the database",
            t.state_id,
            "guest_added",
            day=block.day,
            slot_start=block.slot_start,
            slot_end=block.slot_end,
            guest=name,
        )


def _update_items(
    session: Session, rows: _Rows, nets: Sequence[NetChange], result: CommitResult, clock: Clock
) -> None:
    """Items and their task events follow the tasks, as the backend applies an item:

    - placed in its own sections: ``status`` 2, ``embedded_time`` its (first) block, and a task
      event (``type`` task, ``rel_id`` the item, ``task_source_type`` task_item, ``name`` its
      content, start/end time from the section clock) whose rows the caller inserts;
    - placed in a water course: ``status`` 2 and ``embedded_time``; no event of its own (the host's
      rows carry it);
    - unplaced: ``status`` 1, ``embedded_time`` NULL, its event and the event's rows deleted.
    """
    conn = session.connection()
    dropped: list[int] = []
    created: list[tuple[Task, dict[str, Any]]] = []
    durations: dict[int, int] = {}  # items going back to pending: their duration (extension)
    for net in nets:
        t, ev = net.task, rows.event(net.task)
        if t.source != "task_item":
            continue
        item = rows.item(t)
        assert item is not None
        if t.status == "pending":
            target: dict[str, int] | None = None
            status = m.ITEM_UNSCHEDULED
            if t.duration is not None:
                durations[item.id] = t.duration
        else:
            target = rows.target(t.slots[0]) if t.slots else item.embedded_time
            status = m.ITEM_APPLIED
        if item.status != status or item.embedded_time != target:
            conn.execute(
                update(ITEMS)
                .where(ITEMS.c.id == item.id)
                .values(status=status, embedded_time=target)
            )
        own = t.status != "pending" and t.embed_host is None and bool(t.slots)
        if ev is not None and not own:
            dropped.append(ev.id)
            rows.set_event(t, None)
        elif ev is None and own:
            start, end = _times(clock, t)
            created.append(
                (
                    t,
                    {
                        "user_id": rows.user_id,
                        "name": (item.content or t.name)[: m.NAME_LEN],
                        "location": "",
                        "type": "task",
                        "rel_id": item.id,
                        "task_source_type": m.TASK_SOURCE_ITEM,
                        "can_be_embedded": False,
                        "start_time": start,
                        "end_time": end,
                    },
                )
            )
        elif ev is not None and net.added:
            start, end = _times(clock, t)
            conn.execute(
                update(EVENTS).where(EVENTS.c.id == ev.id).values(start_time=start, end_time=end)
            )
            result.events_updated += 1
    if dropped:
        conn.execute(
            update(SCHEDULES)
            .where(_in_ids(conn, SCHEDULES.c.event_id, dropped))
            .values(embedded_task_id=None)
        )
        gone = conn.execute(delete(SCHEDULES).where(_in_ids(conn, SCHEDULES.c.event_id, dropped)))
        result.rows_deleted += int(gone.rowcount)
        conn.execute(delete(EVENTS).where(_in_ids(conn, EVENTS.c.id, dropped)))
        result.events_deleted += len(dropped)
    if durations and has_extension(session):
        _store_durations(session, durations)
    values = [v for _, v in created]
    ids_by_item: dict[int, int] = {}
    if values and _is_pg(conn):
        ids_by_item = {
            int(item_id): eid
            for eid, item_id in conn.execute(_PG_INSERT_EVENTS, _columns(values, _EVENT_COLUMNS))
        }
    elif values and _is_mysql(conn):
        ids_by_item = {
            int(item_id): eid
            for eid, item_id in _mysql_insert(conn, EVENTS, values, returning="id, rel_id")
        }
    elif values:
        ids_by_item = {
            int(item_id): eid
            for eid, item_id in conn.execute(
                insert(EVENTS).returning(EVENTS.c.id, EVENTS.c.rel_id), values
            )
        }
    for t, v in created:
        rows.set_event(t, _NewEvent(ids_by_item[int(v["rel_id"])]))
    result.events_created += len(created)


def _store_durations(session: Session, durations: dict[int, int]) -> None:
    """Keep pending items' durations in the extension table (the backend has no column)."""
    ext = extensions(session, "task_item", list(durations))
    conn = session.connection()
    conn.execute(
        delete(EXT).where(EXT.c.kind == "task_item", _in_ids(conn, EXT.c.ref_id, durations))
    )
    conn.execute(
        insert(EXT),
        [
            {"kind": "task_item", "ref_id": iid, "data": {**ext.get(iid, {}), "duration": d}}
            for iid, d in durations.items()
        ],
    )


def _times(clock: Clock, task: Task) -> tuple[time, time]:
    """A task event's start and end time: the first block's first section's start and its last
    section's end on the section clock."""
    block = task.slots[0]
    try:
        return clock(block.slot_start, block.slot_end)
    except ValueError as exc:
        raise CommitFailure(
            "invalid_changes", f"task [{task.state_id}] {task.name}: {exc}", task.state_id
        ) from None


def backend_batches(state: ScheduleState, changes: Sequence[Change]) -> list[dict[str, Any]]:
    """The confirmed change as SmartFlow-Agent's batch payload, for hosts that apply changes
    through their own API: per task class ``{task_class_id, items: [{task_item_id, week,
    day_of_week, start_section, end_section, embed_course_event_id}]}`` for every task item the
    change leaves placed in new sections (``embed_course_event_id`` 0 unless it is embedded in a
    course, whose event id it then names)."""
    days = DayIndex.build(state.window.day_mapping)
    tasks = task_index(state)
    out: dict[int, list[dict[str, Any]]] = {}
    for net in net_changes(state, changes):
        t = net.task
        if t.source != "task_item" or t.status == "pending" or not net.added:
            continue
        host = tasks.get(t.embed_host) if t.embed_host is not None else None
        for block in net.added:
            week, dow = days.weekday(block.day)
            out.setdefault(t.task_class_id or 0, []).append(
                {
                    "task_item_id": t.source_id,
                    "week": week,
                    "day_of_week": dow,
                    "start_section": block.slot_start,
                    "end_section": block.slot_end,
                    "embed_course_event_id": host.source_id
                    if host is not None and host.source == "event"
                    else 0,
                }
            )
    return [
        {
            "task_class_id": cid,
            "items": sorted(items, key=lambda i: (i["task_item_id"], i["week"], i["day_of_week"])),
        }
        for cid, items in sorted(out.items())
    ]

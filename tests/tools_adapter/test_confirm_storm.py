"""The concurrent property of issue 44: many threads confirming, reading and writing one session
over HTTP, on the memory store (one worker) and on Redis (two workers sharing it), each on
SQLite, PostgreSQL and MariaDB behind ``commit``; the database checked afterwards against what
the acknowledged confirms showed.

Hypothesis draws the operation mix (how many threads, which thread places which task, what
else each thread does and through which worker); the threads then run it at once, so the
interleaving is whatever the machine makes of it. Every invariant checked must hold for every
interleaving: nothing here depends on timing, only on which answers the requests got.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from smartflow_engine import ScheduleState
from smartflow_engine.store import Store
from smartflow_engine.store import models as m
from tests.helpers.db_servers import BACKENDS, empty_tables, fresh_server_store
from tests.helpers.deployments import worker_apps
from tests.helpers.store import USER, reload, stored
from tests.helpers.windows import load_window

TOKENS = {"tok": str(USER)}
AUTH = {"Authorization": "Bearer tok"}
WINDOW = {"start": {"week": 7, "day_of_week": 1}, "end": {"week": 8, "day_of_week": 7}}
# Where each pending study task of the sample window goes: free periods inside its class's time
# window, no two overlapping, so every place succeeds in any order (one change each).
TARGETS = {
    11: (6, 1),
    12: (6, 4),
    13: (6, 6),
    14: (6, 8),
    15: (6, 10),
    16: (7, 1),
    17: (7, 5),
    18: (7, 7),
    19: (7, 9),
    20: (6, 11),
    21: (13, 1),
    22: (13, 4),
}
# The first is what a minimal plan does: preview a commit and confirm it at once.
OTHER_OPS = ("commit_confirm", "overview", "state", "commit", "confirm", "confirm_latest", "reject")
# "提交 N 项修改" and the net change per table, as a commit's preview and its confirm say them.
_COUNT = re.compile(r"提交 (\d+) 项修改")
_NETS = re.compile(r"(schedule_events|schedules|task_items|embedded)：([^\n]*)")


@dataclass(frozen=True)
class Op:
    kind: str  # "place" or one of OTHER_OPS
    worker: int
    task: int = 0


@st.composite
def plans(draw: st.DrawFn) -> list[list[Op]]:
    """Each thread's operations in its order: the places of the tasks drawn for it, mixed with
    reads, commit previews, confirms (of its own latest token or of the latest token any thread
    got: a double click, another tab) and rejects, each through a drawn worker."""
    threads = draw(st.integers(4, 8))
    tasks = draw(st.lists(st.sampled_from(sorted(TARGETS)), min_size=4, unique=True))
    workers = st.integers(0, 1)
    mine: list[list[Op]] = [[] for _ in range(threads)]
    for task in tasks:
        mine[draw(st.integers(0, threads - 1))].append(Op("place", draw(workers), task))
    plan = []
    for ops in mine:
        others = draw(
            st.lists(st.builds(Op, st.sampled_from(OTHER_OPS), workers), min_size=2, max_size=6)
        )
        plan.append(draw(st.permutations([*ops, *others])))
    return plan


@dataclass
class Outcomes:
    """What the requests were answered, gathered from every thread."""

    acked: set[int] = field(default_factory=set)  # tasks whose place was answered ok
    refused: set[int] = field(default_factory=set)  # tasks whose place was answered 409
    previews: dict[str, str] = field(default_factory=dict)  # token -> the preview shown
    issued: list[str] = field(default_factory=list)  # tokens in the order they were handed out
    confirmed: list[tuple[str, str]] = field(default_factory=list)  # (token, reply) answered ok
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Storm:
    """One session of USER on the database, served by ``workers``, run through a plan."""

    def __init__(self, workers: list[TestClient]) -> None:
        self.workers = workers
        made = workers[0].post(
            "/v1/sessions", headers=AUTH, json={"mode": "local_adjust", "window": WINDOW}
        )
        assert made.status_code == 201, made.text
        self.sid: str = made.json()["session_id"]
        self.out = Outcomes()

    def post(self, worker: int, path: str, body: dict[str, Any]) -> Any:
        url = f"/v1/sessions/{self.sid}/{path}"
        return self.workers[worker].post(url, headers=AUTH, json=body)

    def get(self, path: str) -> Any:
        got = self.workers[-1].get(f"/v1/sessions/{self.sid}/{path}", headers=AUTH)
        assert got.status_code == 200, got.text
        return got.json()

    def run(self, plan: list[list[Op]]) -> Outcomes:
        start = threading.Barrier(len(plan))
        threads = [threading.Thread(target=self._thread, args=(ops, start)) for ops in plan]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)  # a guard against a deadlock, far beyond any run
            assert not t.is_alive(), "a request never returned"
        return self.out

    def _thread(self, ops: list[Op], start: threading.Barrier) -> None:
        own: list[str] = []
        start.wait()
        for op in ops:
            try:
                self._one(op, own)
            except Exception as exc:  # reported by the test, never swallowed
                self._unexpected(op, repr(exc))

    def _unexpected(self, op: Op, what: str) -> None:
        with self.out.lock:
            self.out.unexpected.append(f"{op}: {what}")

    def _one(self, op: Op, own: list[str]) -> None:
        out = self.out
        if op.kind == "place":
            day, first = TARGETS[op.task]
            args = {"task_id": op.task, "day": day, "slot_start": first}
            got = self._retried(op, "calls", {"tool": "place", "args": args})
            if got.status_code == 200 and got.json()["status"] == "ok":
                with out.lock:
                    out.acked.add(op.task)
            elif _retry(got):  # refused every time: the client gave up
                with out.lock:
                    out.refused.add(op.task)
            else:
                self._unexpected(op, got.text)
        elif op.kind == "overview":
            got = self._retried(op, "calls", {"tool": "get_overview", "args": {}})
            if got.status_code != 200 and not _retry(got):
                self._unexpected(op, got.text)
        elif op.kind == "state":
            got = self.workers[op.worker].get(f"/v1/sessions/{self.sid}/state", headers=AUTH)
            if got.status_code != 200:
                self._unexpected(op, got.text)
        elif op.kind in ("commit", "commit_confirm"):
            got = self._retried(op, "calls", {"tool": "commit", "args": {}})
            body = got.json()
            if got.status_code == 200 and body["status"] == "pending_confirm":
                with out.lock:
                    out.previews[body["confirm_token"]] = body["reply"]
                    out.issued.append(body["confirm_token"])
                own.append(body["confirm_token"])
                if op.kind == "commit_confirm":  # the user accepts at once
                    self._confirm(op, body["confirm_token"])
            elif body.get("reply") != "没有需要提交的修改。" and not _retry(got):
                self._unexpected(op, got.text)
        else:
            with out.lock:
                pick = out.issued[-1:] if op.kind == "confirm_latest" else own[-1:]
            if not pick:
                return
            if op.kind == "reject":
                got = self._retried(op, "reject", {"token": pick[0]})
                if got.status_code not in (200, 404) and not _retry(got):
                    self._unexpected(op, got.text)
            else:
                self._confirm(op, pick[0])

    def _confirm(self, op: Op, token: str) -> None:
        got = self._retried(op, "confirm", {"token": token})
        body = got.json()
        if got.status_code == 200 and body["status"] == "ok":
            with self.out.lock:
                self.out.confirmed.append((token, body["reply"]))
        elif (got.status_code, body.get("error_code")) not in (
            (409, "preview_changed"),  # the session changed after the preview: nothing ran
            (404, "unknown_token"),  # confirmed or rejected already, by a click or a tab
        ) and not _retry(got):
            self._unexpected(op, got.text)

    def _retried(self, op: Op, path: str, body: dict[str, Any]) -> Any:
        """The answer to ``body`` sent as a client does: again (up to three times in all, through
        the other worker) while it is a 409 "nothing of this request was done: retry"."""
        for attempt in range(3):
            got = self.post((op.worker + attempt) % 2, path, body)
            if not _retry(got):
                break
        return got


def _retry(got: Any) -> bool:
    """A 409 "nothing of this request was done: retry" (another request wrote the session)."""
    return bool(got.status_code == 409 and got.json().get("error_code") == "session_conflict")


def _counts(text: str) -> tuple[int, dict[str, list[int]]]:
    """The number of changes and the per-table figures a preview or a confirm's reply names."""
    found = _COUNT.search(text)
    assert found is not None, text
    nets = {
        table: [int(n) for n in re.findall(r"\d+", rest)] for table, rest in _NETS.findall(text)
    }
    assert set(nets) == {"schedule_events", "schedules", "task_items", "embedded"}, text
    return int(found.group(1)), nets


def _cells(task: int, length: int) -> list[tuple[int, int, int]]:
    """The (week, day of week, section) rows of ``task`` placed at its target (the window starts
    on week 7's Monday)."""
    day, first = TARGETS[task]
    week, dow = 7 + (day - 1) // 7, (day - 1) % 7 + 1
    return [(week, dow, s) for s in range(first, first + length)]


def _placed(db: Store) -> dict[int, list[tuple[int, int, int]]]:
    """The schedule rows of every task item of USER that has an event, by item id."""
    with db.session() as s:
        rows = s.execute(
            select(
                m.ScheduleEvent.rel_id,
                m.Schedule.week,
                m.Schedule.day_of_week,
                m.Schedule.section,
            )
            .join(m.Schedule, m.Schedule.event_id == m.ScheduleEvent.id)
            .where(m.ScheduleEvent.user_id == USER, m.ScheduleEvent.type == "task")
        ).all()
    out: dict[int, list[tuple[int, int, int]]] = {}
    for item, week, dow, section in rows:
        out.setdefault(int(item), []).append((week, dow, section))
    return {item: sorted(cells) for item, cells in out.items()}


def _row_counts(db: Store) -> dict[str, int]:
    with db.session() as s:
        return {
            t.__tablename__: int(s.scalar(select(func.count()).select_from(t)) or 0)
            for t in m.TABLES
        }


def _check(storm: Storm, db: Store, window: ScheduleState, before: dict[str, int]) -> None:
    """The database holds exactly what the acknowledged confirms showed (see the test)."""
    out = storm.out
    assert out.unexpected == []
    item = {t.state_id: t.source_id for t in window.tasks}
    length = {t.state_id: t.duration for t in window.tasks}
    # Each acknowledged confirm wrote what its preview showed: the same count, the same figures.
    shown = [_counts(out.previews[token]) for token, _ in out.confirmed]
    assert shown == [_counts(reply) for _, reply in out.confirmed]
    placed = _placed(db)
    committed = {t for t in TARGETS if item[t] in placed}
    # Every committed place was acknowledged and shown in exactly one acknowledged confirm; no
    # place answered 409 is anywhere; each committed task sits where its place put it.
    assert committed <= out.acked and not out.refused & out.acked
    assert sum(n for n, _ in shown) == len(committed)
    for task in committed:
        assert placed[item[task]] == _cells(task, length[task])
    # The tables grew by exactly the figures the acknowledged previews showed, in all (places
    # only: an event, an item and its periods per task; nothing deleted, updated or embedded).
    periods = sum(length[t] for t in committed)
    expected = {
        "schedule_events": [len(committed), 0, 0],
        "schedules": [periods, 0],
        "task_items": [len(committed)],
        "embedded": [0, 0],
    }
    total = {table: [0] * len(figures) for table, figures in expected.items()}
    for _, nets in shown:
        for table, figures in nets.items():
            total[table] = [a + b for a, b in zip(total[table], figures, strict=True)]
    assert total == expected
    grown = {t: n - before[t] for t, n in _row_counts(db).items()}
    assert grown == {
        "task_classes": 0,
        "task_items": 0,
        "schedule_events": len(committed),
        "schedules": periods,
    }
    # Every acknowledged place not committed is still in the session's change log, once; the
    # session holds exactly the acknowledged places.
    uncommitted = [c["task_id"] for c in storm.get("changes")["changes"]]
    assert sorted(uncommitted) == sorted(out.acked - committed)
    state = ScheduleState.from_json(storm.get("state")["state"])
    in_session = {t.state_id for t in state.tasks if t.state_id in TARGETS and t.slots}
    assert in_session == out.acked
    # A last, quiet commit leaves the database equal to the session, whole.
    if uncommitted:
        held = storm.post(0, "calls", {"tool": "commit", "args": {}}).json()
        done = storm.post(1 % len(storm.workers), "confirm", {"token": held["confirm_token"]})
        assert done.status_code == 200 and done.json()["status"] == "ok", done.text
    assert stored(reload(db, state)) == stored(state)


@dataclass
class Deployment:
    db: Store
    workers: list[TestClient]


@pytest.fixture(
    params=[(kind, db) for kind in ("memory", "redis") for db in BACKENDS],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    """One worker with the memory store, or two sharing Redis, on the database of the param."""
    kind, backend = request.param
    if backend == "sqlite":
        db = Store.from_url(f"sqlite:///{tmp_path / 'storm.db'}")
    else:
        db = fresh_server_store(request, backend)
    prefix = f"{request.getfixturevalue('redis_prefix')}:{uuid.uuid4().hex[:8]}"
    apps = worker_apps(kind, TOKENS, db, prefix)
    clients = [TestClient(app) for app in apps * (3 - len(apps))]  # two workers, or one twice
    yield Deployment(db, clients)
    for client in clients:
        client.close()
    if backend == "sqlite":
        db.dispose()


# A fifteenth of the profile's examples per deployment (4 in CI, 66 when "thorough").
@settings(
    max_examples=max(1, settings.default.max_examples // 15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=plans())
def test_concurrent_confirms_write_exactly_what_was_acknowledged(
    deployment: Deployment, plan: list[list[Op]]
):
    """Tests issue 44 (items 1 and 3, property): threads place tasks, read, preview commits,
    confirm (their own token or the latest anyone got) and reject at once on one session, each
    request through a drawn worker. Afterwards: every acknowledged confirm's reply names exactly
    the count and per-table figures its preview showed; the tasks in the database are exactly
    as many as those previews named, each acknowledged and where its place put it, and no place
    answered 409 is anywhere; the tables grew by exactly the previewed figures; every
    acknowledged place not committed is still in the session's change log (none lost, none
    written twice); a last commit leaves the database equal to the session."""
    db = deployment.db
    empty_tables(db.engine)
    window = load_window("sample_window")
    db.seed_from_state(USER, window)
    before = _row_counts(db)
    storm = Storm(deployment.workers)
    try:
        storm.run(plan)
        _check(storm, db, window, before)
    finally:
        deployment.workers[0].delete(f"/v1/sessions/{storm.sid}", headers=AUTH)

"""Tests of the database source and --commit: users with pending work, windows from task classes
or given weeks, proposals written back as suggested, stale users reported and left alone."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from smartflow_engine import Toolbox
from smartflow_engine.batch import StoreSource, from_db, run_batch
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.store import Store
from tests.helpers.batch_windows import TIME_LIMIT, WORK_LIMIT, tiny_cohort
from tests.helpers.store import stored

WEEK_1 = [{"day_index": d, "week": 1, "day_of_week": d} for d in range(1, 8)]


PG_URL = os.environ.get("SMARTFLOW_PG_URL", "")
BACKENDS = ["sqlite", *(["postgresql"] if PG_URL.startswith("postgresql") else [])]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> Iterator[Store]:
    """Users 1-4 seeded from the tiny cohort (user 5 = seed 4 is the infeasible one) and user 9
    with nothing pending, on an SQLite file (and, when SMARTFLOW_PG_URL names a PostgreSQL
    server, in a database of its own there, dropped afterwards)."""
    if request.param == "sqlite":
        s = Store.from_url(f"sqlite:///{tmp_path / 'cohort.db'}")
        drop = None
    else:
        name = f"smartflow_batch_{uuid.uuid4().hex[:12]}"
        admin = create_engine(make_url(PG_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        s = Store.from_url(
            make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
        )

        def drop() -> None:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            admin.dispose()

    cohort = tiny_cohort(5)
    for user, state in enumerate(cohort, start=1):
        s.seed_from_state(user, state, keep_ids=False)
    done = synthetic_window(50, 7, pending=0)
    s.seed_from_state(9, done, keep_ids=False)
    try:
        yield s
    finally:
        s.dispose()
        if drop is not None:
            drop()


def test_db_source_lists_users_with_pending_work(store):
    """Tests that the database cohort is every user with pending work (not user 9), or those of
    them inside a --users range."""
    assert StoreSource(store, weeks=(1, 1)).users == [1, 2, 3, 4, 5]
    assert StoreSource(store, users=range(2, 10), weeks=(1, 1)).users == [2, 3, 4, 5]
    assert StoreSource(store, users=[9], weeks=(1, 1)).users == []


def test_db_rows_equal_the_file_rows(store):
    """Tests that a user's row from the database has the same figures as the window loaded by
    hand through Store.load_window."""
    df = run_batch(
        from_db(store, weeks=(1, 1)),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    assert list(df["window_id"]) == [f"user:{u}" for u in range(1, 6)]
    by_hand = [store.load_window(u, WEEK_1) for u in range(1, 6)]
    ref = run_batch(by_hand, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, engine="loop")
    figures = [
        "pending_slots",
        "is_feasible",
        "capacity_gap",
        "reason_code",
        "proposal_status",
        "obj_weighted_total",
        "critical",
        "warning",
    ]
    assert df[figures].equals(ref[figures])
    assert list(df["user_id"]) == [1, 2, 3, 4, 5]


def test_window_from_task_classes_or_an_error_row(store):
    """Tests that without --weeks a user's window is the span of their pending items' classes,
    and a user whose classes give no dates gets a no_window error row."""
    df = run_batch(
        from_db(store),
        jobs=("feasibility",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    # seeds 0, 2, 4 (users 1, 3, 5) carry task classes with day windows; 1 and 3 do not.
    assert len(df) == 5
    with_classes = df[df["user_id"].isin([1, 3, 5])]
    assert len(with_classes) == 3 and with_classes["error"].isna().all()
    assert (with_classes["days"] <= 7).all()
    without = df[df["user_id"].isin([2, 4])]
    assert len(without) == 2 and without["error"].str.startswith("no_window:").all()


def test_commit_writes_feasible_proposals_as_suggested(store):
    """Tests that --commit writes each feasible proposal in one transaction per user: the
    reloaded window holds the proposal's places as existing (applied) and nothing pending; an infeasible
    user is skipped and keeps their rows."""
    before_5 = store.load_window(5, WEEK_1)
    df = run_batch(
        from_db(store, weeks=(1, 1)),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
        commit=True,
    )
    feasible = df["is_feasible"] == True  # noqa: E712
    assert feasible.sum() >= 3
    assert (df.loc[feasible, "commit_status"] == "committed").all()
    assert df.loc[df["user_id"] == 5, "commit_status"].item() == "skipped"
    for user in df.loc[feasible, "user_id"]:
        after = store.load_window(int(user), WEEK_1)
        assert after.pending_tasks() == []
        placed = df.loc[df["user_id"] == user, "placed_tasks"].item()
        assert (
            sum(t.status == "existing" and t.source == "task_item" for t in after.tasks) >= placed
        )
    assert stored(store.load_window(5, WEEK_1)) == stored(before_5)
    again = run_batch(
        from_db(store, weeks=(1, 1)),
        jobs=("feasibility", "proposal"),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
        commit=True,
    )
    assert list(again["user_id"]) == [5]  # the others have nothing pending any more


class _MeddlingSource(StoreSource):
    """Loads each user's window, then lets 'someone else' schedule one of user 2's pending tasks
    before the batch gets to commit (the batch solved the window as it was)."""

    def __iter__(self):
        for item in super().__iter__():
            if item.user_id == 2:
                tb = Toolbox(self.store.load_window(2, WEEK_1))
                task = tb.state.pending_tasks()[0]
                day, start, _ = tb.state.grid.free_runs(min_len=task.need())[0]
                assert "已将" in tb.call(
                    "place", {"task_id": task.state_id, "day": day, "slot_start": start}
                )
                assert self.store.commit(2, tb.state, tb.changes).ok
            yield item


def test_commit_reports_a_stale_user_and_does_not_overwrite(store):
    """Tests that a user whose rows changed between load and commit is reported `stale` and
    keeps exactly the other writer's rows, while the other users are committed."""
    src = _MeddlingSource(store, weeks=(1, 1))
    df = run_batch(
        src, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, engine="loop", commit=True
    )
    row = df[df["user_id"] == 2].iloc[0]
    assert row["is_feasible"] == True  # noqa: E712
    assert row["commit_status"] == "stale" and "changed" in row["commit_detail"]
    after = store.load_window(2, WEEK_1)
    assert len(after.pending_tasks()) == row["pending_tasks"] - 1  # only the other writer's task
    assert (
        df.loc[
            (df["user_id"] != 2) & (df["is_feasible"] == True),  # noqa: E712
            "commit_status",
        ]
        == "committed"
    ).all()

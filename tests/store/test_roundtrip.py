"""Tests of seed_from_state + load_window: a state written to the tables reads back unchanged,
each user sees only their rows, and bad input is refused with nothing written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from smartflow_engine import ScheduleState
from smartflow_engine.state import StateError
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.store import Store, StoreError
from smartflow_engine.store import models as m
from tests.helpers.store import OTHER_USER, USER, cell_view, reload, stored, table_rows
from tests.helpers.windows import load_window


def _touching_blocks(state: ScheduleState) -> bool:
    """Whether some task holds two blocks that touch on one day (stored as one run)."""
    for t in state.tasks:
        ends = {(b.day, b.slot_end) for b in t.slots}
        if any((b.day, b.slot_start - 1) in ends for b in t.slots):
            return True
    return False


@pytest.mark.parametrize("name", ["sample_window", "spec_example", "spec_tools_window"])
def test_fixture_windows_round_trip_exactly(store: Store, name: str):
    """Tests that seeding a fixed window and loading it back gives the same state JSON: ids,
    sources, blocks, statuses, locks, embedding and task classes."""
    state = load_window(name)
    store.seed_from_state(USER, state)
    assert stored(reload(store, state)) == stored(state)


@pytest.mark.parametrize(
    "seed,days,variant,classes",
    [
        (0, 13, "plain", True),
        (1, 30, "tight", False),
        (2, 30, "fragmented", True),
        (3, 120, "plain", True),
        (4, 21, "fragmented", False),
        (5, 7, "tight", True),
    ],
)
def test_synthetic_windows_round_trip(
    store: Store, seed: int, days: int, variant: Any, classes: bool
):
    """Tests that seeded synthetic windows (13 to 120 days, every variant) read back with the
    same tasks, periods and classes, and exactly the same JSON when no blocks touch."""
    state = synthetic_window(seed, days, variant=variant, with_task_classes=classes)
    store.seed_from_state(USER, state)
    back = reload(store, state)
    assert cell_view(back) == cell_view(state)
    if not _touching_blocks(state):
        assert stored(back) == stored(state)


def test_spec_section_rows_are_written_per_period(store: Store):
    """Tests §3.4: the spec example's block day 1 periods 1-2 of event 101 becomes the rows
    (101, week 5, day_of_week 1, section 1) and (…, section 2), one per period."""
    state = load_window("spec_example")
    store.seed_from_state(USER, state)
    with store.session() as s:
        rows = s.execute(
            select(m.Schedule.week, m.Schedule.day_of_week, m.Schedule.section).where(
                m.Schedule.event_id == 101
            )
        ).all()
    # 高等数学: days 1, 4, 8 periods 1-2 → (5,1), (5,4), (6,1)
    assert sorted(rows) == [(5, 1, 1), (5, 1, 2), (5, 4, 1), (5, 4, 2), (6, 1, 1), (6, 1, 2)]


def test_seed_writes_one_row_per_period_and_guests_on_their_host(store: Store):
    """Tests that the sample's rows count equals the periods its non-guest tasks hold, and that a
    guest is recorded on its host's rows, not as rows of its own."""
    state = load_window("sample_window")
    tb_state = state.copy_state()
    from smartflow_engine import Toolbox

    tb = Toolbox(tb_state)
    reply = tb.call("place", {"task_id": 15, "day": 3, "slot_start": 3})  # into 思政（水课）
    assert "嵌入" in reply
    result = store.seed_from_state(USER, tb_state)
    held = sum(b.length for t in tb_state.tasks if t.embed_host is None for b in t.slots)
    assert result.schedule_rows == held
    with store.session() as s:
        marked = s.execute(
            select(m.Schedule.event_id, m.Schedule.section, m.Schedule.embedded_task_id).where(
                m.Schedule.embedded_task_id.is_not(None)
            )
        ).all()
    assert sorted(marked) == [(106, 3, 305)]  # host event 106, day 3 period 3: item 305
    assert stored(reload(store, tb_state)) == stored(tb_state)


def test_users_are_isolated(store: Store):
    """Tests that two users' windows live side by side: each load sees only its own rows, and a
    user with no rows gets an empty window."""
    mine, theirs = load_window("sample_window"), load_window("spec_tools_window")
    store.seed_from_state(USER, mine)
    with pytest.raises(StoreError, match="already taken"):
        store.seed_from_state(OTHER_USER, theirs)  # same source ids as USER's rows
    ids = store.seed_from_state(OTHER_USER, theirs, keep_ids=False)
    assert stored(reload(store, mine)) == stored(mine)
    back = reload(store, theirs, user=OTHER_USER)
    assert sorted(t.name for t in back.tasks) == sorted(t.name for t in theirs.tasks)
    assert cell_view(_renumbered(theirs, ids))[0] == cell_view(back)[0]
    empty = store.load_window(99, mine.window.day_mapping)
    assert empty.tasks == [] and empty.num_days == mine.num_days


def _renumbered(state: ScheduleState, ids: Any) -> ScheduleState:
    """``state`` with the source/category ids a fresh seed gave, ordered as the loader orders."""
    data = state.to_dict()
    for t in data["tasks"]:
        table = ids.event_ids if t["source"] == "event" else ids.item_ids
        t["source_id"] = table[t["source_id"]]
        if "category_id" in t:
            t["category_id"] = ids.class_ids[t["category_id"]]
    order = sorted(data["tasks"], key=lambda t: (t["source_id"], t["source"] != "event"))
    new_id = {t["state_id"]: i for i, t in enumerate(order, start=1)}
    for t in data["tasks"]:
        t["state_id"] = new_id[t["state_id"]]
        if "embed_host" in t:
            t["embed_host"] = new_id[t["embed_host"]]
        t.pop("embedded_by", None)
    data["tasks"].sort(key=lambda t: t["state_id"])
    return ScheduleState.model_validate(data)


def _state(mutate: Any) -> ScheduleState:
    data = load_window("spec_tools_window").to_dict()
    mutate(data)
    return ScheduleState.model_validate(data)


def _no_mapping(d: dict[str, Any]) -> None:
    d["window"]["day_mapping"] = []


def _item_without_class(d: dict[str, Any]) -> None:
    d["tasks"][2].pop("category_id")


def _duplicate_source(d: dict[str, Any]) -> None:
    d["tasks"][1]["source_id"] = d["tasks"][0]["source_id"]


def _category_differs_from_class(d: dict[str, Any]) -> None:
    d["tasks"][5]["category"] = "别的类别"  # [6] 线代 is in class 10 "学习"


def _descending_mapping(d: dict[str, Any]) -> None:
    d["window"]["day_mapping"][1]["week"] = 1


@pytest.mark.parametrize(
    "mutate,message",
    [
        (_no_mapping, "day_mapping"),  # days cannot be turned into (week, day_of_week)
        (_item_without_class, "category_id"),  # a task item belongs to a task class
        (_duplicate_source, "share source"),  # two tasks, one row
        (_category_differs_from_class, "differs from its task class"),  # item category = class name
        (_descending_mapping, "does not come after"),  # dates must go forward
    ],
)
def test_seed_refuses_states_the_tables_cannot_hold(store: Store, mutate: Any, message: str):
    """Tests that a state the tables cannot represent is refused with a one-line reason and that
    nothing at all is written."""
    before = table_rows(store)
    with pytest.raises(StoreError, match=message):
        store.seed_from_state(USER, _state(mutate))
    assert table_rows(store) == before


def test_a_state_with_an_unknown_source_does_not_load():
    """Tests that a task whose source is neither event nor task_item (the only two the tables
    hold) is refused when the state loads, with a line naming the task's field."""
    data = load_window("spec_tools_window").to_dict()
    data["tasks"][0]["source"] = "calendar"
    with pytest.raises(
        StateError, match=r"tasks\.0\.source: Input should be 'event' or 'task_item'"
    ):
        ScheduleState.from_json(data)


MAPPING = [
    {"day_index": 1, "week": 5, "day_of_week": 1},
    {"day_index": 2, "week": 5, "day_of_week": 2},
]


@pytest.mark.parametrize(
    "mapping,message",
    [
        ([], "empty"),  # no day at all
        ([MAPPING[0], {**MAPPING[1], "day_index": 3}], "expected 2"),  # gap in the day indexes
        ([MAPPING[0], {**MAPPING[1], "day_of_week": 1}], "does not come after"),  # same date twice
        (
            [{**MAPPING[1], "day_index": 1}, {**MAPPING[0], "day_index": 2}],
            "does not come after",
        ),  # dates backwards
        ([{**MAPPING[0], "day_of_week": 8}], "invalid"),  # no eighth weekday
    ],
)
def test_load_refuses_bad_day_mappings(sample_store: Store, mapping: Any, message: str):
    """Tests that load_window refuses a malformed day mapping with a clear StoreError."""
    with pytest.raises(StoreError, match=message):
        sample_store.load_window(USER, mapping)


def test_store_on_a_file_persists_across_instances(db_path: Path):
    """Tests that a window seeded through one Store reads back through a new Store on the same
    SQLite file (the embedded default), and that tables are not recreated over the data."""
    state = load_window("sample_window")
    first = Store.from_url(f"sqlite:///{db_path}")
    first.seed_from_state(USER, state)
    first.dispose()
    second = Store.from_url(f"sqlite:///{db_path}")
    assert stored(reload(second, state)) == stored(state)
    assert second.row_counts(USER)["schedules"] == 61
    second.dispose()


def test_store_satisfies_the_protocol_the_tools_use(store: Store):
    """Tests that the SQLAlchemy Store is a ScheduleStore (what ToolContext.store expects)."""
    from smartflow_engine.store import ScheduleStore

    assert isinstance(store, ScheduleStore)


def test_the_protocol_names_every_store_method_the_adapter_calls():
    """Tests (by grep) that every method the tools adapter calls on its store or database is a
    member of ScheduleStore, so the Protocol types every use (and a fake store for the tools
    needs only these)."""
    from smartflow_engine.store import ScheduleStore

    root = Path(__file__).resolve().parents[2] / "smartflow_engine" / "tools_adapter"
    called = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        called |= set(re.findall(r"\b(?:store|database)\.([a-z_]+)\(", text))
    assert called, "the grep found no call: the pattern is broken"
    members = {name for name in dir(ScheduleStore) if not name.startswith("_")}
    assert called <= members, sorted(called - members)
    assert {"load_window", "commit", "preview_commit", "upsert_task_class"} <= called

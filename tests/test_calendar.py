"""Tests of the window's calendar and the calendar vocabulary's pure selection
(``smartflow_engine/calendar.py``), each rule against an independent reading of the state's JSON
(``tests/helpers/calendar_oracle.py``): the day mapping as plain dicts, occupancy rebuilt from
the task blocks."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine.calendar_filters import (
    PlaceFilter,
    TaskFilter,
    calendar_of,
    free_places,
    proposal_scope,
    week_days,
    week_range,
)
from tests.helpers.calendar_oracle import (
    calendar_windows,
    day_filters,
    oracle_days,
    oracle_period_ok,
    oracle_places,
    oracle_tasks,
    section_filters,
)


# ---------------------------------------------------------------------------------- tests
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_calendar_reads_the_day_mapping(data):
    """Tests that the calendar the selection reads gives each day the day mapping's week and
    weekday, the window's first and last weeks its extremes, each week its days, and that a
    window without a mapping has none."""
    state = data.draw(calendar_windows())
    cal = calendar_of(state)
    raw = state.to_dict()["window"].get("day_mapping")
    if not raw:
        assert cal is None
        return
    assert cal is not None
    for m in raw:
        assert (cal.week(m["day_index"]), cal.weekday(m["day_index"])) == (
            m["week"],
            m["day_of_week"],
        )
    weeks = [m["week"] for m in raw]
    assert week_range(cal) == (min(weeks), max(weeks))
    for w in set(weeks):
        assert week_days(cal, w) == [m["day_index"] for m in raw if m["week"] == w]


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_day_filter_selects_what_the_mapping_says(data):
    """Tests that every combination of day, week and weekday filters selects exactly the days an
    independent reading of the day mapping selects (both filters of a pair hold)."""
    state = data.draw(calendar_windows())
    f = data.draw(day_filters(state))
    assert f.days(state.num_days, calendar_of(state)) == oracle_days(state.to_dict(), f)


@settings(max_examples=80, deadline=None)
@given(f=section_filters(), start=st.integers(1, 12), length=st.integers(1, 12))
def test_section_filter_holds_on_every_period(f, start, length):
    """Tests that a run of periods passes the section filter exactly when each of its periods is
    not excluded, after after_section and before before_section (both strict)."""
    end = min(12, start + length - 1)
    want = all(oracle_period_ok(f, p) for p in range(start, end + 1))
    assert f.allows(start, end) == want
    assert list(f.mask(12)) == [oracle_period_ok(f, p) for p in range(1, 13)]


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_task_filter_selects_and_orders_as_stated(data):
    """Tests that the task filter keeps a placed task when one of its blocks lies on a selected
    day within the allowed periods, a pending one only without day or section filters, narrows by
    status, category and ids, and orders placed tasks by that block, then pending ones by id."""
    state = data.draw(calendar_windows())
    raw = state.to_dict()
    categories = sorted({t.category for t in state.tasks if t.category})
    ids = [t.state_id for t in state.tasks]
    active = data.draw(st.booleans())
    where = (
        PlaceFilter(data.draw(day_filters(state)), data.draw(section_filters()))
        if active
        else PlaceFilter()
    )
    f = TaskFilter(
        where,
        data.draw(st.sampled_from(["all", "existing", "suggested", "pending"])),
        data.draw(st.none() | st.sampled_from(categories)) if categories else None,
        frozenset(data.draw(st.sets(st.sampled_from(ids), min_size=1)))
        if data.draw(st.booleans())
        else None,
    )
    got = [t.state_id for t in f.select(state, calendar_of(state))]
    assert got == oracle_tasks(raw, f)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_free_places_are_every_legal_start(data):
    """Tests that the free places are every start of the duration's free periods on the selected
    days within the allowed periods, then every start inside a free water-course block (an
    unlocked can_embed block holding no guest), as rebuilt from the raw blocks."""
    state = data.draw(calendar_windows())
    days = oracle_days(state.to_dict(), data.draw(day_filters(state)))
    sections = data.draw(section_filters())
    duration = data.draw(st.integers(1, 4))
    got = [
        (p.day, p.slot_start, p.kind, p.embed_host)
        for p in free_places(state, days, sections, duration)
        if p.slot_end == p.slot_start + duration - 1
    ]
    assert len(got) == len(free_places(state, days, sections, duration))
    assert got == oracle_places(state.to_dict(), days, sections, duration)


def _movable_by_solver(raw: dict[str, Any], t: dict[str, Any]) -> bool:
    by_id = {x["state_id"]: x for x in raw["tasks"]}
    host = by_id.get(t.get("embed_host"))
    hosts = {x.get("embed_host") for x in raw["tasks"]}
    return (
        t.get("source") != "event"
        and t["status"] != "pending"
        and len(t.get("slots", [])) == 1
        and not t.get("can_embed")
        and not t.get("locked")
        and not (host is not None and host.get("locked"))
        and t["state_id"] not in hosts
    )


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_proposal_scope_masks(data):
    """Tests that a proposal's scope moves exactly the selected placed study tasks a proposal can
    re-plan, gives every pending task and every moving task the slots filter's (day, period)
    cells, and with same_week keeps only the days of the week a moving task is in."""
    state = data.draw(calendar_windows(min_days=7))
    cal = calendar_of(state)
    raw = state.to_dict()
    tasks = TaskFilter(PlaceFilter(data.draw(day_filters(state)), data.draw(section_filters())))
    slots = PlaceFilter(data.draw(day_filters(state)), data.draw(section_filters()))
    same_week = cal is not None and data.draw(st.booleans())
    scope = proposal_scope(state, cal, tasks, slots, same_week, state.pending_tasks())
    selected = set(oracle_tasks(raw, tasks))
    moving = {
        t["state_id"]
        for t in raw["tasks"]
        if t["state_id"] in selected and _movable_by_solver(raw, t)
    }
    assert scope.movable == moving
    spd, days = state.slots_per_day, set(oracle_days(raw, slots.days))
    by_id = {t["state_id"]: t for t in raw["tasks"]}
    pending = {t["state_id"] for t in raw["tasks"] if t["status"] == "pending"}
    assert set(scope.allowed) == moving | pending
    for tid, mask in scope.allowed.items():
        week_days = set(range(1, state.num_days + 1))
        if same_week and tid in moving:
            mapping = {m["day_index"]: m["week"] for m in raw["window"]["day_mapping"]}
            week = mapping[by_id[tid]["slots"][0]["day"]]
            week_days = {d for d, w in mapping.items() if w == week}
        want = np.array(
            [
                [
                    d in days and d in week_days and oracle_period_ok(slots.sections, p)
                    for p in range(1, spd + 1)
                ]
                for d in range(1, state.num_days + 1)
            ]
        )
        assert np.array_equal(mask, want), tid

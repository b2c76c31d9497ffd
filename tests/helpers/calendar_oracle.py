"""An independent reading of the calendar vocabulary (issue 43) for the tests: the day mapping
as plain dicts, occupancy rebuilt from the raw task blocks, and the strategies that draw windows
starting on any weekday and filters over them. Written apart from ``smartflow_engine.calendar``
so the tests compare two implementations."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from smartflow_engine.calendar_filters import DayFilter, SectionFilter, TaskFilter
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.strategies import windows

SCOPES = {"all": range(1, 8), "workday": range(1, 6), "weekend": (6, 7)}


def remap(data: dict[str, Any], week: int, dow: int) -> dict[str, Any]:
    """``data`` (a window's JSON) with a day mapping whose day 1 is weekday ``dow`` of ``week``."""
    mapping = []
    for day in range(1, data["window"]["total_days"] + 1):
        mapping.append({"day_index": day, "week": week, "day_of_week": dow})
        dow += 1
        if dow > 7:
            week, dow = week + 1, 1
    data["window"]["day_mapping"] = mapping
    return data


# ---------------------------------------------------------------------------------- strategies
@st.composite
def calendar_windows(draw: st.DrawFn, min_days: int = 3, max_days: int = 30) -> ScheduleState:
    """A synthetic window whose day 1 is any weekday of any teaching week (the window need not
    start on a Monday), or, now and then, a window with no day mapping."""
    state = draw(windows(min_days=min_days, max_days=max_days, embeddable=0.4))
    data = state.to_dict()
    if draw(st.integers(0, 9)) == 0:
        data["window"].pop("day_mapping", None)
        return ScheduleState.from_json(data)
    remap(data, draw(st.integers(1, 20)), draw(st.integers(1, 7)))
    return ScheduleState.from_json(data)


@st.composite
def day_filters(draw: st.DrawFn, state: ScheduleState) -> DayFilter:
    n = state.num_days
    mapping = state.window.day_mapping
    weeks = sorted({m.week for m in mapping})
    lo = draw(st.none() | st.integers(1, n))
    hi = draw(st.none() | st.integers(lo or 1, n))
    if not weeks:
        return DayFilter(day_start=lo, day_end=hi)
    w_lo = draw(st.none() | st.sampled_from(weeks))
    w_hi = draw(st.none() | st.sampled_from([w for w in weeks if w_lo is None or w >= w_lo]))
    return DayFilter(
        day_scope=draw(st.sampled_from(["all", "workday", "weekend"])),
        day_of_week=frozenset(draw(st.sets(st.integers(1, 7), max_size=4))),
        week_from=w_lo,
        week_to=w_hi,
        day_start=lo,
        day_end=hi,
    )


@st.composite
def section_filters(draw: st.DrawFn, spd: int = 12) -> SectionFilter:
    return SectionFilter(
        frozenset(draw(st.sets(st.integers(1, spd), max_size=5))),
        draw(st.none() | st.integers(1, spd)),
        draw(st.none() | st.integers(1, spd)),
    )


# ---------------------------------------------------------------------------------- the oracle
def oracle_days(data: dict[str, Any], f: DayFilter) -> list[int]:
    """The days ``f`` selects, read off the raw day mapping."""
    n = data["window"]["total_days"]
    mapping = {m["day_index"]: m for m in data["window"].get("day_mapping", [])}
    out = []
    for day in range(1, n + 1):
        if f.day_start is not None and day < f.day_start:
            continue
        if f.day_end is not None and day > f.day_end:
            continue
        if mapping:
            week, dow = mapping[day]["week"], mapping[day]["day_of_week"]
            if dow not in SCOPES[f.day_scope]:
                continue
            if f.day_of_week and dow not in f.day_of_week:
                continue
            if f.week_from is not None and week < f.week_from:
                continue
            if f.week_to is not None and week > f.week_to:
                continue
        out.append(day)
    return out


def oracle_period_ok(f: SectionFilter, p: int) -> bool:
    if p in f.exclude:
        return False
    if f.after is not None and not p > f.after:
        return False
    return f.before is None or p < f.before


def oracle_tasks(data: dict[str, Any], f: TaskFilter) -> list[int]:
    """The ids ``f`` selects, in the stated order, from the raw tasks."""
    active = f.where.days.active or f.where.sections.active
    days = set(oracle_days(data, f.where.days))
    placed: list[tuple[tuple[int, int], int]] = []
    pending: list[int] = []
    for t in data["tasks"]:
        if f.status != "all" and t["status"] != f.status:
            continue
        if f.category is not None and t.get("category", "") != f.category:
            continue
        if f.task_ids is not None and t["state_id"] not in f.task_ids:
            continue
        hits = [
            (b["day"], b["slot_start"])
            for b in t.get("slots", [])
            if b["day"] in days
            and all(
                oracle_period_ok(f.where.sections, p)
                for p in range(b["slot_start"], b["slot_end"] + 1)
            )
        ]
        if not t.get("slots"):
            if not active:
                pending.append(t["state_id"])
            continue
        if active and not hits:
            continue
        first = min(hits) if active else min((b["day"], b["slot_start"]) for b in t["slots"])
        placed.append((first, t["state_id"]))
    return [tid for _, tid in sorted(placed)] + sorted(pending)


def oracle_places(
    data: dict[str, Any], days: list[int], f: SectionFilter, duration: int
) -> list[tuple[int, int, str, int | None]]:
    """Every place of ``duration`` periods, rebuilt from the raw blocks."""
    spd = data["window"].get("slots_per_day", 12)
    taken: set[tuple[int, int]] = set()
    for t in data["tasks"]:
        if t.get("embed_host") is None:
            for b in t.get("slots", []):
                taken |= {(b["day"], p) for p in range(b["slot_start"], b["slot_end"] + 1)}
    ok = [oracle_period_ok(f, p) for p in range(1, spd + 1)]
    empty = [
        (d, s, "empty", None)
        for d in sorted(days)
        for s in range(1, spd - duration + 2)
        if all((d, p) not in taken and ok[p - 1] for p in range(s, s + duration))
    ]
    guests = [t for t in data["tasks"] if t.get("embed_host") is not None]
    embedded = []
    for host in data["tasks"]:
        if not host.get("can_embed") or host.get("locked"):
            continue
        for b in host.get("slots", []):
            if b["day"] not in days:
                continue
            busy = any(
                g["embed_host"] == host["state_id"]
                and g["slots"][0]["day"] == b["day"]
                and b["slot_start"] <= g["slots"][0]["slot_start"] <= b["slot_end"]
                for g in guests
            )
            if busy:
                continue
            for s in range(b["slot_start"], b["slot_end"] - duration + 2):
                if all(ok[p - 1] for p in range(s, s + duration)):
                    embedded.append((b["day"], s, "embedded", host["state_id"]))
    return empty + sorted(embedded)

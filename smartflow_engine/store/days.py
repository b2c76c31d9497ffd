"""Day mapping (§3.5) and section compression (§3.4): the pure conversions between the tables'
``(week, day_of_week, section)`` rows and the state's ``(day, slot_start, slot_end)`` blocks."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from ..state import DayMapping, SlotRange


class StoreError(ValueError):
    """Data the store cannot read or write (one line naming what is wrong)."""


WeekDay = tuple[int, int]  # (week, day_of_week)


def ordinal(week: int, day_of_week: int) -> int:
    """A sortable day number: weeks of seven days, ``day_of_week`` 1..7."""
    return week * 7 + day_of_week - 1


@dataclass(frozen=True)
class DayIndex:
    """Both directions of a window's day mapping: ``day_index`` ↔ ``(week, day_of_week)``."""

    mapping: tuple[DayMapping, ...]
    by_weekday: Mapping[WeekDay, int]
    ordinals: tuple[int, ...]  # ordinal of each day, ascending

    @classmethod
    def build(cls, day_mapping: Iterable[DayMapping | Mapping[str, Any]]) -> DayIndex:
        """Validate a day mapping: day indexes 1..n in order, distinct and ascending dates.

        Raises
        ------
        StoreError
            Empty mapping, a gap or repeat in the day indexes, a repeated or out-of-order date.
        """
        entries: list[DayMapping] = []
        for i, raw in enumerate(day_mapping, start=1):
            try:
                dm = raw if isinstance(raw, DayMapping) else DayMapping.model_validate(raw)
            except ValueError as exc:
                raise StoreError(f"day_mapping[{i - 1}] is invalid: {exc}") from None
            if dm.day_index != i:
                raise StoreError(f"day_mapping[{i - 1}] has day_index {dm.day_index}, expected {i}")
            entries.append(dm)
        if not entries:
            raise StoreError("day_mapping is empty: a window needs at least one day")
        ords = [ordinal(d.week, d.day_of_week) for d in entries]
        for i in range(1, len(ords)):
            if ords[i] <= ords[i - 1]:
                d = entries[i]
                raise StoreError(
                    f"day_mapping: day {d.day_index} (week {d.week}, day_of_week "
                    f"{d.day_of_week}) does not come after day {d.day_index - 1}"
                )
        by_weekday = {(d.week, d.day_of_week): d.day_index for d in entries}
        return cls(tuple(entries), by_weekday, tuple(ords))

    @property
    def num_days(self) -> int:
        return len(self.mapping)

    @property
    def week_range(self) -> tuple[int, int]:
        return self.mapping[0].week, self.mapping[-1].week

    def weekday(self, day: int) -> WeekDay:
        """``(week, day_of_week)`` of day index ``day`` (1-based)."""
        if not 1 <= day <= len(self.mapping):
            raise StoreError(f"day {day} is outside the window (days 1-{len(self.mapping)})")
        dm = self.mapping[day - 1]
        return dm.week, dm.day_of_week

    def day_of(self, week: int, day_of_week: int) -> int | None:
        return self.by_weekday.get((week, day_of_week))

    def first_day_from(self, week: int, day_of_week: int) -> int | None:
        """The first window day on or after the date, or ``None`` when it is after the window."""
        pos = bisect.bisect_left(self.ordinals, ordinal(week, day_of_week))
        return pos + 1 if pos < len(self.ordinals) else None

    def last_day_until(self, week: int, day_of_week: int) -> int | None:
        """The last window day on or before the date, or ``None`` when it is before the window."""
        pos = bisect.bisect_right(self.ordinals, ordinal(week, day_of_week))
        return pos if pos > 0 else None


def compress(sections: Iterable[int]) -> list[tuple[int, int]]:
    """Contiguous runs ``(start, end)`` of a day's sections (§3.4), ascending."""
    runs: list[tuple[int, int]] = []
    for s in sorted(set(sections)):
        if runs and s == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    return runs


def split_for_guests(
    run: tuple[int, int], guests: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Split a host's run so that each guest lies in its own block (one guest per host block).

    Two touching blocks of one event on one day come back from the table as one run; when each
    held a guest, the run is cut right after every guest but the last.
    """
    inside = sorted(g for g in guests if run[0] <= g[0] and g[1] <= run[1])
    if len(inside) < 2:
        return [run]
    out: list[tuple[int, int]] = []
    start = run[0]
    for _, guest_end in inside[:-1]:
        out.append((start, guest_end))
        start = guest_end + 1
    out.append((start, run[1]))
    return out


def expand(block: SlotRange) -> range:
    """The sections of a block (§3.4, reverse): one ``schedules`` row each."""
    return range(block.slot_start, block.slot_end + 1)


MAX_WINDOW_DAYS = 1000  # the state model's limit on total_days


def window_days(start: WeekDay, end: WeekDay) -> list[DayMapping]:
    """The day mapping of the consecutive days from ``start`` to ``end`` (both ``(week,
    day_of_week)``, inclusive): a planning window as a backend names it.

    Raises
    ------
    StoreError
        A day of week outside 1..7, a week below 1, an end before the start, or more than
        :data:`MAX_WINDOW_DAYS` days.
    """
    for name, (week, dow) in (("start", start), ("end", end)):
        if week < 1 or not 1 <= dow <= 7:
            raise StoreError(
                f"window {name} (week {week}, day_of_week {dow}) is not a date: "
                "week >= 1, day_of_week 1..7"
            )
    first, last = ordinal(*start), ordinal(*end)
    if last < first:
        raise StoreError(
            f"window end (week {end[0]}, day_of_week {end[1]}) comes before its "
            f"start (week {start[0]}, day_of_week {start[1]})"
        )
    if last - first + 1 > MAX_WINDOW_DAYS:
        raise StoreError(f"window of {last - first + 1} days exceeds {MAX_WINDOW_DAYS} days")
    return [
        DayMapping(day_index=i + 1, week=o // 7, day_of_week=o % 7 + 1)
        for i, o in enumerate(range(first, last + 1))
    ]


def class_week_day(
    day: date | datetime | None, ext: Any, semester_start: date | None
) -> WeekDay | None:
    """A class end as ``(week, day_of_week)``: from its date on the semester calendar, else from
    the teaching-week day the extension table keeps."""
    if day is not None and semester_start is not None:
        d = day.date() if isinstance(day, datetime) else day
        offset = (d - semester_start).days
        if offset >= 0:
            return offset // 7 + 1, offset % 7 + 1
    if isinstance(ext, dict) and "week" in ext and "day_of_week" in ext:
        return int(ext["week"]), int(ext["day_of_week"])
    return None

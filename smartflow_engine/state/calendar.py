"""The window's calendar: each day's teaching week, weekday and date, when the state says them.

The spec's window maps every day to ``(week, day_of_week)`` (``window.day_mapping``); a date per
day is known when every mapping entry carries its ``date``, or when the window gives
``semester_start`` (the date of week 1's Monday: day ``(w, d)`` is then
``semester_start + 7·(w−1) + (d−1)``, the reference system's relative-date rule). A host that
knows its term's first Monday but sends states without it sets ``SMARTFLOW_SEMESTER_START``; the
tool surface writes it into each state it is given (:meth:`ScheduleState.apply_semester_start`).

Nothing here guesses: a window without a mapping has no weekdays, one without either date source
has no dates, and the rules that need them say so (:mod:`.class_rules`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Window

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
WEEKDAY_WORDS = ("一", "二", "三", "四", "五", "六", "日")  # 星期一 … 星期日, by day_of_week - 1


def parse_date(value: str) -> date:
    """A ``YYYY-MM-DD`` date (the reference system's format, Go's ``2006-01-02``).

    Raises
    ------
    ValueError
        ``value`` is not such a date (the message quotes it).
    """
    if not _ISO_DATE.fullmatch(value):
        raise ValueError(f"{value!r} is not a date written YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a real date") from None


def weekday_word(day_of_week: int) -> str:
    """``星期六`` for 6 (1 = Monday … 7 = Sunday)."""
    return "星期" + WEEKDAY_WORDS[day_of_week - 1]


@dataclass(frozen=True)
class Calendar:
    """Per day of the window (index ``day - 1``): its week, weekday and date, or ``None`` where
    the state does not say. ``source`` names where the dates came from (``"day_mapping"``,
    ``"semester_start"`` or ``None``: no dates)."""

    weeks: tuple[int | None, ...]
    weekdays: tuple[int | None, ...]
    dates: tuple[date | None, ...]
    source: str | None

    @classmethod
    def of(cls, window: Window) -> Calendar:
        """The calendar the window states (validated by the state model before this is read)."""
        n = window.total_days
        mapping = window.day_mapping
        if not mapping:
            return cls((None,) * n, (None,) * n, (None,) * n, None)
        weeks = tuple(m.week for m in mapping)
        weekdays = tuple(m.day_of_week for m in mapping)
        if all(m.date is not None for m in mapping):
            dates = tuple(parse_date(m.date) for m in mapping if m.date is not None)
            return cls(weeks, weekdays, dates, "day_mapping")
        if window.semester_start is not None:
            monday = parse_date(window.semester_start)
            dates = tuple(
                monday + timedelta(days=7 * (m.week - 1) + m.day_of_week - 1) for m in mapping
            )
            return cls(weeks, weekdays, dates, "semester_start")
        return cls(weeks, weekdays, (None,) * n, None)

    @property
    def has_weekdays(self) -> bool:
        return bool(self.weekdays) and self.weekdays[0] is not None

    @property
    def has_dates(self) -> bool:
        return self.source is not None

    def week(self, day: int) -> int | None:
        return self.weeks[day - 1] if 1 <= day <= len(self.weeks) else None

    def weekday(self, day: int) -> int | None:
        """1 = Monday … 7 = Sunday; ``None`` outside the window or without a day mapping."""
        return self.weekdays[day - 1] if 1 <= day <= len(self.weekdays) else None

    def date(self, day: int) -> date | None:
        return self.dates[day - 1] if 1 <= day <= len(self.dates) else None


def mapping_problem(window: Window) -> str | None:
    """The first inconsistency of the window's dates (a partial set of per-day dates, a date
    whose weekday differs from its entry's ``day_of_week``, a ``semester_start`` that is not a
    Monday or disagrees with the per-day dates), or ``None``."""
    mapping = window.day_mapping
    given = [m for m in mapping if m.date is not None]
    if given and len(given) != len(mapping):
        missing = next(m.day_index for m in mapping if m.date is None)
        return (
            f"window.day_mapping: day {missing} has no date while others have one "
            f"(give a date on every entry, or on none)"
        )
    for m in given:
        assert m.date is not None
        iso = parse_date(m.date).isoweekday()
        if iso != m.day_of_week:
            return (
                f"window.day_mapping: day {m.day_index} is dated {m.date}, a "
                f"{weekday_word(iso)} (day_of_week {iso}), but its day_of_week is {m.day_of_week}"
            )
    if window.semester_start is None:
        return None
    monday = parse_date(window.semester_start)
    if monday.isoweekday() != 1:
        return (
            f"window.semester_start {window.semester_start} is not a Monday "
            f"(it is the date of week 1's Monday)"
        )
    for m in given:
        expected = monday + timedelta(days=7 * (m.week - 1) + m.day_of_week - 1)
        if m.date is not None and parse_date(m.date) != expected:
            return (
                f"window.day_mapping: day {m.day_index} is dated {m.date}, but week {m.week} "
                f"day_of_week {m.day_of_week} of a term starting {window.semester_start} "
                f"is {expected.isoformat()}"
            )
    return None

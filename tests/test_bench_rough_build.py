"""Issue 41 item 6: the benchmark's re-implementation of SmartFlow-Agent's greedy rough build
(benchmarks/bench_rough_build.py) answers legal blocks on a tiny window (two sections on an odd
start, no overlap with each other or an occupied row, inside the class's dates, off its banned
half-days and weekdays, embedded only in a water course the class allows) for both strategies, and
aborts with nothing delivered when an item cannot fit."""

from __future__ import annotations

import pytest

from benchmarks.bench_rough_build import GreedyClass, greedy_rough_build

# Week 1: Monday 1-2 a locked course (event 7), Monday 3-4 a water course (event 8).
ROWS = {(1, 1, 1): (7, False), (1, 1, 2): (7, False), (1, 1, 3): (8, True), (1, 1, 4): (8, True)}


def _legal(answer, classes, rows):
    taken: set[tuple[int, int, int]] = set()
    by_item = {i: c for c in classes for i in c.items}
    for item, week, dow, first, last, host in answer.placements:
        cls = by_item[item]
        assert last == first + 1 and first % 2 == 1
        assert cls.start <= (week, dow) <= cls.end
        assert dow not in cls.excluded_days_of_week
        assert (first + 1) // 2 not in cls.excluded_slots
        cells = {(week, dow, s) for s in (first, last)}
        assert taken.isdisjoint(cells)
        taken |= cells
        for cell in cells:
            if cell in rows:
                assert rows[cell][1] and cls.allow_filler_course and rows[cell][0] == host
    assert sorted(p[0] for p in answer.placements) == sorted(by_item)


@pytest.mark.parametrize("strategy", ["steady", "rapid"])
@pytest.mark.parametrize("filler", [True, False])
def test_greedy_places_legal_two_section_blocks(strategy, filler):
    """Tests every item placed in a legal two-section block, across two classes sharing days."""
    classes = [
        GreedyClass(1, (1, 1), (1, 2), [3], [], filler, strategy, [101, 102, 103]),
        GreedyClass(2, (1, 1), (1, 3), [], [2], True, strategy, [201, 202]),
    ]
    answer = greedy_rough_build(ROWS, classes)
    assert not answer.aborted
    _legal(answer, classes, ROWS)
    if not filler:  # the water course is occupied for class 1
        assert all(p[5] == 0 for p in answer.placements if p[0] < 200)


@pytest.mark.parametrize("strategy", ["steady", "rapid"])
def test_greedy_aborts_when_an_item_cannot_fit(strategy):
    """Tests all or nothing: one item on Monday's last pair is placed; two items where four
    sections are available (7, 9, 11, 12) but only 11-12 makes a pair: aborted, nothing
    delivered; and a later class failing discards an earlier class's blocks too."""
    one_day = GreedyClass(1, (1, 1), (1, 1), [1, 2, 3, 4, 5], [], True, strategy, [101])
    answer = greedy_rough_build(ROWS, [one_day])
    assert not answer.aborted and answer.placements == [(101, 1, 1, 11, 12, 0)]
    rows = dict(ROWS) | {(1, 1, 8): (9, False), (1, 1, 10): (9, False)}
    two = GreedyClass(2, (1, 1), (1, 1), [1, 2, 3], [], True, strategy, [201, 202])
    answer = greedy_rough_build(rows, [two])
    assert answer.aborted and answer.placements == [] and answer.failed_class == 2
    assert answer.attempted == 1  # 11-12 was placed before the abort
    answer = greedy_rough_build(rows, [one_day, two])
    assert answer.aborted and answer.placements == [] and answer.failed_class == 2
    assert answer.attempted == 1  # class 1's block, discarded

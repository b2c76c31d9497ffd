"""Property tests of the class rules in every simple write (issue 42 item 2), against an
independent checker written here from the raw state JSON.

The checker splits a write's legality in two: what the rules of placing need (conflicts, locks,
shapes, embedding) is decided by the same write on a copy of the state with every class rule
stripped (classes, orders and the existing-as-facts option removed: those rules are tested
elsewhere); what the class rules need is decided here, from the fields as the reference system
means them (half-day blocks, weekdays from the day mapping, dates from the semester start, the
water-course permission, the item order between every pair). The write must be accepted exactly
when both say yes, land where the rule-free write lands, and change nothing when refused.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine.state import (
    OpResult,
    Request,
    ScheduleState,
    batch_move,
    move,
    place,
    self_check,
    swap,
    unplace,
)
from smartflow_engine.state.strategies import sensible_write_calls, windows

RULE_KINDS = {
    "class_window",
    "banned_weekday",
    "banned_period",
    "no_filler",
    "order_after",
    "order_before",
    "existing_fixed",
}


def run(state: ScheduleState, name: str, args: dict[str, Any], fixed: bool) -> OpResult | None:
    """The state operation behind write tool ``name`` (``None``: not a write)."""
    if name == "place":
        return place(state, args["task_id"], args["day"], args["slot_start"])
    if name == "move":
        return move(
            state,
            args["task_id"],
            args["new_day"],
            args["new_slot_start"],
            args.get("from_day"),
            existing_fixed=fixed,
        )
    if name == "swap":
        return swap(state, args["task_a"], args["task_b"], existing_fixed=fixed)
    if name == "unplace":
        return unplace(state, args["task_id"], existing_fixed=fixed)
    if name == "batch_move":
        moves = [
            Request(m["task_id"], m["new_day"], m["new_slot_start"], m.get("from_day"))
            for m in args["moves"]
        ]
        return batch_move(state, moves, existing_fixed=fixed)
    return None


def rule_free(data: dict[str, Any]) -> ScheduleState:
    """The same window without any class rule."""
    bare = {**data, "task_classes": []}
    bare["tasks"] = [{k: v for k, v in t.items() if k != "task_order"} for t in data["tasks"]]
    return ScheduleState.from_json(bare)


def day_dates(window: dict[str, Any]) -> dict[int, date] | None:
    """Each day's date from the window's semester start and day mapping (None: no dates)."""
    start = window.get("semester_start")
    mapping = window.get("day_mapping") or []
    if start is None or not mapping:
        return None
    monday = date.fromisoformat(start)
    return {
        m["day_index"]: monday + timedelta(days=7 * (m["week"] - 1) + m["day_of_week"] - 1)
        for m in mapping
    }


def class_breaks(data: dict[str, Any], task: dict[str, Any]) -> list[str]:
    """The class rules ``task`` (as it stands in ``data``) breaks where it is placed."""
    classes = {c["id"]: c for c in data.get("task_classes", [])}
    c = classes.get(task.get("category_id"))
    if c is None:
        return []
    weekdays = {m["day_index"]: m["day_of_week"] for m in data["window"].get("day_mapping", [])}
    dates = day_dates(data["window"])
    banned = {p for b in c.get("excluded_slots") or [] for p in (2 * b - 1, 2 * b)}
    banned |= set(c.get("excluded_periods") or [])
    out = []
    for b in task["slots"]:
        day = b["day"]
        if c.get("start_day") is not None and day < c["start_day"]:
            out.append("before start_day")
        if c.get("end_day") is not None and day > c["end_day"]:
            out.append("after end_day")
        if (
            dates is not None
            and c.get("start_date")
            and dates[day] < date.fromisoformat(c["start_date"])
        ):
            out.append("before start_date")
        if (
            dates is not None
            and c.get("end_date")
            and dates[day] > date.fromisoformat(c["end_date"])
        ):
            out.append("after end_date")
        if weekdays.get(day) in (c.get("excluded_days_of_week") or []):
            out.append("banned weekday")
        if banned & set(range(b["slot_start"], b["slot_end"] + 1)):
            out.append("banned period")
    if task.get("embed_host") is not None and not c.get("allow_filler_course", True):
        out.append("in a water course")
    return out


def order_breaks(data: dict[str, Any], task: dict[str, Any]) -> list[str]:
    """The items of ``task``'s class it is out of order with (both placed, orders differ)."""

    def ordered(t: dict[str, Any]) -> bool:
        return (
            t.get("source", "task_item") == "task_item"
            and t.get("category_id") is not None
            and t.get("task_order") is not None
            and bool(t.get("slots"))
        )

    if not ordered(task):
        return []
    start = min((b["day"], b["slot_start"]) for b in task["slots"])
    end = max((b["day"], b["slot_end"]) for b in task["slots"])
    out = []
    for u in data["tasks"]:
        if u is task or not ordered(u) or u["category_id"] != task["category_id"]:
            continue
        u_start = min((b["day"], b["slot_start"]) for b in u["slots"])
        u_end = max((b["day"], b["slot_end"]) for b in u["slots"])
        if u["task_order"] < task["task_order"] and not u_end < start:
            out.append(f"after [{u['state_id']}]")
        if u["task_order"] > task["task_order"] and not end < u_start:
            out.append(f"before [{u['state_id']}]")
    return out


def touched(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[dict, dict]]:
    """The tasks a write moved (their blocks, status or host changed; a host's derived
    ``embedded_by`` is not a move): ``(before, after)`` of each."""

    def where(t: dict[str, Any]) -> tuple[Any, ...]:
        return (t.get("slots"), t["status"], t.get("embed_host"))

    old = {t["state_id"]: t for t in before["tasks"]}
    return [
        (old[t["state_id"]], t) for t in after["tasks"] if where(t) != where(old[t["state_id"]])
    ]


def tasks_of(state: ScheduleState) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k != "task_order"} for t in state.to_dict()["tasks"]]


@settings(deadline=None)
@given(
    data=st.data(),
    state=windows(7, 21, movable_courses=0.3, embeddable=0.35, upstream=True, pending_per_day=0.8),
    fixed=st.booleans(),
)
def test_writes_agree_with_the_checker(data, state, fixed):
    """Tests that random writes on windows with the reference system's constraints are accepted
    exactly when the rule-free write is and no class rule or existing-as-facts rule breaks (for
    the tasks the write moves, after it), land where the rule-free write lands, and that a
    refusal changes nothing (a rule's refusal names a rule)."""
    for _ in range(8):
        name, args = data.draw(sensible_write_calls(state))
        before = state.to_dict()
        free = rule_free(before)
        free_result = run(free, name, args, False)
        if free_result is None:
            continue
        result = run(state, name, args, fixed)
        assert result is not None
        if not free_result.ok:
            assert not result.ok and state.to_dict() == before
            continue
        after = {
            **before,
            "tasks": [{**t, **u} for t, u in zip(before["tasks"], tasks_of(free), strict=True)],
        }
        changed = touched(before, after)
        reasons = []
        for old, new in changed:
            if fixed and old["status"] == "existing":
                reasons.append("existing is a fact")
            if new["status"] != "pending":
                reasons += class_breaks(after, new) + order_breaks(after, new)
        if reasons:
            assert not result.ok, reasons
            assert result.refusal is not None and result.refusal.kind in RULE_KINDS
            assert state.to_dict() == before
        else:
            assert result.ok, (result.refusal, name, args)
            assert tasks_of(state) == tasks_of(free)
            self_check(state)


@settings(deadline=None)
@given(data=st.data(), state=windows(7, 21, movable_courses=0.3, embeddable=0.4, upstream=None))
def test_batch_move_does_not_depend_on_the_order_of_its_moves(data, state):
    """Tests issue 44 item 8 as a property: a batch and the same batch reversed are both
    accepted or both refused, and when accepted leave the same state."""
    for _ in range(4):
        name, args = data.draw(sensible_write_calls(state))
        if name != "batch_move" or len(args["moves"]) < 2:
            continue
        other = ScheduleState.from_json(state.to_dict())
        moves = [
            Request(m["task_id"], m["new_day"], m["new_slot_start"], m.get("from_day"))
            for m in args["moves"]
        ]
        one, two = batch_move(state, moves), batch_move(other, moves[::-1])
        assert one.ok == two.ok, (one.refusal, two.refusal)
        assert state.to_dict() == other.to_dict()

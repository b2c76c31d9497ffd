"""Tests of the pure state operations: conflicts, locks, status rules, embedding, atomicity."""

from __future__ import annotations

import pytest

from smartflow_engine.state import (
    Request,
    ScheduleState,
    batch_move,
    move,
    place,
    relocate,
    self_check,
    swap,
    unplace,
)


def _snapshot(state: ScheduleState):
    return state.to_json(), state.grid.owner.copy(), state.grid.guest.copy()


def _unchanged(state: ScheduleState, snap) -> bool:
    text, owner, guest = snap
    return (
        state.to_json() == text
        and (state.grid.owner == owner).all()
        and (state.grid.guest == guest).all()
    )


def test_place_sets_suggested_and_grid(spec_tools_window):
    """Tests that place turns a pending task into a suggested one and fills the grid."""
    s = spec_tools_window
    res = place(s, 3, 5, 1)
    assert res.ok and s.task(3).status == "suggested"
    assert (s.grid.owner[4, 0:3] == 3).all() and s.grid.owner[4, 3] == 0
    assert res.changes[0].block_after.slot_end == 3
    self_check(s)


@pytest.mark.parametrize(
    ("op", "args", "kind"),
    [
        (place, (1, 5, 1), "not_pending"),  # a placed task cannot be placed
        (place, (99, 5, 1), "not_found"),
        (place, (3, 1, 1), "conflict"),  # day 1 periods 1-3 held by [1] and [2]
        (place, (3, 14, 1), "out_of_window"),  # day 14 of 13
        (place, (3, 5, 11), "out_of_window"),  # 11-13 runs past period 12
        (move, (3, 5, 1), "pending"),  # a pending task cannot move
        (move, (1, 5, 1, 1), "locked"),
        (move, (2, 5, 1), "multi_block"),  # [2] meets twice and no from_day
        (move, (2, 5, 1, 3), "multi_block"),  # from_day names no block of [2]
        (move, (6, 5, 1, 2), "no_block_on_day"),  # [6] has one block, on day 4, not day 2
        (move, (6, 4, 3), "no_change"),  # [6] is already on day 4 periods 3-4
        (move, (6, 4, 3, 4), "no_change"),  # the same, naming its day
        (move, (2, 6, 1, 6), "no_change"),  # [2]'s day-6 block onto itself
        (batch_move, ([Request(6, 4, 3)],), "no_change"),
        (batch_move, ([Request(4, 9, 1), Request(6, 5, 1, 3)],), "no_block_on_day"),
        (move, (6, 1, 1), "conflict"),
        (swap, (2, 2), "same_task"),
        (swap, (1, 4), "locked"),
        (swap, (3, 4), "pending"),
        (swap, (5, 4), "multi_block"),
        (swap, (2, 1), "locked"),  # issue 24 item 11: [1]'s lock before [2]'s two blocks
        (swap, (2, 3), "pending"),  # [3]'s status before [2]'s two blocks
        # a guest holds exactly one block: [2]英语 meets twice, [10]思政 is a water course
        (move, (2, 7, 1, 6), "multi_block_guest"),
        (batch_move, ([Request(2, 7, 1, 1)],), "multi_block_guest"),
        (batch_move, ([Request(2, 9, 1), Request(1, 9, 5, 1)],), "locked"),  # lock first
        (unplace, (1,), "locked"),
        (unplace, (3,), "pending"),
        (unplace, (2,), "multi_block"),
    ],
)
def test_refusals_leave_state_unchanged(spec_tools_window, op, args, kind):
    """Tests that every refused operation names its reason and changes nothing."""
    s = spec_tools_window
    snap = _snapshot(s)
    res = op(s, *args)
    assert not res.ok and res.refusal.kind == kind and res.changes == []
    assert _unchanged(s, snap)


def test_swap_refuses_different_lengths(spec_tools_window):
    """Tests that swap refuses blocks of different lengths."""
    s = spec_tools_window
    place(s, 3, 5, 1)  # [3] is 3 periods, [6] is 2
    res = swap(s, 3, 6)
    assert res.refusal.kind == "duration_mismatch"


def test_move_overlapping_its_own_place(spec_tools_window):
    """Tests that a task may move onto periods it holds itself (shift by one)."""
    s = spec_tools_window
    assert move(s, 6, 4, 4).ok
    assert s.task(6).slots[0].slot_start == 4 and s.grid.owner[3, 2] == 0
    self_check(s)


def test_move_one_block_of_a_multi_block_task(spec_tools_window):
    """Tests that from_day selects which block of a multi-block task moves."""
    s = spec_tools_window
    assert move(s, 2, 9, 5, from_day=6).ok
    assert [(b.day, b.slot_start) for b in s.task(2).slots] == [(1, 3), (9, 5)]
    self_check(s)


def test_embed_into_host_and_lock_inheritance(spec_tools_window):
    """Tests embedding: a guest wholly inside a free host block, occupancy unchanged, one per block."""
    s = spec_tools_window
    load = s.grid.day_load().copy()
    res = place(s, 7, 7, 1)
    assert res.ok and s.task(7).embed_host == 10
    assert (s.grid.day_load() == load).all()  # a guest adds nothing to occupancy
    assert (s.grid.guest[6, 0:2] == 7).all()
    # the block now holds a guest: a second guest is refused
    res = place(s, 9, 7, 1)
    assert res.refusal.kind == "embed_taken" and res.refusal.other_id == 7
    # a host with a guest cannot move or be unplaced; the refusal names the guest
    for r in (move(s, 10, 9, 1), unplace(s, 10)):
        assert r.refusal.kind == "has_guest" and r.refusal.other_id == 7
    # the guest itself may move out; the host is free again
    assert move(s, 7, 9, 1).ok and s.task(7).embed_host is None
    self_check(s)


def test_partial_overlap_with_host_is_a_conflict(spec_tools_window):
    """Tests that a range only partly inside a host block is a conflict, not an embedding."""
    s = spec_tools_window
    res = place(s, 3, 7, 1)  # 3 periods, host block is 1-2
    assert res.refusal.kind == "conflict" and res.refusal.blockers[0].task_id == 10


def test_guest_of_locked_host_cannot_move():
    """Tests that a guest loaded inside a locked host is itself immovable."""
    s = ScheduleState.from_json(
        {
            "window": {"total_days": 3},
            "tasks": [
                {
                    "state_id": 1,
                    "name": "水课",
                    "category": "课程",
                    "status": "existing",
                    "locked": True,
                    "can_embed": True,
                    "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
                },
                {
                    "state_id": 2,
                    "name": "背单词",
                    "status": "suggested",
                    "embed_host": 1,
                    "slots": [{"day": 1, "slot_start": 1, "slot_end": 1}],
                },
            ],
        }
    )
    res = move(s, 2, 2, 1)
    assert res.refusal.kind == "locked" and res.refusal.other_id == 1
    # and nothing new may embed into a locked host
    assert relocate(s, [Request(2, 2, 1)], op="x").refusal.kind == "locked"


def test_batch_move_is_simultaneous(spec_tools_window):
    """Tests that two tasks can trade places in one batch (checked after both have left)."""
    s = spec_tools_window
    place(s, 9, 5, 1)  # [9] 2 periods on day 5
    res = batch_move(s, [Request(6, 5, 1), Request(9, 4, 3)])
    assert res.ok
    assert s.task(6).slots[0].day == 5 and s.task(9).slots[0].day == 4
    self_check(s)


def test_batch_move_rolls_back_on_any_failure(spec_tools_window):
    """Tests that one bad move in a batch leaves every task where it was."""
    s = spec_tools_window
    snap = _snapshot(s)
    res = batch_move(s, [Request(6, 9, 1), Request(4, 1, 1)])  # second hits locked [1]
    assert res.refusal.kind == "conflict"
    assert _unchanged(s, snap)


def test_batch_targets_overlapping_each_other(spec_tools_window):
    """Tests that two moves to overlapping targets are refused, naming the other moving task."""
    s = spec_tools_window
    res = batch_move(s, [Request(6, 9, 1), Request(4, 9, 2)])
    assert res.refusal.kind == "conflict"
    assert res.refusal.blockers[0].task_id == 6 and res.refusal.blockers[0].moving


@pytest.mark.parametrize(
    ("moves", "kind"),
    [
        ([], "empty_batch"),
        ([Request(6, 9, 1)] * 51, "batch_too_large"),
        ([Request(6, 9, 1), Request(6, 10, 1)], "duplicate_task"),
    ],
)
def test_batch_shape_refusals(spec_tools_window, moves, kind):
    """Tests the refusals of an empty, oversized or repeating batch."""
    assert batch_move(spec_tools_window, moves).refusal.kind == kind


def test_unplace_restores_pending_with_duration(spec_tools_window):
    """Tests that unplace makes the task pending with duration = its block length."""
    s = spec_tools_window
    res = unplace(s, 6)
    assert res.ok and s.task(6).status == "pending" and s.task(6).duration == 2
    assert s.task(6).slots == [] and not (s.grid.owner == 6).any()
    self_check(s)


def test_swap_guest_with_normal_task(spec_tools_window):
    """Tests that swapping a guest with a free-standing task moves the embedding to the other."""
    s = spec_tools_window
    place(s, 7, 7, 1)  # [7] guest of [10]
    res = swap(s, 7, 6)  # [6] 线代 day 4 3-4, same length
    assert res.ok
    assert s.task(6).embed_host == 10 and s.task(7).embed_host is None
    assert s.task(7).slots[0].day == 4
    self_check(s)


def test_one_guest_per_host_block_even_without_overlap():
    """Tests that a second guest is refused anywhere in a host block that already has one.

    Found by the state machine: a batch moved a host and embedded two one-period guests side by
    side in its new block.
    """
    s = ScheduleState.from_json(
        {
            "window": {"total_days": 2},
            "tasks": [
                {
                    "state_id": 1,
                    "name": "水课",
                    "category": "课程",
                    "status": "existing",
                    "can_embed": True,
                    "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
                },
                {
                    "state_id": 2,
                    "name": "a",
                    "status": "existing",
                    "slots": [{"day": 2, "slot_start": 1, "slot_end": 1}],
                },
                {
                    "state_id": 3,
                    "name": "b",
                    "status": "existing",
                    "slots": [{"day": 2, "slot_start": 3, "slot_end": 3}],
                },
                {"state_id": 4, "name": "c", "status": "pending", "duration": 1},
            ],
        }
    )
    res = batch_move(s, [Request(1, 2, 11), Request(2, 2, 11), Request(3, 2, 12)])
    assert res.refusal.kind == "embed_taken" and res.refusal.other_id == 2
    assert move(s, 2, 1, 1).ok
    assert place(s, 4, 1, 2).refusal.kind == "embed_taken"
    self_check(s)


def test_move_with_matching_from_day_on_single_block_task(spec_tools_window):
    """Tests that from_day naming the single block's own day is accepted for a single-block
    task (and only that day: another day is refused as no_block_on_day above)."""
    s = spec_tools_window
    res = move(s, 6, 5, 1, 4)
    assert res.ok and s.task(6).slots[0].day == 5 and len(res.changes) == 1


@pytest.mark.parametrize("op", ["move", "batch_move", "apply_proposal", "spread_even"])
def test_no_write_embeds_a_block_of_a_multi_block_task(spec_tools_window, op):
    """Tests issue 24 item 1: relocating one block of [2]英语 (two blocks) into the free water
    course [10]思政 is refused for every write that relocates (move, batch_move, a proposal's
    application, a re-optimisation), the state unchanged and still loadable, and the same block
    still moves to a free place."""
    s = spec_tools_window
    snap = _snapshot(s)
    res = relocate(s, [Request(2, 7, 1, 6)], op=op, placed_only=True)
    assert not res.ok and res.refusal.kind == "multi_block_guest"
    assert res.refusal.task_id == 2 and res.refusal.blockers[0].task_id == 10
    assert [b.day for b in res.refusal.blocks] == [1, 6]
    assert _unchanged(s, snap)
    ScheduleState.from_json(s.to_json())
    assert relocate(s, [Request(2, 9, 1, 6)], op=op, placed_only=True).ok
    assert s.task(2).embed_host is None
    self_check(s)
    assert ScheduleState.from_json(s.to_json()).to_json() == s.to_json()


def test_a_moving_host_takes_no_multi_block_guest(spec_tools_window):
    """Tests that a block of a multi-block task cannot follow a water course that moves in the
    same batch into its new place either (the host's new block is a host block too)."""
    s = spec_tools_window
    snap = _snapshot(s)
    res = batch_move(s, [Request(10, 9, 1), Request(2, 9, 1, 6)])
    assert not res.ok and res.refusal.kind == "multi_block_guest"
    assert _unchanged(s, snap)


# ---------------------------------------------------------------------------------- issue 44 item 8
def _two_block_host_window() -> ScheduleState:
    """The spec's tool window with [10]思政 meeting twice (day 7 and day 11, periods 1-2) and
    [7] placed on day 5 periods 1-2."""
    from tests.helpers.windows import load_window

    data = load_window("spec_tools_window").to_dict()
    host = next(t for t in data["tasks"] if t["state_id"] == 10)
    host["slots"].append({"day": 11, "slot_start": 1, "slot_end": 2})
    s = ScheduleState.from_json(data)
    assert place(s, 7, 5, 1).ok
    return s


@pytest.mark.parametrize("host_first", [True, False])
def test_a_guest_follows_its_host_in_either_order(spec_tools_window, host_first):
    """Tests issue 44 item 8: [7] embedded in [10]思政, then batch_move [7 → day 9 period 1,
    10 → day 9 period 1] is accepted in either order, [7] embedded in [10] at its new place
    (the batch is simultaneous: a host that moves takes guests at its new place)."""
    s = spec_tools_window
    assert place(s, 7, 7, 1).ok and s.task(7).embed_host == 10
    moves = [Request(7, 9, 1), Request(10, 9, 1)]
    res = batch_move(s, moves[::-1] if host_first else moves)
    assert res.ok, res.refusal
    assert s.task(7).embed_host == 10 and s.task(7).slots[0].day == 9
    assert s.task(10).slots[0].day == 9 and (s.grid.guest[8, 0:2] == 7).all()
    self_check(s)


@pytest.mark.parametrize("host_first", [True, False])
def test_a_guest_fills_an_unmoved_block_of_a_moving_host(host_first):
    """Tests issue 44 item 8: moving one block of a two-block water course while a task moves
    into its other (unmoved) block embeds the task there, whichever move is listed first."""
    s = _two_block_host_window()
    moves = [Request(10, 9, 1, from_day=7), Request(7, 11, 1)]
    res = batch_move(s, moves if host_first else moves[::-1])
    assert res.ok, res.refusal
    assert s.task(7).embed_host == 10 and s.task(7).slots[0].day == 11
    assert sorted(b.day for b in s.task(10).slots) == [9, 11]
    self_check(s)


@pytest.mark.parametrize("host_first", [True, False])
def test_a_conflict_with_an_unmoved_block_does_not_blame_the_new_place(host_first):
    """Tests issue 44 item 8: a range only partly inside the unmoved block of a moving host is
    a conflict with that block, not with the host's new place (``moving`` is False)."""
    s = _two_block_host_window()
    snap = _snapshot(s)
    moves = [Request(10, 9, 1, from_day=7), Request(7, 11, 2)]
    res = batch_move(s, moves if host_first else moves[::-1])
    assert not res.ok and res.refusal.kind == "conflict"
    (blocker,) = res.refusal.blockers
    assert (blocker.task_id, blocker.slot_start, blocker.moving) == (10, 2, False)
    assert _unchanged(s, snap)


def test_a_conflict_with_a_new_place_says_so(spec_tools_window):
    """Tests that a blocker standing at its new place (it moves in the same batch) is flagged
    ``moving``, in either order of the requests."""
    for moves in ([Request(6, 9, 5), Request(4, 9, 6)], [Request(4, 9, 6), Request(6, 9, 5)]):
        res = batch_move(spec_tools_window, moves)
        assert res.refusal.kind == "conflict" and res.refusal.blockers[0].moving


# ---------------------------------------------------------------------------------- existing as facts
@pytest.mark.parametrize(
    ("op", "args"),
    [
        (move, (6, 5, 1)),
        (batch_move, ([Request(6, 5, 1)],)),
        (swap, (6, 4)),
        (unplace, (6,)),
    ],
)
def test_existing_fixed_refuses_moving_an_existing_task(spec_tools_window, op, args):
    """Tests issue 42 item 5: with existing entries kept as facts, every write that would move
    an existing task ([6]线代) is refused and changes nothing; without it the write applies."""
    s = spec_tools_window
    snap = _snapshot(s)
    res = op(s, *args, existing_fixed=True)
    assert not res.ok and res.refusal.kind == "existing_fixed" and res.refusal.task_id == 6
    assert _unchanged(s, snap)
    assert op(s, *args).ok


def test_existing_fixed_still_moves_suggested_and_places_pending(spec_tools_window):
    """Tests that under existing_fixed a pending task is placed and a suggested one moves."""
    s = spec_tools_window
    assert place(s, 9, 5, 1).ok
    assert move(s, 9, 5, 3, existing_fixed=True).ok
    assert batch_move(s, [Request(9, 9, 5)], existing_fixed=True).ok
    assert unplace(s, 9, existing_fixed=True).ok

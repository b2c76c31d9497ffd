"""Tests that every destination query_available_slots offers keeps every class rule (issue 42):
each one, applied by the write it stands for, is accepted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine.analyzers.destinations import movable, rank_destinations
from smartflow_engine.state import Request, ScheduleState, relocate
from smartflow_engine.state.strategies import windows


@settings(deadline=None, max_examples=30)
@given(data=st.data(), state=windows(7, 14, embeddable=0.35, upstream=True, movable_courses=0.2))
def test_every_destination_is_a_legal_write(data, state):
    """Tests that each destination ranked for a movable task (pending or placed) is accepted
    by place/move on a copy of the state: inside its class's days and weekdays, off its banned
    half-day blocks, into a water course only when its class permits, and in its items' order."""
    tasks = [t for t in state.tasks if movable(state, t)]
    if not tasks:
        return
    task = data.draw(st.sampled_from(tasks))
    ranking = rank_destinations(state, task.state_id, budget=400)
    for dest in ranking.destinations:
        copy_ = ScheduleState.from_json(state.to_dict())
        request = Request(task.state_id, dest.day, dest.slot_start, dest.from_day)
        result = relocate(copy_, [request], op="probe", refuse_no_change=True)
        assert result.ok, (dest, result.refusal)
        assert copy_.task(task.state_id).embed_host == dest.embed_host  # type: ignore[union-attr]

"""The escalation's batch search (issue 26 item 4, follow-up): the repair from several seeds, the
best helping batch, and the batch remembered per schedule.

The data file holds three plateaus the scripted agent reached on the post-edit windows of
``benchmarks/bench_loop.py`` (``run_post_edit``) with the first version of the escalation (the
repair from seed 0 with at most 6, then 20 moves):

- ``stalled`` (seed 8, 0 critical / 2 warning): no action fixable, the floor (0, 0), and the first
  version found no batch (the agent stopped there, above the pre-edit 0/1);
- ``far`` (seed 12 after four single moves, 5 / 8): the first version's batch took one critical
  issue away per round, and the 10 rounds ran out at 2 / 13 (pre-edit 0 / 17);
- ``none`` (seed 12's end, 2 / 13): no seed's repair finds a helping batch.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import smartflow_engine.solver as solver
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.analyzers import escalation as esc
from smartflow_engine.analyzers.escalation import (
    INTENT,
    MAX_BATCH_MOVES,
    SEARCH_S,
    SEEDS,
    compound_batch,
    measure,
    rank,
)
from smartflow_engine.evalkit.scripted import key_of
from smartflow_engine.state import Request, ScheduleState

DATA = Path(__file__).resolve().parents[1] / "data" / "escalation_seeds.json"


def _window(name: str) -> ScheduleState:
    return ScheduleState.from_json(json.loads(DATA.read_text(encoding="utf-8"))[name])


@pytest.fixture(autouse=True)
def _fresh() -> None:
    esc._FOUND.clear()


def _count_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seeds of the repair searches run from now on, in order (the real search runs)."""
    calls: list[int] = []
    real = solver.repair_placement

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["seed"])
        return real(*args, **kwargs)

    monkeypatch.setattr(solver, "repair_placement", counted)
    return calls


def _seed_batches(state: ScheduleState) -> list[esc.Batch]:
    """Every seed's repair batch that helps, measured as compound_batch measures it."""
    out = []
    for seed in range(SEEDS):
        p = solver.repair_placement(
            state, max_moves=MAX_BATCH_MOVES, time_limit_s=SEARCH_S, seed=seed
        )
        moves = [Request(pl.task_id, pl.day, pl.slot_start) for pl in p.placements]
        batch = measure(state, moves, "normal") if moves else None
        if batch is not None and batch.helps:
            out.append(batch)
    return out


def test_a_plateau_seed_zero_cannot_cross_gets_a_batch() -> None:
    state = _window("stalled")
    assert key_of(state)[:2] == (0, 2)
    batch = compound_batch(state, "normal")
    assert batch is not None and batch.helps
    assert (batch.critical_after, batch.warning_after) < (0, 2)
    assert len(batch.moves) <= MAX_BATCH_MOVES
    # and analyze_health offers it, first, as the one fixable action
    env = analyze_health(state, time_limit_s=10.0).to_dict()
    first = env["next_actions"][0]
    assert first["intent_code"] == INTENT and first["fixable"] is True
    assert (first["figures"]["critical_after"], first["figures"]["warning_after"]) == (
        batch.critical_after,
        batch.warning_after,
    )


def test_the_best_seed_is_offered_not_the_first() -> None:
    state = _window("far")
    found = _seed_batches(state)
    assert len({(b.critical_after, b.warning_after) for b in found}) > 1  # the seeds differ
    batch = compound_batch(state, "normal")
    assert batch is not None
    assert rank(batch) == min(rank(b) for b in found)
    # the batch reaches much further than one critical issue fewer
    assert batch.critical_after == 0


def test_the_query_returns_the_batch_health_previewed_whatever_its_clock() -> None:
    state = _window("stalled")
    batch = compound_batch(state, "normal")
    assert batch is not None
    # no time left: no search can run, the remembered batch is measured again and returned
    again = compound_batch(state, "normal", deadline=time.perf_counter())
    assert again is not None and again.moves == batch.moves and again.helps


def test_a_remembered_batch_the_write_now_refuses_is_not_returned() -> None:
    state = _window("stalled")
    batch = compound_batch(state, "normal")
    assert batch is not None
    # a stale entry (every move onto the place its task already holds: batch_move refuses it)
    # is measured again and dropped, never returned as it was remembered
    here = [
        Request(r.task_id, t.slots[0].day, t.slots[0].slot_start)
        for r in batch.moves
        if (t := state.task(r.task_id)) is not None
    ]
    esc._FOUND[esc._fingerprint(state, "normal")] = esc.Batch(tuple(here), (), (), -1, 0, 0.0, 0, 0)
    assert compound_batch(state, "normal", deadline=time.perf_counter()) is None


def test_a_full_search_that_found_nothing_is_not_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = _window("none")
    calls = _count_searches(monkeypatch)
    assert compound_batch(state, "normal") is None
    assert calls == list(range(SEEDS))
    assert compound_batch(state, "normal") is None
    assert calls == list(range(SEEDS))  # remembered: no second search
    # a changed schedule is searched afresh
    other = state.copy_state()
    task = next(t for t in other.tasks if t.source != "event" and t.slots)
    free = other.grid.free_runs(task.need())
    from smartflow_engine.state import move

    assert any(move(other, task.state_id, d, s).ok for d, s, *_ in free)
    compound_batch(other, "normal")
    assert len(calls) > SEEDS


def test_a_search_cut_by_the_clock_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _window("none")
    calls = _count_searches(monkeypatch)
    # less than one search's full budget left: whatever ran was cut, so nothing is remembered
    assert compound_batch(state, "normal", deadline=time.perf_counter() + 0.1) is None
    cut = len(calls)
    assert compound_batch(state, "normal") is None
    assert len(calls) == cut + SEEDS


def test_the_session_query_reads_the_batch_health_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from smartflow_engine.analyzers.escalation import ACTION_ID
    from smartflow_engine.tools_adapter import Session

    calls = _count_searches(monkeypatch)
    # (seed 0 already helps there: a health call the clock cuts short still offers a batch)
    s = Session(_window("far"), mode="local_adjust", max_time_limit_s=2.0)
    env = json.loads(s.call("analyze_health", {}))
    first = env["next_actions"][0]
    assert first["intent_code"] == INTENT
    searched = len(calls)
    targets = json.loads(s.call("query_target_tasks", {"action_id": ACTION_ID}))["metrics"]
    assert len(calls) == searched  # no second search
    (batch,) = targets["batches"]
    assert len(batch["moves"]) == first["figures"]["moves"]
    assert (batch["critical_after"], batch["warning_after"]) == (
        first["figures"]["critical_after"],
        first["figures"]["warning_after"],
    )


def test_among_equal_counts_the_batch_moving_fewest_tasks() -> None:
    """On the plateau of test_escalation.py seed 0's batch already reaches (0, 0); a later seed
    reaches it moving fewer tasks, and that one is offered."""
    data = Path(__file__).resolve().parents[1] / "data" / "escalation_plateau.json"
    state = ScheduleState.from_json(json.loads(data.read_text(encoding="utf-8"))["plateau"])
    found = _seed_batches(state)
    at_zero = [b for b in found if (b.critical_after, b.warning_after) == (0, 0)]
    assert len({len(b.moves) for b in at_zero}) > 1
    batch = compound_batch(state, "normal")
    assert batch is not None and (batch.critical_after, batch.warning_after) == (0, 0)
    assert len(batch.moves) == min(len(b.moves) for b in at_zero)

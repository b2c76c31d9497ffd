"""A least-change repair whose write found nothing is not offered again on the same state
(found by rerunning bench_loop's post-edit windows: the agent wrote the same no-op repair three
times in a row, the round counting it as the way forward each time).

The repair's search is deterministic (its work decides, issue 40 item 6), so the session
remembers the state and arguments of an ``apply_proposal`` with ``keep_placed`` that had nothing
to apply, and ``analyze_health`` on that state marks the action ``fixable: false`` with a reason
(and the round is not ``improvable`` by it)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from benchmarks.bench_loop import edited_window
from smartflow_engine.evalkit.scripted import AgentRun, health_loop
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter.core.disruption import CUT_WORDS, NOTHING_TO_APPLY
from smartflow_engine.tools_adapter.sessions.loop_state import (
    SEARCHED_EMPTY,
    LoopState,
    searched_key,
)
from smartflow_engine.tools_adapter.sessions.session import Session


def test_a_repair_that_found_nothing_is_marked_unfixable_on_the_same_state() -> None:
    """Tests, on a window where the scripted loop's repair finds nothing once the single moves
    are spent: the next analyze_health marks the repair ``fixable: false`` (the reason says it
    was tried with these arguments), the round is not improvable by it, and writing it again
    changes nothing in the next request on that state (the mark says what the write does)."""
    _, edited = edited_window(6, 30)
    s = Session(edited, mode="local_adjust", max_time_limit_s=2.0)
    health_loop(s, AgentRun(), max_rounds=10)
    assert s.toolbox.ctx.loop.searched_empty  # (the loop did write a repair that found nothing)
    reply = json.loads(s.call("analyze_health", {}))
    repairs = [a for a in reply["next_actions"] if a["intent_code"] == "least_change_repair"]
    assert repairs and repairs[0]["fixable"] is False
    assert repairs[0]["fixable_reason"] == SEARCHED_EMPTY
    assert not any(a.get("fixable") is True for a in reply["next_actions"])
    assert reply["metrics"]["close_signal"]["improvable"] is False
    s.begin_request()  # (that request closed on no progress; the state is the same)
    args = dict(repairs[0]["figures"]["write_args"], preview=False)
    again = s.invoke("apply_proposal", args)
    assert again.reply.startswith(NOTHING_TO_APPLY) and not again.changes


def test_the_mark_belongs_to_the_state_and_the_arguments_and_survives_a_snapshot() -> None:
    """Tests the remembered key: another placement or other arguments give another key; a cut
    search is not remembered (more time may find something); the session's snapshot keeps
    it."""
    state = synthetic_window(3, 10, variant="tight")
    args = {"keep_placed": True, "max_moves": 20}
    key = searched_key(state, args)
    assert searched_key(state, {**args, "max_moves": 5}) != key
    moved = state.copy_state()
    task = next(t for t in moved.tasks if t.status == "pending")
    task.status = "suggested"
    assert searched_key(moved, args) != key
    loop = LoopState()
    ctx = SimpleNamespace(state=state)
    spec = SimpleNamespace(name="apply_proposal")
    parsed = SimpleNamespace(keep_placed=True, max_moves=20, model_fields_set={"keep_placed"})
    loop._note_search(ctx, spec, parsed, f"{NOTHING_TO_APPLY}\n注意：{CUT_WORDS[0]}。", ())  # type: ignore[arg-type]
    assert loop.searched_empty == ""
    loop._note_search(ctx, spec, parsed, NOTHING_TO_APPLY, ())  # type: ignore[arg-type]
    assert loop.searched_empty == searched_key(state, {"keep_placed": True})
    assert LoopState.from_dict(loop.to_dict()).searched_empty == loop.searched_empty

"""Times the agent loop's tools on saved windows, in a process of its own (issue 25).

``python benchmarks/health_worker.py SPEC.json`` with ``PYTHONPATH`` naming the code to time
(this tree, or a checkout of an older commit): it imports only the public API every version
has (``ScheduleState``, ``Session``), so the same script times today's code and the new one on
the same windows. ``SPEC`` lists window files and repeats; it prints one JSON object: per
window, the median ms of each measured call.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from smartflow_engine import ScheduleState
from smartflow_engine.tools_adapter import Session

DIMENSION_TOOLS = ("analyze_load", "analyze_subjects", "analyze_context", "analyze_tolerance")


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def measure(path: str, repeats: int, skip: list[str]) -> dict[str, Any]:
    state = ScheduleState.from_json(path)
    s = Session(state, mode="first_full", max_time_limit_s=2.0)
    out: dict[str, Any] = {}
    env: dict[str, Any] = {}

    def fresh() -> None:
        """A new user request before each measured block: every call is a round of the request
        and the 60-round cap would otherwise refuse the later blocks (code without requests
        has nothing to reset)."""
        if hasattr(s, "begin_request"):
            s.begin_request("first_full")

    def health() -> None:
        env.update(json.loads(s.call("analyze_health", {})))

    health()  # warm-up (imports, compiled kernels)
    out["analyze_health"] = _median_ms(health, repeats)
    actions = env.get("next_actions") or []
    out["fixable"] = [a.get("fixable") for a in actions]

    def dimensions() -> None:
        for name in DIMENSION_TOOLS:
            s.call(name, {})

    fresh()
    dimensions()
    out["four_dimension_tools"] = _median_ms(dimensions, repeats)
    aid = actions[0]["action_id"] if actions else None
    rows: list[dict[str, Any]] = []
    if aid is not None and "query_target_tasks" not in skip:

        def targets() -> None:
            rows[:] = json.loads(s.call("query_target_tasks", {"action_id": aid}))["metrics"].get(
                "tasks", []
            )

        fresh()
        out["query_target_tasks"] = _median_ms(targets, repeats)
    if rows and "query_available_slots" not in skip:
        args = {"task_id": rows[0]["task_id"], "action_id": aid}
        fresh()
        out["query_available_slots"] = _median_ms(
            lambda: s.call("query_available_slots", args), repeats
        )
    # a write with its evidence line: a movable single-block task moved to a free run it may
    # take (its class's days and bans allow it: the first such run is found by trying) and back
    state = s.state
    assert state is not None
    fresh()
    pair = _a_move_and_back(s, state, fresh)
    if pair is not None:

        def write() -> None:
            for args in pair:
                reply = s.call("move", args)
                if not reply.startswith("已将"):  # a refusal is not the write timed here
                    raise RuntimeError(f"move refused: {reply[:200]}")

        fresh()
        write()
        out["write_with_evidence"] = _median_ms(write, repeats) / 2
        # analyze_health as the loop meets it: right after a write (the task moved there or
        # back, untimed), so nothing it remembers from a call on the same state helps; the four
        # dimension tools timed the same way, interleaved with it (two moves each in turn), so
        # both sides of the ratio see the same states under the same load
        timed: dict[str, list[float]] = {"health": [], "dimensions": []}
        for i in range(2 * max(repeats, 2)):
            fresh()
            if not s.call("move", pair[i % 2]).startswith("已将"):
                raise RuntimeError("move refused before the timed call")
            which = "health" if (i // 2) % 2 == 0 else "dimensions"
            t0 = time.perf_counter()
            health() if which == "health" else dimensions()
            timed[which].append(time.perf_counter() - t0)
        out["analyze_health_after_write"] = statistics.median(timed["health"]) * 1000
        out["four_dimension_tools_after_write"] = statistics.median(timed["dimensions"]) * 1000
    return out


def _a_move_and_back(
    s: Session, state: ScheduleState, fresh: Callable[[], None]
) -> tuple[dict[str, int], ...] | None:
    """``(there, back)``: two places the first movable single-block task may be moved to,
    the task left on ``back``; None when no task has two."""
    for task in state.tasks:
        if (
            task.source == "event"
            or task.status == "pending"
            or task.locked
            or len(task.slots) != 1
            or task.embed_host is not None
            or any(o.embed_host == task.state_id for o in state.tasks)
        ):
            continue
        home = task.slots[0]
        # Two places the task may take (its home may itself break a rule a move checks, e.g. a
        # disturbed task outside its class's days): found by moving there, the task left on
        # the second; the timed pair then moves it to the first and back.
        found: list[dict[str, int]] = []
        for day, start, _ in state.grid.free_runs(home.length)[:200]:
            if day == home.day or any(f["new_day"] == day for f in found):
                continue
            go = {"task_id": task.state_id, "new_day": day, "new_slot_start": start}
            fresh()  # the tries are rounds too
            if s.call("move", go).startswith("已将"):
                found.append(go)
                if len(found) == 2:
                    return found[0], found[1]
    return None


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    result = {
        w["name"]: measure(w["path"], w["repeats"], w.get("skip", [])) for w in spec["windows"]
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

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

    def health() -> None:
        env.update(json.loads(s.call("analyze_health", {})))

    health()  # warm-up (imports, compiled kernels)
    out["analyze_health"] = _median_ms(health, repeats)
    actions = env.get("next_actions") or []
    out["fixable"] = [a.get("fixable") for a in actions]

    def dimensions() -> None:
        for name in DIMENSION_TOOLS:
            s.call(name, {})

    dimensions()
    out["four_dimension_tools"] = _median_ms(dimensions, repeats)
    aid = actions[0]["action_id"] if actions else None
    rows: list[dict[str, Any]] = []
    if aid is not None and "query_target_tasks" not in skip:

        def targets() -> None:
            rows[:] = json.loads(s.call("query_target_tasks", {"action_id": aid}))["metrics"].get(
                "tasks", []
            )

        out["query_target_tasks"] = _median_ms(targets, repeats)
    if rows and "query_available_slots" not in skip:
        args = {"task_id": rows[0]["task_id"], "action_id": aid}
        out["query_available_slots"] = _median_ms(
            lambda: s.call("query_available_slots", args), repeats
        )
    # a write with its evidence line: a movable single-block task moved to a free run and back
    state = s.state
    assert state is not None
    task = next(
        (
            t
            for t in state.tasks
            if t.source != "event"
            and t.status != "pending"
            and not t.locked
            and len(t.slots) == 1
            and t.embed_host is None
            and not any(o.embed_host == t.state_id for o in state.tasks)
        ),
        None,
    )
    if task is not None:
        home = task.slots[0]
        runs = state.grid.free_runs(home.length)
        there = next(((d, a) for d, a, _ in runs if d != home.day), None)
        if there is not None:
            go = {"task_id": task.state_id, "new_day": there[0], "new_slot_start": there[1]}
            back = {
                "task_id": task.state_id,
                "new_day": home.day,
                "new_slot_start": home.slot_start,
            }

            def write() -> None:
                s.call("move", go)
                s.call("move", back)

            write()
            out["write_with_evidence"] = _median_ms(write, repeats) / 2
    return out


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    result = {
        w["name"]: measure(w["path"], w["repeats"], w.get("skip", [])) for w in spec["windows"]
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

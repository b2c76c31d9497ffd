"""The execute loop measured as a tools-only agent sees it (issue 11).

Each window is a seeded synthetic window (13, 30, 60 days, with task classes) on which the rough
placement proposal is applied; a simulated student then disturbs it by moving 3-6 study tasks onto
the busiest days (legal moves only). Two methods start from the same disturbed state:

- **agent**: a deterministic agent that only calls tools through a :class:`Session` and reads the
  replies: ``analyze_health`` → the first action not marked ``fixable: false`` →
  ``query_target_tasks`` → ``query_available_slots`` → the write with ``action_id`` →
  ``analyze_health`` … until ``close_signal.should_close``; on ``no_progress`` / ``round_cap`` it
  calls ``restore_best`` when the last round was not the best. On an infeasible window it records
  ``accept_risk`` with ``resolve_negotiation`` (the user's stand-in).
- **hill climb** (reference): direct state access; each step tries every legal destination of
  every movable task named by a critical/warning issue (its day or its subject; at most
  ``CLIMB_BUDGET`` destinations per task) and applies the single move with the best (critical,
  warning, impact); stops at the close rule, at a step without improvement, or after 60 steps.

Reported: closed share (close rule met), rounds to close (median / p90), actionable share (actions
whose two reads led to a write), refused writes, writes that created a new critical/warning issue,
A→B→A oscillations, and the hill climb's closed share and steps.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from smartflow_engine.analyzers.destinations import (
    health_result,
    movable,
    rank_destinations,
)
from smartflow_engine.evalkit.scripted import AgentRun, closes, finish_run, health_loop, key_of
from smartflow_engine.solver import propose_placement
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
from smartflow_engine.state import Request, ScheduleState, move, relocate
from smartflow_engine.state.synthetic import synthetic_window
from smartflow_engine.tools_adapter import Session

SIZES = (13, 30, 60)
MAX_ROUNDS = 60
CLIMB_BUDGET = 150  # destinations the hill climb measures per task and step
SEEDS = {13: range(6), 30: range(6), 60: range(3)}
WALL_LIMIT_S = 120.0  # the proposals' safety net; their deterministic work budget decides


@dataclass
class ClimbRun:
    closed: bool = False
    steps: int = 0
    seconds: float = 0.0


# ---------------------------------------------------------------------------------- windows
def disturbed_window(
    seed: int, num_days: int, time_limit_s: float, slots_per_day: int = 12
) -> ScheduleState:
    """The proposal applied, then 3-6 study tasks moved onto the busiest days they fit on."""
    state = _proposal_applied(seed, num_days, time_limit_s, slots_per_day)
    rng = np.random.default_rng(seed + 1000 * num_days)
    _move_onto_busiest(state, rng, int(rng.integers(3, 7)))
    return state


def _proposal_applied(
    seed: int, num_days: int, time_limit_s: float, slots_per_day: int = 12
) -> ScheduleState:
    """The seeded window with task classes, its proposal applied (tasks suggested)."""
    state = synthetic_window(seed, num_days, with_task_classes=True, slots_per_day=slots_per_day)
    # The deterministic work budget of a ``time_limit_s`` proposal under a wall limit a loaded
    # machine does not reach: the same seed gives the same window under any load.
    proposal = propose_placement(
        state,
        time_limit_s=WALL_LIMIT_S,
        seed=0,
        work_limit_s=DEFAULT_CALIBRATION.work_share * time_limit_s,
    )
    assert not proposal.wall_limited, "the proposal hit the wall limit: the window would vary"
    requests = [Request(p.task_id, p.day, p.slot_start) for p in proposal.placements]
    result = relocate(state, requests, op="apply_proposal", status_after="suggested")
    assert result.ok, result.refusal
    return state


def _move_onto_busiest(state: ScheduleState, rng: np.random.Generator, k: int) -> None:
    """Move ``k`` placed study tasks (a shuffled order drawn from ``rng``) each onto the busiest
    day it fits on (among the busiest quarter of the days, at least three)."""
    candidates = [t for t in state.tasks if movable(state, t) and t.status != "pending"]
    rng.shuffle(candidates)  # type: ignore[arg-type]
    moved = 0
    for task in candidates:
        if moved >= k:
            break
        load = state.grid.day_load()
        for day in np.argsort(-load, kind="stable")[: max(3, state.num_days // 4)].tolist():
            runs = state.grid.free_runs(task.need(), day + 1)
            if task.slots[0].day == day + 1 or not runs:
                continue
            if move(state, task.state_id, day + 1, runs[0][1]).ok:
                moved += 1
                break


# ---------------------------------------------------------------------------------- agent
def run_agent(state: ScheduleState, mode: str = "first_full", frozen_days: int = 0) -> AgentRun:
    """The tools-only agent (one implementation with the eval kit's ``scripted`` policy)."""
    run = AgentRun()
    started = time.perf_counter()
    s = Session(state, mode=mode, max_time_limit_s=2.0, frozen_days=frozen_days)
    health_loop(s, run, max_rounds=MAX_ROUNDS)
    assert s.state is not None
    finish_run(s, s.state, run)
    run.seconds = time.perf_counter() - started
    return run


# ---------------------------------------------------------------------------------- hill climb
def issue_tasks(state: ScheduleState) -> list[int]:
    issues = [i for i in health_result(state).issues if i.severity != "info"]
    days = {i.day for i in issues if i.day is not None}
    cats = {i.category for i in issues if i.category is not None}
    return [
        t.state_id
        for t in state.tasks
        if movable(state, t) and (any(b.day in days for b in t.slots) or t.category in cats)
    ]


def run_climb(state: ScheduleState) -> ClimbRun:
    run = ClimbRun()
    started = time.perf_counter()
    key = key_of(state)
    while not closes(key) and run.steps < MAX_ROUNDS:
        work = state.copy_state()
        best: tuple[tuple[int, int, float], int, int, int, int | None] | None = None
        for tid in issue_tasks(state):
            ranking = rank_destinations(state, tid, budget=CLIMB_BUDGET, work=work)
            for d in ranking.destinations:
                cand = (key[0] + d.critical_delta, key[1] + d.warning_delta, d.impact_after)
                if cand < key and (best is None or cand < best[0]):
                    best = (cand, tid, d.day, d.slot_start, d.from_day)
        if best is None:
            break
        _, tid, day, start, from_day = best
        relocate(state, [Request(tid, day, start, from_day)], op="climb")
        key = key_of(state)
        run.steps += 1
    run.closed = closes(key)
    run.seconds = time.perf_counter() - started
    return run


# ---------------------------------------------------------------------------------- negotiation
def run_negotiation(seeds: range, num_days: int = 30) -> str:
    """Tight windows as they come (pending work 85-105% of the free periods): the round in which
    an infeasible window reaches the negotiation, whether a probing write before the user's
    choice was refused, and whether anything was written before it."""
    infeasible = reached_r1 = probes_refused = wrote_before = 0
    for seed in seeds:
        state = synthetic_window(seed, num_days, variant="tight", with_task_classes=True)
        s = Session(state, max_time_limit_s=2.0)
        env = json.loads(s.call("analyze_health", {}))
        if (env.get("feasibility") or {}).get("is_feasible") is not False:
            continue
        infeasible += 1
        reached_r1 += env["metrics"]["close_signal"]["round"] == 1 and any(
            a["intent_code"] == "ask_expand_window" for a in env["next_actions"]
        )
        pending = s.state.pending_tasks()[0]
        free = s.state.grid.free_runs(pending.need())
        if free:
            probe = s.invoke(
                "place", {"task_id": pending.state_id, "day": free[0][0], "slot_start": free[0][1]}
            )
            probes_refused += probe.error_code == "negotiation_required"
        else:
            probes_refused += 1
        wrote_before += bool(s.changes)
        s.call("resolve_negotiation", {"choice": "accept_risk"})
    return (
        f"Infeasible-window check ({num_days}-day tight windows, seeds {seeds.start}-"
        f"{seeds.stop - 1}): {infeasible} proven infeasible; negotiation reached in round 1: "
        f"{reached_r1}/{infeasible}; probing place before the choice refused: "
        f"{probes_refused}/{infeasible}; windows with a write before resolve_negotiation: "
        f"{wrote_before}.\n"
    )


# ---------------------------------------------------------------------------------- post-edit
EDIT_TASKS = 4
EDIT_ROUNDS = 10


def edited_window(
    seed: int, num_days: int = 30, time_limit_s: float = 2.0
) -> tuple[ScheduleState, ScheduleState]:
    """(pre-edit, post-edit): the proposal applied, then a student's edit moving
    ``EDIT_TASKS`` study tasks onto the busiest days they fit on (issue 26 item 4)."""
    state = _proposal_applied(seed, num_days, time_limit_s)
    pre = state.copy_state()
    _move_onto_busiest(state, np.random.default_rng(seed + 7000), EDIT_TASKS)
    return pre, state


def run_post_edit(seeds: range, num_days: int = 30) -> str:
    """After a student's edit (issue 26 item 4): the tools-only agent in local_adjust, at most
    ``EDIT_ROUNDS`` health rounds; a window counts when the agent ends at or below the pre-edit
    health, ``analyze_health``'s counts (critical, warning) compared lexicographically (the
    issue's measure, see docs/decisions.md), and, stricter, at or below the loop's key (critical,
    warning, total impact)."""
    rows = []
    at_key = at_counts = batches = rounds_used = 0
    for seed in seeds:
        pre, post = edited_window(seed, num_days)
        before, edited = key_of(pre), key_of(post)
        run = AgentRun()
        s = Session(post, mode="local_adjust", max_time_limit_s=2.0)
        health_loop(s, run, max_rounds=EDIT_ROUNDS)
        assert s.state is not None
        end = key_of(s.state)
        at_key += end <= before
        at_counts += end[:2] <= before[:2]
        batches += run.batches
        rounds_used = max(rounds_used, run.rounds)
        rows.append(
            f"| {seed} | {before[0]}/{before[1]}/{before[2]} | {edited[0]}/{edited[1]}/{edited[2]} | "
            f"{end[0]}/{end[1]}/{end[2]} | {'yes' if end[:2] <= before[:2] else 'no'} | "
            f"{'yes' if end <= before else 'no'} | "
            f"{run.close_reason} | {run.rounds} | {run.batches} | {run.refused} |"
        )
        print(f"  post-edit seed {seed}: {before} -> {edited} -> {end}", file=sys.stderr)
    n = len(rows)
    head = [
        f"After a student's edit ({num_days}-day windows, seeds {seeds.start}-{seeds.stop - 1}, "
        f"the proposal applied, then {EDIT_TASKS} study tasks moved onto the busiest days; "
        f"local_adjust, at most {EDIT_ROUNDS} health rounds): ends at or below the pre-edit "
        f"health (its counts) {at_counts}/{n} ({_pct(at_counts, n)}), at or below its key "
        f"{at_key}/{n} ({_pct(at_key, n)}); least-change repairs written {batches}; most rounds "
        f"{rounds_used}. Keys are critical/warning/total impact.",
        "",
        "| seed | pre-edit | after the edit | agent's end | at or below pre-edit counts | "
        "at or below pre-edit key | close reason | rounds | repairs | refused |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows)


# ---------------------------------------------------------------------------------- report
def run_no_health(seeds: range, num_days: int = 13) -> str:
    """An agent that never calls analyze_health (issue 27): it moves a study task back and forth
    until the session refuses; every tool call is a round, so it must stop at the cap."""
    stops: list[tuple[int, str]] = []
    for seed in seeds:
        s = Session(disturbed_window(seed, num_days, 2.0), mode="local_adjust")
        task = next(t for t in s.state.tasks if t.source == "task_item" and t.is_placed)
        calls, code = 0, ""
        while calls < 500:
            calls += 1
            s.invoke("list_tasks", {})
            day = 1 + calls % num_days
            args = {"task_id": task.state_id, "new_day": day, "new_slot_start": 1}
            calls += 1
            result = s.invoke("move", args)
            if result.error_code in ("round_cap", "request_closed"):
                code = result.error_code
                break
        stops.append((s.request_info()["rounds"], code))
    capped = sum(1 for _, code in stops if code == "round_cap")
    most = max(r for r, _ in stops)
    return (
        f"Agent without analyze_health ({num_days}-day windows, seeds {seeds.start}-"
        f"{seeds.stop - 1}): stopped by round_cap {capped}/{len(stops)}; most rounds used {most}."
    )


def tasks_moved(before: ScheduleState, after: ScheduleState) -> int:
    """Tasks placed in ``before`` that ``after`` has elsewhere (the disruption figure)."""
    placed = {t.state_id: (t.slots, t.embed_host) for t in before.tasks if t.is_placed}
    return sum(
        1
        for t in after.tasks
        if t.state_id in placed and placed[t.state_id] != (t.slots, t.embed_host)
    )


def run_frozen(seeds: range, num_days: int = 13, frozen: int = 2) -> str:
    """local_adjust with days 1..``frozen`` frozen beside the unfrozen run (issue 28): closes,
    rounds, whether a frozen day's task ever moved, and the disruption (median tasks moved) of
    the agent beside a keep_placed repair (``apply_proposal`` with ``keep_placed``)."""
    from smartflow_engine.state.freeze import frozen_blocks

    out: dict[int, dict[str, list[int]]] = {0: {}, frozen: {}}
    touched = 0
    for seed in seeds:
        base = disturbed_window(seed, num_days, 2.0)
        for k in (0, frozen):
            state = ScheduleState.from_json(base.to_dict())
            run = run_agent(state, mode="local_adjust", frozen_days=k)
            row = out[k]
            row.setdefault("closed", []).append(int(run.closed))
            if run.closed:
                row.setdefault("rounds", []).append(run.rounds)
            row.setdefault("agent_moved", []).append(tasks_moved(base, state))
            if k and frozen_blocks(state, k) != frozen_blocks(base, k):
                touched += 1
            repair = Session(ScheduleState.from_json(base.to_dict()), frozen_days=k)
            repair.invoke("apply_proposal", {"keep_placed": True, "time_limit_s": 2.0})
            assert repair.state is not None
            row.setdefault("repair_moved", []).append(tasks_moved(base, repair.state))
            print(f"  frozen {k} seed {seed}: {run.close_reason} r{run.rounds}", file=sys.stderr)
    lines = [
        f"Frozen days ({num_days}-day windows, seeds {seeds.start}-{seeds.stop - 1}, local_adjust; "
        "moved = placed tasks the run left elsewhere):",
        "",
        "| frozen days | closed | rounds to close (median / p90) | frozen-day tasks moved | "
        "agent moved (median) | keep_placed repair moved (median) |",
        "|---|---|---|---|---|---|",
    ]
    for k, row in out.items():
        lines.append(
            f"| {f'1-{k}' if k else 'none'} | {sum(row['closed'])}/{len(row['closed'])} | "
            f"{_q(row.get('rounds', []), 0.5)} / {_q(row.get('rounds', []), 0.9)} | "
            f"{touched if k else '–'} | {_q(row['agent_moved'], 0.5)} | "
            f"{_q(row['repair_moved'], 0.5)} |"
        )
    return "\n".join(lines)


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "–"


def _q(values: list[int], q: float) -> str:
    if not values:
        return "–"
    return f"{float(np.quantile(values, q)):.0f}"


def run(quick: bool = False) -> str:
    time_limit = 1.0 if quick else 2.0
    rows = []
    for num_days in SIZES:
        if quick and num_days == 60:
            continue
        seeds = range(2) if quick else SEEDS[num_days]
        agents, climbs = [], []
        for seed in seeds:
            base = disturbed_window(seed, num_days, time_limit)
            agents.append(run_agent(ScheduleState.from_json(base.to_dict())))
            climbs.append(run_climb(ScheduleState.from_json(base.to_dict())))
            print(
                f"  {num_days}d seed {seed}: agent {agents[-1].close_reason} "
                f"r{agents[-1].rounds} ({agents[-1].seconds:.1f}s), climb "
                f"{climbs[-1].closed} s{climbs[-1].steps} ({climbs[-1].seconds:.1f}s)",
                file=sys.stderr,
            )
        n = len(agents)
        seen = sum(a.actions_seen for a in agents)
        closed_rounds = [a.rounds for a in agents if a.closed and a.close_reason == "rules_met"]
        climb_closed = [i for i, c in enumerate(climbs) if c.closed]
        both = sum(1 for i in climb_closed if agents[i].closed)
        rows.append(
            f"| {num_days} | {n} | {_pct(sum(a.closed for a in agents), n)} | "
            f"{_pct(len(climb_closed), n)} | {both}/{len(climb_closed)} | "
            f"{_q(closed_rounds, 0.5)} / {_q(closed_rounds, 0.9)} | "
            f"{_pct(sum(a.actions_actionable + a.actions_unfixable for a in agents), seen)} "
            f"({sum(a.actions_actionable for a in agents)} + "
            f"{sum(a.actions_unfixable for a in agents)} of {seen}) | "
            f"{sum(a.fixable_unfound for a in agents)} / {sum(a.unfixable_found for a in agents)} | "
            f"{sum(a.trades for a in agents)} | "
            f"{sum(a.writes for a in agents)} | {sum(a.refused for a in agents)} | "
            f"{sum(a.created_issues for a in agents)} | {sum(a.oscillations for a in agents)} | "
            f"{statistics.median(c.steps for c in climbs):.0f} | "
            f"{statistics.median(a.seconds for a in agents):.1f} / "
            f"{statistics.median(c.seconds for c in climbs):.1f} |"
        )
    header = [
        "## The execute loop (tools-only agent vs single-move hill climb)",
        "",
        f"{'Quick' if quick else 'Full'} run; seeds per size "
        f"{ {n: len(r) for n, r in SEEDS.items()} if not quick else 2 }; windows with task classes, the "
        "proposal applied, then 3-6 study tasks moved onto the busiest days. Closed = the close "
        "rule holds when the agent stops (rules_met, or the analyzers' best_achievable). An action "
        "is actionable when its two reads (query_target_tasks → query_available_slots) lead to a "
        "destination with helps=true, or it carries fixable=false with a reason and the reads find "
        "none either. Shared 2-core machine, load average "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min) at the end: times are "
        "indicative only.",
        "",
        "| days | windows | agent closed | climb closed | agent closes of climb's | "
        "rounds to close (median / p90) | actionable actions (helping destination + honest "
        "fixable:false of seen) | fixable:true without one / fixable:false with one | trades | "
        "writes | refused | writes creating issues | oscillations | climb steps (median) | "
        "seconds agent / climb |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    return (
        "\n".join(header + rows)
        + "\n\n"
        + run_negotiation(range(4) if quick else range(12))
        + "\n\n"
        + run_no_health(range(2) if quick else range(6))
        + "\n\n"
        + run_frozen(range(2) if quick else range(6))
        + "\n\n"
        + run_post_edit(range(4) if quick else range(20))
    )


if __name__ == "__main__":
    if "--post-edit" in sys.argv:
        print(run_post_edit(range(20)))
    else:
        print(run(quick="--quick" in sys.argv))

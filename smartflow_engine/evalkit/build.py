"""Build the public task set: windows, requests, goals, proofs and witnesses (``python -m
smartflow_engine.evalkit.build``; the shipped ``data/tasks.json.gz`` was made this way).

For each candidate window (seeded synthetic windows, most with task classes, 13-120 days):

1. the exact feasibility check (proven, or the window is dropped);
2. infeasible windows become ``negotiate`` tasks: the goal is the student's stated choice
   recorded before any write (the witness is the window itself);
3. feasible ones are planned by the engine with a generous budget (a 5 s proposal applied, or a
   20 s one when that witness proves no goal, then the scripted loop without the 60-call cap):
   the witness. ``analyze_health`` on the witness
   gives the close rule (``closable``) or a proven floor above it that the witness reaches
   (``unclosable``: nothing does better). A window whose witness reaches neither is dropped;
4. a settled witness then carries ``local_edit`` requests: the study tasks of one category on
   one weekday of one week, to be moved to other days of that week (the Chinese text and the
   edit as data); the engine does the edit and repairs around it, and the request is kept when
   that final state still meets the window's health goal (the close rule, or the floor that the
   edited witness reaches). The days before the first day the edit touches are frozen
   (``frozen_days``: the student's settled past), for the engine's run and for the graded one.

The logged calendar requests (issue 43) are built apart, from code (:mod:`.calendar_tasks`);
``--calendar-only`` refreshes just them in a set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ..analyzers import analyze_health
from ..analyzers.destinations import movable
from ..solver import check_feasibility
from ..state import ScheduleState
from ..state.synthetic import Variant, synthetic_window
from ..tools_adapter import Session
from .calendar_tasks import calendar_tasks
from .goals import CallRecord, Outcome, counts, grade
from .policies import ScriptedPolicy
from .runner import BudgetedSession
from .scripted import AgentRun, health_loop
from .tasks import Edit, EvalRequest, EvalTask, Goal, HealthGoal

FEASIBILITY_LIMIT_S = 20.0
WITNESS_LIMIT_S = 5.0
# the first-full witness's proposal limits, tried in turn until one proves a goal (a proposal cut
# by the wall clock differs from one that ran longer; any witness that meets a goal proves it)
WITNESS_LIMITS_S = (WITNESS_LIMIT_S, 20.0)
WITNESS_ROUNDS = 15  # health rounds of the witness loop (the eval holds 60 tool calls)
WEEKDAYS = "一二三四五六日"


@dataclass(frozen=True)
class Candidate:
    days: int
    seed: int
    variant: Variant | Literal["dense"]  # dense: plain, with a fuller weekly timetable
    edits: int = 0  # local edit requests to derive from its witness
    occupancy: float = 0.35  # the generator's share of weekday pairs holding a course
    pending: int | None = None  # pending tasks (default: the generator's, about two a day)
    task_classes: bool = True  # the generator's task classes (day windows, banned periods)

    def window(self) -> ScheduleState:
        variant: Variant = "plain" if self.variant == "dense" else self.variant
        return synthetic_window(
            self.seed,
            self.days,
            variant=variant,
            occupancy=self.occupancy,
            pending=self.pending,
            with_task_classes=self.task_classes,
        )


# The candidates: plain and fragmented windows (they close), dense ones whose courses alone
# overload some days (a proven floor above the close rule that the witness reaches: unclosable;
# fragmented windows' capacity floors proved too loose for that), and tight ones of 13-120 days
# the exact check proves infeasible in seconds. The 30-120-day planned windows were picked from
# a scan of seeds (docs/decisions.md): on 120 days the generator's task classes leave suggested
# tasks outside their class's days (a subject gap no first_full write closes), and the dense
# ones need about 1.5 pending tasks a day (fewer leave subject gaps above the floor). Each
# shipped task is still proven by its own witness when built. Kept modest so a scripted run
# takes minutes.
CANDIDATES: tuple[Candidate, ...] = (
    Candidate(13, 0, "plain", 1),
    Candidate(13, 3, "plain", 1),
    Candidate(13, 1, "fragmented", 1),
    Candidate(13, 5, "dense", 1, occupancy=0.5, pending=13),
    Candidate(13, 3, "dense", 1, occupancy=0.6, pending=13),
    Candidate(13, 2, "tight"),
    Candidate(21, 3, "plain", 1),
    Candidate(21, 0, "plain", 1),
    Candidate(21, 3, "dense", 1, occupancy=0.6, pending=21),
    Candidate(21, 5, "tight"),
    Candidate(30, 3, "plain", 1),
    Candidate(30, 3, "dense", 1, occupancy=0.6, pending=45, task_classes=False),
    Candidate(60, 3, "plain", 1),
    Candidate(60, 11, "dense", 1, occupancy=0.6, pending=90, task_classes=False),
    Candidate(120, 0, "plain", 1, task_classes=False),
    Candidate(120, 11, "dense", 1, occupancy=0.55, pending=180, task_classes=False),
    Candidate(30, 9, "tight"),
    Candidate(60, 3, "tight"),
    Candidate(120, 1, "tight"),
)


def _locked_ids(state: ScheduleState) -> list[int]:
    return [t.state_id for t in state.tasks if state.is_locked(t) and t.is_placed]


def _diff(before: ScheduleState, after: ScheduleState) -> list[dict[str, Any]]:
    """Tasks of ``after`` whose JSON differs from ``before``'s (the witness)."""
    old = {t["state_id"]: t for t in before.to_dict()["tasks"]}
    return [t for t in after.to_dict()["tasks"] if old.get(t["state_id"]) != t]


def _health_goal(state: ScheduleState) -> tuple[HealthGoal | None, dict[str, Any]]:
    """The goal the witness ``state`` proves: the close rule it meets, or the proven floor it
    reaches; ``None`` when it proves neither."""
    sig = analyze_health(state).to_dict()["metrics"]["close_signal"]
    floor = sig["floor"]
    crit, warn = counts(state)
    proof = {"witness": {"critical": crit, "warning": warn}, "floor": floor}
    if crit == 0 and warn <= 1:
        return HealthGoal(rule="close"), proof
    reaches = crit <= floor["critical"] and crit + warn <= floor["critical"] + floor["warning"]
    if floor["proven"] and reaches:
        return HealthGoal(rule="floor", critical=floor["critical"], warning=floor["warning"]), proof
    return None, proof


def _engine_run(
    state: ScheduleState,
    mode: str,
    first: Callable[[Session], None],
    frozen_days: int = 0,
    limit: float = WITNESS_LIMIT_S,
) -> ScheduleState:
    """The engine's own answer: ``first`` (the proposal or the edit), then the scripted loop
    with no call cap and generous solver limits (on the request's frozen days)."""
    s = Session(state, mode=mode, max_time_limit_s=2 * limit, frozen_days=frozen_days)
    first(s)
    health_loop(s, AgentRun(), max_rounds=WITNESS_ROUNDS)
    assert s.state is not None
    return s.state


def _run_budget(limit: float) -> dict[str, Any]:
    """How the witness was made: the proposal's time limit and the loop's health rounds."""
    return {"proposal_s": limit, "health_rounds": WITNESS_ROUNDS, "call_cap": None}


def _check(task: EvalTask) -> None:
    """The witness meets every goal part (the set never ships an unreachable goal)."""
    calls = [CallRecord("resolve_negotiation", {"choice": task.goal.negotiation}, "ok")]
    out = Outcome(task.witness_state(), calls if task.goal.negotiation else [])
    bad = [r for r in grade(task, out) if not r.ok]
    assert not bad, f"{task.id}: witness fails {bad}"


def _first_full(c: Candidate, state: ScheduleState, report: Any) -> EvalTask | None:
    for limit in WITNESS_LIMITS_S:
        task = _first_full_with(c, state, report, limit)
        if task is not None:
            return task
    return None


def _first_full_with(
    c: Candidate, state: ScheduleState, report: Any, limit: float
) -> EvalTask | None:
    def apply(s: Session) -> None:
        s.call("apply_proposal", {"time_limit_s": limit})

    final = _engine_run(state.copy_state(), "first_full", apply, limit=limit)
    health, proof = _health_goal(final)
    if health is None:
        return None
    kind = "closable" if health.rule == "close" else "unclosable"
    task = EvalTask(
        id=f"{c.days}d-{c.variant}-s{c.seed}-first_full",
        kind=kind,
        days=c.days,
        request=EvalRequest(
            type="first_full",
            mode="first_full",
            text=f"帮我把接下来{c.days}天里待安排的学习任务都排进日程，排得均衡一些。",
        ),
        goal=Goal(
            health=health,
            placed_periods=report.feasible_slots,
            locked_ids=_locked_ids(state),
        ),
        proof={"feasibility": _report(report), **proof, "witness_run": _run_budget(limit)},
        state=state.to_dict(),
        witness=_diff(state, final),
    )
    try:
        _check(task)
    except AssertionError:
        return None  # e.g. the proposal left pending periods the exact check can place
    return task


def _report(report: Any) -> dict[str, Any]:
    return {
        "is_feasible": report.is_feasible,
        "proven": report.proven,
        "required_task_slots": report.required_task_slots,
        "feasible_slots": report.feasible_slots,
        "capacity_gap": report.capacity_gap,
        "reason_code": report.reason_code,
    }


def _edit_candidates(state: ScheduleState) -> Iterator[tuple[str, Edit]]:
    """(Chinese text, edit) pairs: the study tasks of one category on one weekday of one week,
    moved to the weekend of that week, or to the day after."""
    by_day: dict[tuple[int, int, str], list[int]] = {}
    mapping = {m.day_index: m for m in state.window.day_mapping}
    for t in state.tasks:
        if not t.is_placed or t.source == "event" or not movable(state, t) or len(t.slots) != 1:
            continue
        m = mapping[t.slots[0].day]
        if m.day_of_week <= 5:
            by_day.setdefault((m.week, m.day_of_week, t.category), []).append(t.state_id)
    weeks: dict[int, dict[int, int]] = {}
    for m in mapping.values():
        weeks.setdefault(m.week, {})[m.day_of_week] = m.day_index
    for i, ((week, dow, cat), ids) in enumerate(sorted(by_day.items())):
        if len(ids) > 2:
            continue
        days = weeks[week]
        name = f"第{week}周周{WEEKDAYS[dow - 1]}"
        if i % 2 == 0 and 6 in days and 7 in days:
            yield (
                f"{name}太满了，把那天的{cat}挪到周末吧。",
                Edit(task_ids=ids, days=[days[6], days[7]]),
            )
        elif dow + 1 in days and dow + 1 <= 5:
            nxt = f"周{WEEKDAYS[dow]}"
            yield f"把{name}的{cat}挪到同一周的{nxt}。", Edit(task_ids=ids, days=[days[dow + 1]])


def _local_edits(c: Candidate, base: EvalTask) -> list[EvalTask]:
    settled = base.witness_state()
    out: list[EvalTask] = []
    tried = 0
    for text, edit in _edit_candidates(settled):
        if len(out) >= c.edits or tried >= 4:
            break
        tried += 1

        def do_edit(s: Session, edit: Edit = edit) -> None:
            ScriptedPolicy.edit(BudgetedSession(s, 10**6), edit.task_ids, edit.days)

        # the days before the edited ones are settled: frozen (the student's "today" is the
        # first day the edit touches)
        ids = set(edit.task_ids)
        touched = [b.day for t in settled.tasks if t.state_id in ids for b in t.slots]
        frozen = min([*touched, *edit.days]) - 1
        if frozen > 0:
            settled_days = "第1天" if frozen == 1 else f"前{frozen}天"
            text += f"{settled_days}的安排已经定了，别动。"
        final = _engine_run(settled.copy_state(), "local_adjust", do_edit, frozen)
        health, proof = _health_goal(final)
        if health is None or health.rule != ("close" if base.kind == "closable" else "floor"):
            continue
        task = EvalTask(
            id=f"{c.days}d-{c.variant}-s{c.seed}-edit{len(out) + 1}",
            kind=base.kind,
            days=c.days,
            request=EvalRequest(
                type="local_edit", mode="local_adjust", text=text, edit=edit, frozen_days=frozen
            ),
            goal=Goal(
                health=health, edit=edit, locked_ids=_locked_ids(settled), frozen_days=frozen
            ),
            proof={**proof, "witness_run": {**_run_budget(WITNESS_LIMIT_S), "proposal_s": None}},
            state=settled.to_dict(),
            witness=_diff(settled, final),
        )
        try:
            _check(task)
        except AssertionError:
            continue
        out.append(task)
    return out


def _negotiate(c: Candidate, state: ScheduleState, report: Any) -> EvalTask:
    task = EvalTask(
        id=f"{c.days}d-{c.variant}-s{c.seed}-negotiate",
        kind="infeasible",
        days=c.days,
        request=EvalRequest(
            type="negotiate",
            mode="first_full",
            text=(
                f"帮我把接下来{c.days}天的待办学习任务都排进去。要是实在排不下，"
                "就接受风险，按现有约束收口，别的先不改。"
            ),
            choice="accept_risk",
        ),
        goal=Goal(negotiation="accept_risk", locked_ids=_locked_ids(state)),
        proof={"feasibility": _report(report)},
        state=state.to_dict(),
        witness=[],
    )
    _check(task)
    return task


def build_tasks(
    candidates: tuple[Candidate, ...] = CANDIDATES,
    on_candidate: Callable[[Candidate, list[EvalTask]], None] | None = None,
) -> list[EvalTask]:
    """The task set from ``candidates`` (see the module docstring)."""
    tasks: list[EvalTask] = []
    for c in candidates:
        state = c.window()
        report = check_feasibility(state, time_limit_s=FEASIBILITY_LIMIT_S, num_workers=1)
        made: list[EvalTask] = []
        if report.proven and report.is_feasible is False:
            made = [_negotiate(c, state, report)]
        elif report.proven and report.is_feasible:
            base = _first_full(c, state, report)
            if base is not None:
                made = [base, *_local_edits(c, base)] if c.edits else [base]
        tasks.extend(made)
        if on_candidate is not None:
            on_candidate(c, made)
    return tasks + calendar_tasks()


def main(argv: list[str] | None = None) -> None:
    """``python -m smartflow_engine.evalkit.build [--out PATH]``: rebuild the shipped set."""
    import argparse
    import time
    from pathlib import Path

    from .tasks import default_path, load_tasks, save_tasks

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", type=Path, default=default_path())
    parser.add_argument(
        "--calendar-only",
        action="store_true",
        help="keep the set's other tasks; rebuild only the logged calendar requests",
    )
    args = parser.parse_args(argv)
    if args.calendar_only:
        kept = [t for t in load_tasks(args.out) if t.kind != "calendar"]
        fresh = calendar_tasks()
        save_tasks(sorted(kept + fresh, key=lambda t: (t.days, t.id)), args.out)
        print(f"{len(fresh)} calendar tasks written to {args.out} ({len(kept)} others kept)")
        return
    started = time.perf_counter()

    def report(c: Candidate, made: list[EvalTask]) -> None:
        names = ", ".join(f"{t.id} ({t.kind})" for t in made) or "dropped"
        print(f"[{time.perf_counter() - started:6.1f}s] {c}: {names}", flush=True)

    tasks: list[EvalTask] = []

    def keep(c: Candidate, made: list[EvalTask]) -> None:
        report(c, made)
        tasks.extend(made)
        save_tasks(
            sorted(tasks, key=lambda t: (t.days, t.id)), args.out
        )  # after each window: a long build can be cut short

    built = build_tasks(on_candidate=keep)  # the windows' tasks, then the calendar requests
    save_tasks(sorted(built, key=lambda t: (t.days, t.id)), args.out)
    print(f"{len(built)} tasks written to {args.out}")


if __name__ == "__main__":
    main()

"""The public task set: windows, requests and goals, as shipped in ``data/tasks.json``.

Each task is a planning window (13-120 days) of one kind, a student's request and a goal on the
final state, all computed and proven by the engine when the set was built (:mod:`.build`):

- ``closable``: the close rule (``critical=0 && warning<=1``) is reachable; the engine's own
  final state (the witness) reaches it.
- ``unclosable``: the proven floor of ``analyze_health`` is above the close rule, and the
  witness reaches the floor, so the floor is the best any schedule can do.
- ``infeasible``: the exact feasibility check proved the pending work does not fit; the right
  outcome is the negotiation (the user's choice recorded before anything is written).

- ``calendar``: a request named by the calendar, as the reference system's agent logged them
  (issue 43: "把所有周末的任务都挪到周一到周五，不要越周移动" …), on an upstream-shaped window (half-day
  bans, banned weekdays, water-course permission, item order); the goal says where the named
  tasks end, what stays put and that every class rule holds, in at most three tool calls.

Requests: ``first_full`` (plan the pending tasks), ``local_edit`` (a student's change written in
Chinese, with the edit it implies as data: these tasks end on these days; some on frozen days,
``frozen_days``, that must hold exactly what they held), ``negotiate`` (an infeasible window,
with the choice the student already stated in the request) and ``calendar`` (the request's text
and, as data, the one-call form it maps to: ``calls``).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..files import write_atomic
from ..state import ScheduleState

Kind = Literal["closable", "unclosable", "infeasible", "calendar"]
KINDS: tuple[Kind, ...] = ("closable", "unclosable", "infeasible", "calendar")
RequestType = Literal["first_full", "local_edit", "negotiate", "calendar"]
MAX_TOOL_CALLS = 60  # tool calls per request (DESIGN: each call of the execute model is a round)
TASKS_FILE = "tasks.json.gz"


class Edit(BaseModel):
    """The machine-checkable edit a local request implies: every block of each task ends on
    one of ``days`` (window day indices)."""

    model_config = ConfigDict(extra="forbid")

    task_ids: list[int] = Field(min_length=1)
    days: list[int] = Field(min_length=1)


class ToolCallSpec(BaseModel):
    """One tool call a request maps to (what a model that understood it would send)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class EvalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: RequestType
    mode: Literal["first_full", "local_adjust"]
    text: str
    edit: Edit | None = None
    # a calendar request's one-call form (issue 43): the proposal arguments that name its tasks
    # and places (the scripted policy reads them as data, as it reads ``edit``)
    calls: list[ToolCallSpec] = Field(default_factory=list)
    # a calendar request that also asks for an even spread ("均匀化"): the days its study tasks
    # are to be spread over (per-day counts within one); the scripted policy checks the
    # replies of ``calls`` and evens them out with scoped proposals (:mod:`.policies`)
    spread_days: list[int] = Field(default_factory=list, exclude_if=lambda days: not days)
    choice: Literal["accept_risk"] | None = None  # the negotiation choice the request states
    # days 1..frozen_days are frozen by the session (``Session(frozen_days=...)``, as an
    # integrator sets it): writes touching them are refused, proposals leave them alone
    frozen_days: int = Field(default=0, ge=0)


class HealthGoal(BaseModel):
    """``close``: ``critical=0 && warning<=1``; ``floor``: at or below the proven floor
    (``critical <= floor.critical`` and ``critical + warning <= floor.critical +
    floor.warning``, as :meth:`HealthFloor.meets`)."""

    model_config = ConfigDict(extra="forbid")

    rule: Literal["close", "floor"]
    critical: int = 0
    warning: int = 1


class Into(BaseModel):
    """Every block of each of ``task_ids`` lies on one of ``days`` (``count``: exactly that many
    of them do, e.g. "随便挪两个到第12周")."""

    model_config = ConfigDict(extra="forbid")

    task_ids: list[int] = Field(min_length=1)
    days: list[int] = Field(min_length=1)
    count: int | None = Field(default=None, ge=0)


class Even(BaseModel):
    """Those of ``task_ids`` on ``days`` spread over them: the per-day counts (each of ``days``,
    zero included) differ by at most ``max_gap``."""

    model_config = ConfigDict(extra="forbid")

    task_ids: list[int] = Field(min_length=1)
    days: list[int] = Field(min_length=1)
    max_gap: int = Field(default=1, ge=0)


class CalendarGoal(BaseModel):
    """A calendar request's outcome (issue 43): where the named tasks end (``into``), the tasks
    that keep their blocks exactly (``unchanged``: "nothing else moved"), the periods no task the
    request moved or placed may use (``avoid_periods``: "不要早八和晚10"), an even spread
    (``even``), and every task-class rule held on the final state (``rules``: the reference
    system's meanings, checked by the kit itself)."""

    model_config = ConfigDict(extra="forbid")

    into: list[Into] = Field(default_factory=list)
    unchanged: list[int] = Field(default_factory=list)
    avoid_periods: list[int] = Field(default_factory=list)
    even: Even | None = None
    rules: bool = True


class Goal(BaseModel):
    """What the final state and the call trace must satisfy; absent parts are not checked."""

    model_config = ConfigDict(extra="forbid")

    health: HealthGoal | None = None
    placed_periods: int | None = None  # pending periods placed at least (proven maximum)
    edit: Edit | None = None
    locked_ids: list[int] = Field(default_factory=list)  # must keep their slots
    frozen_days: int = Field(default=0, ge=0)  # days 1..k keep exactly the blocks they had
    negotiation: Literal["accept_risk"] | None = None
    calendar: CalendarGoal | None = None
    max_tool_calls: int = MAX_TOOL_CALLS


class EvalTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Kind
    days: int
    request: EvalRequest
    goal: Goal
    proof: dict[str, Any]  # feasibility report, floor, the witness's counts
    state: dict[str, Any]  # the window before the request (the spec's §3.1 JSON)
    witness: list[dict[str, Any]]  # tasks whose final form differs from ``state`` (one answer)

    def initial_state(self) -> ScheduleState:
        return ScheduleState.from_json(self.state)

    def witness_state(self) -> ScheduleState:
        """The engine's final state that meets the goal (the proof the goal is reachable)."""
        changed = {t["state_id"]: t for t in self.witness}
        data = dict(self.state)
        data["tasks"] = [changed.get(t["state_id"], t) for t in self.state["tasks"]]
        return ScheduleState.from_json(data)


def default_path() -> Path:
    return Path(str(resources.files("smartflow_engine.evalkit") / "data" / TASKS_FILE))


def save_tasks(tasks: list[EvalTask], path: Path) -> None:
    """Write the set as gzip-compressed JSON (one object: version and tasks)."""
    data = {"version": 1, "tasks": [t.model_dump(mode="json") for t in tasks]}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    # mtime=0: the same set gives the same bytes
    write_atomic(path, gzip.compress(text.encode("utf-8"), mtime=0))


@cache
def _load(path: str) -> tuple[EvalTask, ...]:
    raw = Path(path).read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise ValueError(f"{path}: not a task set (an object with a list of tasks)")
    return tuple(EvalTask.model_validate(t) for t in data["tasks"])


def load_tasks(path: str | Path | None = None, ids: list[str] | None = None) -> list[EvalTask]:
    """The shipped task set (or the one at ``path``), optionally only the tasks ``ids``.

    Raises
    ------
    ValueError
        An id that is not in the set.
    """
    tasks = list(_load(str(path or default_path())))
    if not ids:
        return tasks
    by_id = {t.id: t for t in tasks}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise ValueError(f"unknown task id(s): {', '.join(unknown)}")
    return [by_id[i] for i in ids]

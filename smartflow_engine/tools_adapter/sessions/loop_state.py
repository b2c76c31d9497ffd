"""The agent loop of a session (p1 §4.2.2, P1-E, P1-F): rounds and close rules, the best state,
the infeasible gate, evidence for every write, and the round log.

- **Rounds.** Each successful ``analyze_health`` is a round. Its key is (critical, warning, total
  impact of the critical and warning issues); a round makes progress when its key is strictly
  (lexicographically) smaller than the best key so far, and then its state becomes the best state
  (``restore_best`` returns to it). ``close_signal`` gains ``round``, ``rounds_without_progress``,
  ``should_close`` and ``close_reason``: ``risk_accepted`` (the user accepted an infeasible
  window), ``rules_met`` (critical=0 && warning<=1, P1-E; issue 40 item 8: it closes, and
  ``improvable`` says whether the proven floor lies below and an offered action is ``fixable``
  or names the searching write, for an agent or host that goes on), ``best_achievable`` (the analyzers proved no
  better (critical, warning) exists), ``no_progress`` (3 rounds in a row without progress),
  ``round_cap`` (round 60), or null.
- **The infeasible gate.** Once a round reports ``is_feasible=false`` the placing and probing
  writes are refused, naming the four options, until ``resolve_negotiation`` records the user's
  choice.
- **Evidence.** A write that changed the state gets one Chinese line: the critical/warning issues
  it resolved, made worse and created, and, with ``action_id``, whether the action's
  ``success_criteria`` now hold, all computed by the analyzers.
- **The round log.** Per round: the counts, the actions offered, the action worked on, every write
  with its evidence; kept in the session's snapshot. It is bounded (issue 24 item 8): the last
  :data:`ROUND_LOG_KEEP` rounds are kept whole, older ones are folded into one summary (how many
  rounds and writes, the rounds that made progress, the best of them, first and last round
  numbers), and a round keeps its last :data:`ROUND_WRITES_KEEP` writes whole and counts the
  earlier ones. The best state ``restore_best`` needs is kept apart from the log (one state).
- **Requests (issue 27).** A session works on one user request at a time (``begin_request``).
  Every tool call of the execute model is a call of the current request (``calls``); the
  :data:`ROUND_CAP` counts them and the call beyond it is refused (``round_cap``). Once the
  request is closed (``close_reason`` set; it stays set until the next request) every write is
  refused (``request_closed``) except :data:`AFTER_CLOSE` (saving the plan, returning to the best
  state, writing a task class); reads stay allowed. After the round cap every call is refused.
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import Any, Literal

from ...analyzers.common import number_actions
from ...analyzers.criteria import IssueDiff, check_criteria, diff_issues
from ...analyzers.destinations import health_result
from ...analyzers.health import MAX_ACTIONS, SEARCH_INTENT, search_action
from ...analyzers.result import AnalysisResult, Issue
from ...concepts import is_study
from ...rules import Level, level_or
from ...solver.health_floor import HealthFloor
from ...state import ScheduleState, Task
from ...state.model import tidy_state_dict, tidy_task_dict
from ..core.disruption import CUT_WORDS, NOTHING_TO_APPLY
from ..core.render import gap_words
from ..core.spec import ToolContext, ToolSpec

CloseReason = Literal["rules_met", "best_achievable", "no_progress", "round_cap", "risk_accepted"]
NO_PROGRESS_ROUNDS = 3
ROUND_CAP = 60
# Writes refused while the window is known infeasible and the user has not chosen (P1-F).
GATED: frozenset[str] = frozenset(
    {"place", "move", "swap", "batch_move", "apply_proposal", "spread_even", "min_context_switch"}
)
# Writes that get an evidence line (every write that moves tasks).
EVIDENCE: frozenset[str] = frozenset({*GATED, "unplace", "restore_best"})
NEGOTIATION_INTENTS = (
    "ask_expand_window",
    "ask_relax_constraints",
    "ask_reduce_scope_or_budget",
    "accept_risk_and_close",
)
CHOICES = ("expand_window", "relax_constraints", "reduce_scope", "accept_risk")
# Writes still allowed once a request is closed (not after the round cap): saving the finished
# plan (user-confirmed), returning to the request's best state, and writing a task class (a
# database write the user confirms, which changes no schedule: issue 45).
AFTER_CLOSE: frozenset[str] = frozenset({"commit", "restore_best", "upsert_task_class"})
CLOSE_WORDS = {
    "rules_met": "已满足收口规则（critical=0 且 warning<=1）",
    "best_achievable": "已达到当前约束下可达的最好结果",
    "no_progress": f"连续 {NO_PROGRESS_ROUNDS} 次体检没有改进",
    "round_cap": f"本次请求已用满 {ROUND_CAP} 轮工具调用",
    "risk_accepted": "用户已接受不可行风险并收口",
}
ROUND_LOG_KEEP = 50  # rounds kept whole in the round log; older ones are folded into a summary
ROUND_WRITES_KEEP = 20  # writes kept whole per round; earlier ones of the round are counted


def _ids(values: tuple[str, ...]) -> str:
    return f"{len(values)} 项（{'、'.join(values)}）" if values else "0 项"


def _improvable(signal: dict[str, Any], actions: list[dict[str, Any]]) -> bool:
    """The proven floor lies below the round's (critical, warning) and an offered action is
    ``fixable`` (a write it names makes the health key strictly better) or names the write that
    searches (``least_change_repair``, issue 40 item 7)."""
    floor = signal.get("floor") or {}
    if not floor.get("proven"):
        return False
    crit, warn = int(signal.get("critical", 0)), int(signal.get("warning", 0))
    # the floor's own rule (HealthFloor.meets), not a restatement of it
    at_floor = HealthFloor(int(floor.get("critical", 0)), int(floor.get("warning", 0))).meets(
        crit, warn
    )
    return not at_floor and any(
        a.get("fixable") is True
        or (a.get("intent_code") == SEARCH_INTENT and a.get("fixable") is not False)
        for a in actions
    )


SEARCHED_EMPTY = (
    "在当前日程上已用这些参数调用 apply_proposal 搜索过，没有找到可应用的改动；同样的参数结果相同，"
    "可处理其他动作、改变 max_moves 或 time_limit_s，或收口。"
)


def searched_key(state: ScheduleState, args: dict[str, Any]) -> str:
    """Where every task stands (status, blocks, host) and the repair's ``args``, as one
    digest: a least-change repair's search is a function of the two."""
    digest = hashlib.sha1(repr(sorted(args.items())).encode())
    for t in state.tasks:
        blocks = [(b.day, b.slot_start, b.slot_end) for b in t.slots]
        digest.update(repr((t.state_id, t.status, t.embed_host, blocks)).encode())
    return digest.hexdigest()


def _repair_args(args: Any) -> dict[str, Any]:
    """The arguments of an apply_proposal call (its parsed model, or an action's
    ``write_args``) that decide its search: all that were given but ``preview`` and
    ``action_id``."""
    if not isinstance(args, dict):
        args = {k: getattr(args, k) for k in args.model_fields_set}
    return {k: v for k, v in args.items() if k not in ("preview", "action_id")}


def evidence_line(diff: IssueDiff, action_id: str | None, check: dict[str, Any] | None) -> str:
    """``证据：解决 1 项（…）；加重 0 项；新增 0 项；行动 na_x 的成功判据：已满足（2/2 条）。``"""
    text = f"证据：解决 {_ids(diff.resolved)}；加重 {_ids(diff.worse)}；新增 {_ids(diff.created)}"
    if action_id is not None and check is not None:
        met = check["met"]
        word = "已满足" if met else ("未满足" if met is False else "无法判定")
        text += f"；行动 {action_id} 的成功判据：{word}（{check['held']}/{check['total']} 条成立）"
    return text + "。"


# The task fields a task's snapshot reads besides its blocks (``embedded_by`` is derived from
# the guests, as ``ScheduleState.to_dict`` does).
_TASK_FIELDS = tuple(name for name in Task.model_fields if name not in ("slots", "embedded_by"))
_task_fields = operator.attrgetter(*_TASK_FIELDS)


class StateSnapshots:
    """``ScheduleState.to_dict()`` of a session's state, each task's object rebuilt only when
    something it is made of changed since the previous snapshot: its fields, its blocks, its
    host's lock (a guest of a locked host is written locked) and its guests (``embedded_by``);
    a task has no fields beyond the model's (unknown ones are refused at load). The others'
    objects are reused, so successive best states share them: a best state is never edited
    (``store.py`` compares it by identity). Equal to ``to_dict`` (``tests/tools_adapter/test_loop_snapshots.py``); a round
    that makes progress costs a pass over the tasks' fields, not a serialisation of the state
    (~8x less on 1000 days)."""

    def __init__(self) -> None:
        self._tasks: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> StateSnapshots:
        return StateSnapshots()  # a copy (a preview's loop) starts afresh: nothing is shared

    def take(self, state: ScheduleState) -> dict[str, Any]:
        guests = state.guests_by_host()
        kept: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        tasks: list[dict[str, Any]] = []
        for task in state.tasks:
            sid = task.state_id
            host = state.task(task.embed_host) if task.embed_host is not None else None
            hosted = guests.get(sid)
            slots = task.slots
            if len(slots) == 1:  # most tasks: no generator
                b = slots[0]
                blocks: tuple[Any, ...] = (b.day, b.slot_start, b.slot_end)
            else:
                blocks = tuple([(b.day, b.slot_start, b.slot_end) for b in slots])
            sig = (
                _task_fields(task),
                blocks,
                host is not None and host.locked,
                tuple(hosted) if hosted else None,
            )
            found = self._tasks.get(sid)
            if found is not None and found[0] == sig:
                data = found[1]
            else:
                data = _task_dict(task, sig[2], hosted)
            kept[sid] = (sig, data)
            tasks.append(data)
        self._tasks = kept
        rest = state.model_dump(mode="json", exclude_none=True, exclude={"tasks"})
        tidy_state_dict(rest, bool(state.task_classes))
        out: dict[str, Any] = {}
        for name in (*type(state).model_fields, *rest):  # to_dict's order of keys
            if name == "tasks":
                out["tasks"] = tasks
            elif name in rest:
                out[name] = rest[name]
        return out


def _task_dict(task: Task, host_locked: bool, hosted: list[int] | None) -> dict[str, Any]:
    """One task's object of ``ScheduleState.to_dict``."""
    data = task.model_dump(mode="json", exclude_none=True)
    tidy_task_dict(data, host_locked, list(hosted) if hosted else None)
    return data


@dataclass
class LoopState:
    """What a session remembers of its loop (all of it goes into the snapshot)."""

    round: int = 0
    best_key: tuple[int, int, float] | None = None
    best_round: int = 0
    best_state: dict[str, Any] | None = None
    # The (critical, warning) of the request's first round (issue 40 item 7): a later round
    # worse than it, where no single move helps, is offered the least-change repair.
    start_key: tuple[int, int] | None = None
    rounds_without_progress: int = 0
    gate_open: bool = False
    risk_accepted: bool = False
    negotiation: dict[str, Any] = field(
        default_factory=dict
    )  # figures of the last infeasible round
    level: Level = "normal"
    last_actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[dict[str, Any]] = field(default_factory=list)  # tasks reduce_scope took out
    close_reason: CloseReason | None = None
    # The window-change log: each expand_window / relax_constraints / reduce_scope recorded by
    # resolve_negotiation, with what its choice ``undo`` needs to take it back. Kept apart from
    # the task change log (``ToolContext.changes``), which is per task and goes to the database.
    window_changes: list[dict[str, Any]] = field(default_factory=list)
    # The rounds folded out of ``rounds`` (see :func:`fold_rounds`), or None while none were.
    summary: dict[str, Any] | None = None
    # The current user request: its number, mode and how many tool calls (rounds) it has used.
    request: int = 1
    request_mode: str = ""
    # The host's own id of the current request (e.g. its user-message id), when it gave one:
    # starting a request with the same key again is a no-op (a retried call, every call of one
    # user message carrying it).
    request_key: str = ""
    calls: int = 0
    # The risk was accepted in an earlier request: it still lifts the gate but closes nothing.
    risk_carried: bool = False
    # The state (placement_key) and arguments of the last apply_proposal with keep_placed that
    # found nothing to apply: its search is deterministic, so analyze_health on that state marks
    # the least-change repair with those arguments fixable: false instead of offering it again.
    searched_empty: str = ""
    # Builds the best state's snapshot from what changed since the last one (not persisted).
    snapshots: StateSnapshots = field(default_factory=StateSnapshots, repr=False, compare=False)

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "best_key": list(self.best_key) if self.best_key else None,
            "best_round": self.best_round,
            "best_state": self.best_state,
            "start_key": list(self.start_key) if self.start_key else None,
            "rounds_without_progress": self.rounds_without_progress,
            "gate_open": self.gate_open,
            "risk_accepted": self.risk_accepted,
            "negotiation": self.negotiation,
            "level": self.level,
            "last_actions": self.last_actions,
            "rounds": self.rounds,
            "set_aside": self.set_aside,
            "close_reason": self.close_reason,
            "window_changes": self.window_changes,
            "summary": self.summary,
            "request": self.request,
            "request_mode": self.request_mode,
            "request_key": self.request_key,
            "calls": self.calls,
            "risk_carried": self.risk_carried,
            "searched_empty": self.searched_empty,
        }

    @classmethod
    def from_dict(cls, data: Any) -> LoopState:
        if not isinstance(data, dict):
            raise TypeError("loop must be an object")
        key = data.get("best_key")
        out = cls(
            round=int(data.get("round", 0)),
            best_key=(int(key[0]), int(key[1]), float(key[2])) if key else None,
            best_round=int(data.get("best_round", 0)),
            start_key=(
                (int(data["start_key"][0]), int(data["start_key"][1]))
                if data.get("start_key")
                else None
            ),
            best_state=data.get("best_state"),
            rounds_without_progress=int(data.get("rounds_without_progress", 0)),
            gate_open=bool(data.get("gate_open", False)),
            risk_accepted=bool(data.get("risk_accepted", False)),
            negotiation=dict(data.get("negotiation") or {}),
            level=level_or(data.get("level")),
            last_actions=dict(data.get("last_actions") or {}),
            rounds=list(data.get("rounds") or []),
            set_aside=list(data.get("set_aside") or []),
            close_reason=data.get("close_reason")
            if data.get("close_reason")
            in ("rules_met", "best_achievable", "no_progress", "round_cap", "risk_accepted")
            else None,
            window_changes=list(data.get("window_changes") or []),
            summary=data.get("summary"),
            request=int(data.get("request", 1)),
            request_mode=str(data.get("request_mode", "")),
            request_key=str(data.get("request_key", "")),
            calls=int(data.get("calls", 0)),
            risk_carried=bool(data.get("risk_carried", False)),
            searched_empty=str(data.get("searched_empty", "")),
        )
        if not all(isinstance(w, dict) for w in out.window_changes):
            raise TypeError("window_changes must be a list of objects")
        if not all(isinstance(r, dict) for r in out.rounds):
            raise TypeError("rounds must be a list of objects")
        if out.summary is not None and not isinstance(out.summary, dict):
            raise TypeError("summary must be an object")
        out.trim()  # a snapshot written before the log was bounded
        if out.best_state is not None and not isinstance(out.best_state, dict):
            raise TypeError("best_state must be an object")
        return out

    # ------------------------------------------------------------------ requests
    def begin_request(self, mode: str, key: str = "") -> None:
        """A new user request: its calls count from zero, no close holds, the best state is the
        new request's own. The window's gate and the user's accepted risk stay (the window has
        not changed); an accepted risk no longer closes the new request."""
        self.request += 1
        self.request_mode = mode
        self.request_key = key
        self.calls = 0
        self.close_reason = None
        self.reset_best()
        self.risk_carried = self.risk_accepted

    def request_refusal(self, name: str, is_write: bool) -> tuple[str, str] | None:
        """The refusal ``(error_code, reason)`` of a call the current request no longer takes
        (the caller puts the tool's ``X失败：`` head before the reason)."""
        again = "如需继续，请等待用户提出新的请求（用户再次提问即开始新请求）。"
        if self.calls >= ROUND_CAP or self.close_reason == "round_cap":
            return "round_cap", (
                f"本次请求已用满 {ROUND_CAP} 轮工具调用，不再执行任何工具（{name} 未执行）。"
                f"请向用户汇报当前结果。{again}"
            )
        if self.close_reason is not None and is_write and name not in AFTER_CLOSE:
            why = CLOSE_WORDS.get(self.close_reason, self.close_reason)
            return "request_closed", (
                f"本次请求已收口（{self.close_reason}：{why}），不再修改日程（{name} 未执行）；"
                f"仍可查询，可用 restore_best 回到最好状态、commit 保存、upsert_task_class 写任务类。{again}"
            )
        return None

    def count_call(self) -> None:
        """One tool call of the current request (a round); the last allowed one closes it."""
        self.calls += 1
        if self.calls >= ROUND_CAP and self.close_reason is None:
            self.close_reason = "round_cap"

    # ------------------------------------------------------------------ pipeline hooks
    def before(self, ctx: ToolContext, spec: ToolSpec, parsed: Any) -> tuple[str, str] | None:
        """A refusal ``(error_code, message)`` decided before the handler, if any."""
        if spec.name in GATED and self.gate_open:
            return "negotiation_required", self.gate_text()
        action_id = getattr(parsed, "action_id", None)
        if action_id is not None and action_id not in self.last_actions:
            offered = "、".join(self.last_actions) or "无（请先调用 analyze_health）"
            return "invalid_args", (
                f"action_id {action_id} 不是最近一次 analyze_health 给出的动作（可用：{offered}）。"
            )
        return None

    def issues_before(self, ctx: ToolContext, spec: ToolSpec) -> list[Issue] | None:
        if spec.name not in EVIDENCE or ctx.state is None:
            return None
        return health_result(ctx.state, self.level).issues

    def after(
        self,
        ctx: ToolContext,
        spec: ToolSpec,
        parsed: Any,
        reply: str,
        applied: tuple[Any, ...],
        before: list[Issue] | None,
    ) -> str:
        self._note_search(ctx, spec, parsed, reply, applied)
        if not spec.is_write or not applied or ctx.state is None:
            return reply
        action_id = getattr(parsed, "action_id", None)
        entry: dict[str, Any] = {"tool": spec.name, "action_id": action_id, "changes": len(applied)}
        if before is not None:
            after = health_result(ctx.state, self.level)
            diff = diff_issues(before, after.issues)
            check = None
            if action_id is not None:
                criteria = self.last_actions[action_id].get("success_criteria") or {}
                check = check_criteria(after.to_dict(), criteria).to_dict()
            entry.update(diff.to_dict(), criteria=check)
            reply = f"{reply}\n{evidence_line(diff, action_id, check)}"
        self.log_write(entry)
        return reply

    def _note_search(
        self, ctx: ToolContext, spec: ToolSpec, parsed: Any, reply: str, applied: tuple[Any, ...]
    ) -> None:
        """Remember a least-change repair (apply_proposal with keep_placed) that found nothing
        to apply, unless the clock cut its search (more time may find something)."""
        if spec.name != "apply_proposal" or applied or ctx.state is None:
            return
        if getattr(parsed, "keep_placed", False) and reply.startswith(NOTHING_TO_APPLY):
            cut = any(words in reply for words in CUT_WORDS)
            self.searched_empty = "" if cut else searched_key(ctx.state, _repair_args(parsed))

    # ------------------------------------------------------------------ rounds
    def current_round(self) -> dict[str, Any]:
        if not self.rounds:
            self.rounds.append({"round": 0, "writes": [], "worked_on": None})
        return self.rounds[-1]

    def log_write(self, entry: dict[str, Any]) -> None:
        current = self.current_round()
        current["writes"].append(entry)
        _trim_writes(current)
        if current.get("worked_on") is None and entry.get("action_id"):
            act = self.last_actions.get(entry["action_id"], {})
            current["worked_on"] = {
                "action_id": entry["action_id"],
                "intent_code": act.get("intent_code"),
                "issue_ids": act.get("issue_ids", []),
            }

    def mark(self) -> tuple[int, int]:
        """Where the round log ends now (see :meth:`stamp`)."""
        return len(self.rounds), len(self.rounds[-1]["writes"]) if self.rounds else 0

    def stamp(self, mark: tuple[int, int], **fields: Any) -> None:
        """Add ``fields`` (e.g. the session's mode) to the rounds and writes logged since
        ``mark``."""
        rounds, writes = mark
        if rounds:
            for entry in self.rounds[rounds - 1]["writes"][writes:]:
                entry.update(fields)
        for entry in self.rounds[rounds:]:
            entry.update(fields)
            for write in entry["writes"]:
                write.update(fields)

    def reset_best(self) -> None:
        """The window itself changed: earlier states are no longer comparable."""
        self.best_key, self.best_state, self.best_round = None, None, 0
        self.start_key = None
        self.rounds_without_progress = 0

    def on_health(self, ctx: ToolContext, parsed: Any, result: AnalysisResult) -> None:
        """A round (issue 40 item 8: the tool hands over its :class:`AnalysisResult`, edited in
        place before it is rendered once, no JSON round trip): the round's key and progress,
        the gate, the actions offered, and the session's fields of ``close_signal``."""
        if not result.success or ctx.state is None:
            return
        signal = result.metrics.setdefault("close_signal", {})
        severe = [i for i in result.issues if i.severity in ("critical", "warning")]
        critical = sum(1 for i in severe if i.severity == "critical")
        warning = len(severe) - critical
        impact = round(sum(float(i.impact_score) for i in severe), 4)
        key = (critical, warning, impact)
        self.round += 1
        self.level = getattr(parsed, "threshold", "normal")
        progress = self.best_key is None or key < self.best_key
        if progress:
            self.best_key, self.best_round = key, self.round
            self.best_state = self.snapshots.take(ctx.state)
            self.rounds_without_progress = 0
        else:
            self.rounds_without_progress += 1
        feas = result.feasibility or {}
        infeasible = feas.get("is_feasible") is False
        self.gate_open = infeasible and not self.risk_accepted
        if infeasible:
            self.negotiation = {
                "capacity_gap": feas.get("capacity_gap"),
                "capacity_gap_bounds": feas.get("capacity_gap_bounds"),
                "reason_code": feas.get("reason_code"),
                "figures": {
                    a.intent_code: dict(a.figures)
                    for a in result.next_actions
                    if a.intent_code in NEGOTIATION_INTENTS
                },
            }
        if self.risk_accepted:
            result.next_actions = [
                a for a in result.next_actions if a.intent_code not in NEGOTIATION_INTENTS
            ]
        if self.start_key is None:
            self.start_key = (critical, warning)
        elif not infeasible and (critical, warning) > self.start_key:
            self._offer_search(ctx.state, result, critical, warning, self.start_key)
        if self.searched_empty:
            self._mark_searched(ctx.state, result)
        actions = [a.to_dict() for a in result.next_actions]
        self.last_actions = {a["action_id"]: a for a in actions}
        # A plan with study tasks still waiting, on a window proven to hold them all, is not
        # done: the close rule on the placed part alone would close a first_full request at its
        # first health check (an empty plan meets it), so the rules close only once they are in.
        waiting = feas.get("is_feasible") is True and any(
            is_study(t) and t.status == "pending" for t in ctx.state.tasks
        )
        # Rules met closes (P1-E, issue 40 item 8); ``improvable`` (the proven floor lies below
        # and an offered action may reach it) is reported for an agent or host that goes on.
        improvable = _improvable(signal, actions)
        reason = self.close_reason or self._close_reason(signal, waiting=waiting)
        self.close_reason = reason
        signal.update(
            improvable=improvable,
            round=self.round,
            rounds_without_progress=self.rounds_without_progress,
            should_close=reason is not None,
            close_reason=reason,
        )
        self.rounds.append(
            {
                "round": self.round,
                "critical": critical,
                "warning": warning,
                "total_impact": impact,
                "is_feasible": feas.get("is_feasible"),
                "progress": progress,
                "best_round": self.best_round,
                "rounds_without_progress": self.rounds_without_progress,
                "should_close": reason is not None,
                "close_reason": reason,
                "issue_ids": [i.issue_id for i in severe],
                "actions": [a["action_id"] for a in actions],
                "worked_on": None,
                "writes": [],
            }
        )
        self.trim()

    @staticmethod
    def _offer_search(
        state: ScheduleState,
        result: AnalysisResult,
        critical: int,
        warning: int,
        start: tuple[int, int],
    ) -> None:
        """The request's starting health beats this round's and no single move helps: the
        action naming the least-change repair goes first (unless the floor already put it
        there), as analyze_health offers it below a proven floor."""
        acts = result.next_actions
        if any(a.fixable is True or a.intent_code == SEARCH_INTENT for a in acts):
            return
        first = search_action(state, result.issues, critical, warning, start)
        result.next_actions = number_actions([first, *acts], MAX_ACTIONS)

    def _mark_searched(self, state: ScheduleState, result: AnalysisResult) -> None:
        """The least-change repair whose write already found nothing on this very state, with
        the arguments it names, is marked ``fixable: false`` (so not ``improvable`` either)."""
        for a in result.next_actions:
            if a.intent_code != SEARCH_INTENT:
                continue
            args = dict(a.figures.get("write_args") or {})
            if searched_key(state, _repair_args(args)) == self.searched_empty:
                a.fixable, a.fixable_checked, a.fixable_reason = False, True, SEARCHED_EMPTY

    def trim(self) -> None:
        """Fold the rounds beyond the last :data:`ROUND_LOG_KEEP` into the summary."""
        for entry in self.rounds:
            _trim_writes(entry)
        extra = len(self.rounds) - ROUND_LOG_KEEP
        if extra > 0:
            self.summary = fold_rounds(self.summary, self.rounds[:extra])
            del self.rounds[:extra]

    def _close_reason(self, signal: dict[str, Any], *, waiting: bool = False) -> CloseReason | None:
        if self.risk_accepted and not self.risk_carried:
            return "risk_accepted"
        if self.gate_open:
            return "round_cap" if self.calls >= ROUND_CAP else None
        if signal.get("acceptable_to_close") and not waiting:
            return "rules_met"
        if not waiting and (
            signal.get("reason") == "best_achievable" or signal.get("best_achievable") is True
        ):
            return "best_achievable"
        if self.rounds_without_progress >= NO_PROGRESS_ROUNDS:
            return "no_progress"
        if self.calls >= ROUND_CAP:
            return "round_cap"
        return None

    # ------------------------------------------------------------------ texts
    def gate_text(self) -> str:
        """Why the infeasible gate refuses a write, and the four options (after the tool's
        ``X失败：`` head)."""
        neg = self.negotiation
        figs = neg.get("figures", {})
        days = figs.get("ask_expand_window", {}).get("extra_days_needed")
        cut = figs.get("ask_reduce_scope_or_budget", {}).get(
            "slots_to_cut", neg.get("capacity_gap")
        )
        lift = figs.get("ask_relax_constraints", {}).get("lifting_banned_suffices")
        return "\n".join(
            [
                "最近一次 analyze_health 判定当前窗口不可行（缺口"
                f"{gap_words(neg.get('capacity_gap'), neg.get('capacity_gap_bounds'))}"
                f"个时段，原因 {neg.get('reason_code')}），在用户选择协商方案之前不再放置或移动任务。"
                "请先询问用户，再用 resolve_negotiation 记录选择：",
                f"1. expand_window：扩展时间窗（{f'约需增加{days}天' if days else '增加天数'}）",
                "2. relax_constraints：放松禁排时段或任务类时间窗"
                + ("（解除禁排即可放下）" if lift else ""),
                "3. reduce_scope：缩小本轮范围（需削减"
                f"{gap_words(cut, neg.get('capacity_gap_bounds'))}个时段）",
                "4. accept_risk：接受风险，按当前约束收口",
            ]
        )

    def round_log(self) -> dict[str, Any]:
        """The ``get_round_log`` envelope's metrics: every round kept whole (the caller pages
        them) and the summary of the older ones."""
        return {
            "round": self.round,
            "best_round": self.best_round,
            "best_key": list(self.best_key) if self.best_key else None,
            "rounds_without_progress": self.rounds_without_progress,
            "gate_open": self.gate_open,
            "risk_accepted": self.risk_accepted,
            "close_reason": self.close_reason,
            "set_aside_task_ids": [t.get("state_id") for t in self.set_aside],
            "window_changes": [
                {k: w.get(k) for k in ("seq", "choice", "summary")} for w in self.window_changes
            ],
            "earlier_rounds": self.summary,
            "rounds": self.rounds,
        }


def _trim_writes(entry: dict[str, Any]) -> None:
    """Keep the round's last :data:`ROUND_WRITES_KEEP` writes whole, count the earlier ones."""
    writes = entry.get("writes")
    if isinstance(writes, list) and len(writes) > ROUND_WRITES_KEEP:
        extra = len(writes) - ROUND_WRITES_KEEP
        entry["writes_omitted"] = int(entry.get("writes_omitted") or 0) + extra
        del writes[:extra]


def fold_rounds(summary: dict[str, Any] | None, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """``summary`` (of older rounds, or None) extended by ``rounds``, oldest first: how many
    round entries, their first and last round numbers, their writes, the rounds that made
    progress, and the best of them by the round key (critical, warning, total impact) with its
    round number (round 0, the writes before the first ``analyze_health``, has no key)."""
    out: dict[str, Any] = (
        dict(summary)
        if summary
        else {
            "rounds": 0,
            "first_round": None,
            "last_round": None,
            "writes": 0,
            "progress_rounds": 0,
            "best_round": None,
            "best_key": None,
        }
    )
    for entry in rounds:
        number = int(entry.get("round", 0))
        out["rounds"] += 1
        if out["first_round"] is None:
            out["first_round"] = number
        out["last_round"] = number
        out["writes"] += len(entry.get("writes") or []) + int(entry.get("writes_omitted") or 0)
        out["progress_rounds"] += 1 if entry.get("progress") else 0
        if "critical" in entry:
            key = [entry.get("critical"), entry.get("warning"), entry.get("total_impact")]
            if out["best_key"] is None or key < out["best_key"]:
                out["best_key"], out["best_round"] = key, number
    return out


def best_state(loop: LoopState) -> ScheduleState | None:
    return ScheduleState.from_json(loop.best_state) if loop.best_state is not None else None

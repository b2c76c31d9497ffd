"""What the session page shows, as data (rendered to HTML by :mod:`.page_html`).

Built from a session's snapshot (state, mode, loop, pending calls) or from a bare state:

- the grid: one :class:`~smartflow_engine.plot.Block` per placed block (courses, water courses
  and the guests inside them, study tasks by category; locked and suggested marked), the free
  periods a task class bans, the per-day load;
- the health of the state shown (``analyze_health``'s envelope with feasibility, at the loop's
  threshold level, without the next actions' destination search): its issues, each drawn on its
  day or on the blocks of its subject, and the close signal with its floor;
- the frozen days (``1..frozen_days`` of the session, or of a posted window);
- the round log: per round its mode, the health key (critical, warning, impact) it measured and
  the key the next round measured after its writes, the action worked on, and every write with
  its evidence line (rebuilt from the logged issue diff with the loop's own wording) and the
  tasks it changed (:func:`attach_moves`: read from the session's uncommitted change log);
- the calls waiting for the user's confirmation (the pending commit's preview).

The page reads; it never calls a tool of the session, so it adds no round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...analyzers.criteria import IssueDiff
from ...analyzers.health import run_health
from ...analyzers.result import DIMENSIONS
from ...plot import Block, window_picture
from ...rules import Level, level_or
from ...solver import check_feasibility
from ...state import ScheduleState
from ..sessions.loop_state import evidence_line
from ..sessions.snapshot import without_token

PAGE_TIME_LIMIT_S = 1.0  # the page's own health check (feasibility and floor) per render
_LEVELS = ("strict", "normal", "relaxed")


@dataclass
class IssueView:
    issue_id: str
    severity: str
    dimension: str
    rule: str
    day: int | None
    category: str | None
    text: str


@dataclass
class MoveView:
    """One task's change by a write: where it was and where it is after."""

    task_id: int
    name: str
    before: str
    after: str


@dataclass
class WriteView:
    tool: str
    action_id: str | None
    changes: int
    mode: str | None
    evidence: str | None
    # the tasks the write changed; None when its changes are no longer in the session's change
    # log (committed, discarded, or folded out of the round log)
    moves: list[MoveView] | None = None


@dataclass
class RoundView:
    round: int
    mode: str | None
    key_before: tuple[int, int, float] | None  # what this round's analyze_health measured
    key_after: tuple[int, int, float] | None  # what the next round measured after the writes
    progress: bool | None
    close_reason: str | None
    worked_on: dict[str, Any] | None
    issue_ids: list[str]
    actions: list[str]
    writes: list[WriteView]
    writes_omitted: int = 0  # the round's earlier writes the log folded into a count


@dataclass
class PendingView:
    tool: str
    preview: str


@dataclass
class PageView:
    title: str
    num_days: int
    slots_per_day: int
    day_labels: list[str]
    blocks: list[Block]
    pending_tasks: list[dict[str, Any]]
    banned: dict[tuple[int, int], list[str]]
    utilization: list[float]
    issues: list[IssueView]
    close_signal: dict[str, Any]
    feasibility: dict[str, Any] | None
    level: Level
    mode: str | None = None
    session_id: str | None = None
    rounds: list[RoundView] = field(default_factory=list)
    pending: list[PendingView] = field(default_factory=list)
    change_count: int = 0
    categories: list[str] = field(default_factory=list)
    frozen_days: int = 0

    def day_severity(self) -> dict[int, str]:
        """Day -> the most severe of its issues (critical, warning or info)."""
        out: dict[int, str] = {}
        for issue in self.issues:
            if issue.day is not None and _RANK[issue.severity] > _RANK[out.get(issue.day, "")]:
                out[issue.day] = issue.severity
        return out

    def category_issues(self) -> dict[str, list[IssueView]]:
        """Category (subject) -> its issues, every severity."""
        out: dict[str, list[IssueView]] = {}
        for issue in self.issues:
            if issue.category is not None:
                out.setdefault(issue.category, []).append(issue)
        return out


_RANK = {"": 0, "info": 1, "warning": 2, "critical": 3}


def worst(issues: list[IssueView]) -> str:
    """The most severe severity among ``issues``."""
    return max((i.severity for i in issues), key=lambda s: _RANK.get(s, 0), default="info")


def _issue_text(issue: Any) -> str:
    trig = issue.trigger.to_dict()
    where = f"第{issue.day}天" if issue.day is not None else (issue.category or "全窗口")
    return (
        f"{where}：{issue.rule} {trig.get('metric')}={trig.get('actual')} "
        f"{trig.get('operator')} {trig.get('threshold')}"
    )


def _key(entry: dict[str, Any]) -> tuple[int, int, float] | None:
    if "critical" not in entry:
        return None  # round 0: writes before any analyze_health
    return int(entry["critical"]), int(entry["warning"]), float(entry.get("total_impact", 0.0))


def _write_view(entry: dict[str, Any]) -> WriteView:
    evidence = None
    if "resolved" in entry:
        diff = IssueDiff(
            tuple(entry.get("resolved", ())),
            tuple(entry.get("worse", ())),
            tuple(entry.get("created", ())),
        )
        evidence = evidence_line(diff, entry.get("action_id"), entry.get("criteria"))
    return WriteView(
        tool=str(entry.get("tool", "")),
        action_id=entry.get("action_id"),
        changes=int(entry.get("changes", 0)),
        mode=entry.get("mode"),
        evidence=evidence,
    )


def round_views(rounds: list[dict[str, Any]]) -> list[RoundView]:
    """The round log as the page shows it (keys before and after each round's writes)."""
    out = []
    for idx, entry in enumerate(rounds):
        nxt = rounds[idx + 1] if idx + 1 < len(rounds) else None
        out.append(
            RoundView(
                round=int(entry.get("round", idx)),
                mode=entry.get("mode"),
                key_before=_key(entry),
                key_after=_key(nxt) if nxt is not None else None,
                progress=entry.get("progress"),
                close_reason=entry.get("close_reason"),
                worked_on=entry.get("worked_on"),
                issue_ids=[str(i) for i in entry.get("issue_ids", []) if i is not None],
                actions=[str(a) for a in entry.get("actions", []) if a is not None],
                writes=[_write_view(w) for w in entry.get("writes", [])],
                writes_omitted=int(entry.get("writes_omitted") or 0),
            )
        )
    return out


def state_view(
    state: ScheduleState,
    *,
    title: str = "",
    level: Level = "normal",
    time_limit_s: float = PAGE_TIME_LIMIT_S,
    frozen_days: int = 0,
) -> PageView:
    """The page of a bare window (no session: no rounds, no pending calls); days
    ``1..frozen_days`` are shown frozen."""
    level = level if level in _LEVELS else "normal"
    pic = window_picture(state, level=level, issues=False)
    # The envelope of analyze_health without its next actions: their destination search runs
    # hundreds of health checks (minutes on a 120-day window) and the page shows no actions.
    report = check_feasibility(
        state, time_limit_s=time_limit_s, num_workers=1, include_suggested=True
    )
    health = run_health(
        state, list(DIMENSIONS), [], "summary", level, report, None, actionable=False
    )
    issues = [
        IssueView(
            issue_id=i.issue_id,
            severity=i.severity,
            dimension=i.dimension,
            rule=i.rule,
            day=i.day,
            category=i.category,
            text=_issue_text(i),
        )
        for i in health.issues
    ]
    labels = [
        f"第{m.week}周 周{'一二三四五六日'[m.day_of_week - 1]}" for m in state.window.day_mapping
    ]
    if len(labels) != state.num_days:
        labels = [f"第{d}天" for d in range(1, state.num_days + 1)]
    pending = [
        {
            "task_id": t.state_id,
            "name": t.name,
            "category": t.category or "未分类",
            "duration": t.duration,
        }
        for t in state.tasks
        if not t.is_placed
    ]
    metrics = health.metrics
    return PageView(
        title=title,
        num_days=pic.num_days,
        slots_per_day=pic.slots_per_day,
        day_labels=labels,
        blocks=pic.blocks,
        pending_tasks=pending,
        banned=pic.banned,
        utilization=pic.utilization,
        issues=issues,
        close_signal=dict(metrics.get("close_signal") or {}),
        feasibility=health.feasibility,
        level=level,
        categories=sorted({b.category for b in pic.blocks if b.kind in ("task", "guest")}),
        frozen_days=max(0, min(int(frozen_days), pic.num_days)),
    )


def session_view(snapshot: dict[str, Any], *, time_limit_s: float = PAGE_TIME_LIMIT_S) -> PageView:
    """The page of a session, from its snapshot (``Session.snapshot()``)."""
    loop = snapshot.get("loop") or {}
    level = level_or(loop.get("level"))
    sid = str(snapshot.get("session_id", ""))
    data = snapshot.get("state")
    state = ScheduleState.from_json(data) if data is not None else None
    if state is not None:
        view = state_view(
            state,
            title=f"会话 {sid}",
            level=level,
            time_limit_s=time_limit_s,
            frozen_days=int(snapshot.get("frozen_days") or 0),
        )
    else:
        view = PageView(
            title=f"会话 {sid}（未加载日程）",
            num_days=0,
            slots_per_day=0,
            day_labels=[],
            blocks=[],
            pending_tasks=[],
            banned={},
            utilization=[],
            issues=[],
            close_signal={},
            feasibility=None,
            level=level,
        )
    view.session_id = sid
    view.mode = snapshot.get("mode")
    view.rounds = round_views(list(loop.get("rounds") or []))
    if state is not None:
        attach_moves(view.rounds, list(snapshot.get("changes") or []), state)
    view.pending = [
        PendingView(tool=str(p.get("tool", "")), preview=without_token(str(p.get("preview", ""))))
        for p in snapshot.get("pending") or []
    ]
    view.change_count = len(snapshot.get("changes") or [])
    if loop:
        view.close_signal = {
            **view.close_signal,
            "round": loop.get("round"),
            "rounds_without_progress": loop.get("rounds_without_progress"),
            "close_reason": loop.get("close_reason"),
        }
    return view


def _where(block: dict[str, Any] | None, status: str, host: int | None) -> str:
    if block is None:
        return "待安排" if status == "pending" else "未放置"
    text = f"第{block['day']}天第{block['slot_start']}-{block['slot_end']}节"
    return text + (f"（嵌入 [{host}]）" if host is not None else "")


def attach_moves(rounds: list[RoundView], changes: list[dict[str, Any]], state: Any) -> None:
    """Give each write the tasks it changed, from the session's change log.

    The change log grows in one place, in call order, by exactly the changes each write applied
    (``changes`` in its round-log entry); a commit or a discarding reload empties it. So its
    last entries are the last writes' changes: they are handed out from the end, write by write
    backwards, while the counts fit. The writes before that point (committed or discarded), and
    every write before a round whose earlier writes were folded (``writes_omitted``), keep
    ``moves=None``: the page then says their changes are not in the log.
    """
    names = {t.state_id: t.name for t in state.tasks}
    end = len(changes)
    for r in reversed(rounds):
        for w in reversed(r.writes):
            if w.changes > end:
                return
            taken = changes[end - w.changes : end]
            end -= w.changes
            w.moves = [
                MoveView(
                    task_id=int(c["task_id"]),
                    name=names.get(int(c["task_id"]), ""),
                    before=_where(
                        c.get("block_before"),
                        str(c.get("status_before")),
                        c.get("embed_host_before"),
                    ),
                    after=_where(
                        c.get("block_after"), str(c.get("status_after")), c.get("embed_host_after")
                    ),
                )
                for c in taken
            ]
        if r.writes_omitted:
            return

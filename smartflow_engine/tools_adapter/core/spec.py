"""The shape of one tool: its metadata, argument model and handler (the registry's row type)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ...state import Change, ScheduleState

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore
    from .render import DayLabels


class Mode(StrEnum):
    """Execution modes of P1-D; the mode selects which tools are offered."""

    FIRST_FULL = "first_full"
    LOCAL_ADJUST = "local_adjust"
    GLOBAL_REOPT = "global_reopt"


ALL_MODES: frozenset[Mode] = frozenset(Mode)


@dataclass
class ToolContext:
    """What a handler may touch: the session's state and change log, and server-set caps."""

    state: ScheduleState | None
    changes: list[Change] = field(default_factory=list)
    max_time_limit_s: float = 10.0  # cap on any solver time limit a caller asks for
    num_workers: int = 1
    store: ScheduleStore | None = None  # the database, for tools that read or write it
    user_id: int | None = None  # whose data the store tools act on
    loop: Any = None  # a session's LoopState (rounds, close rules, gate, round log), or None
    applied: list[Change] = field(default_factory=list)  # this call's changes, until recorded
    # ``time.perf_counter()`` when the running call began: a solver tool's time limit is the
    # whole call's, so it counts from here (set by the call pipeline).
    call_started: float | None = None
    # Days 1..frozen_days are frozen (issue 28): nothing on them moves, nothing new lands there.
    # A session setting today (``Session(frozen_days=...)``); a request setting can set it later.
    frozen_days: int = 0
    # Existing entries are facts (issue 42 item 5): only suggested and pending tasks may move.
    # A request setting (``Session.begin_request(existing_fixed=...)``, HTTP, MCP ``_meta``);
    # off by default (the spec's rule: an existing task may move).
    existing_fixed: bool = False
    # The plan a preview computed (issue 28): a re-optimising write's plan keyed by (tool,
    # arguments) with the digest of the state it was computed on. The real call that follows
    # takes it, so applying gives exactly the previewed plan even where the wall clock cut the
    # search (under load the same seed can then end elsewhere). The preview's copy of the context
    # shares this dict; it lives only in this process (a session restored from its snapshot
    # recomputes, and its reply then says a cut search may differ).
    previewing: bool = False
    plans: dict[tuple[str, str], tuple[str, Any]] = field(default_factory=dict)
    # What the running propose_placement would apply (its requests and the status they take),
    # for the disruption line the pipeline adds on the real state (issue 28; set per call).
    proposed: Any = None
    # The solver's calibration (issue 30 item 3): every solver call of a tool runs with it, and
    # a proposal's work budget is its ``work_share`` of the asked limit. A server setting like
    # the caps above (``Toolbox``/``Session``/``create_app(calibration=...)``); tests pass one.
    calibration: Calibration = DEFAULT_CALIBRATION
    # How text replies name a day (issue 43 item 2, :mod:`.render`): ``index`` (the spec's
    # ``第6天``) or ``weekday`` (``第6天(星期六)``). A session or server setting.
    day_labels: DayLabels = "index"

    # Whether the window was loaded from the database (``store`` and ``user_id``): commit and
    # reload act only on such a window; a window a caller posted is not tied to any rows
    # (issue 44 item 5). A bare Toolbox given a store is trusted to hold one.
    db_window: bool = True

    def record(self, changes: list[Change]) -> None:
        """Report the changes a write applied; the call pipeline appends them to the log."""
        self.applied.extend(changes)


class Refused(str):
    """A text reply that is a refusal (nothing was done): the words the model reads, unchanged,
    flagged so every surface can mark the result as an error (MCP ``isError``, the session's and
    HTTP's ``status="error"``, the CLI's exit code). ``error_code`` is the refusal's stable code
    (``""``: the generic ``refused``)."""

    error_code: str = ""


def refused(text: str, error_code: str = "") -> Refused:
    """Mark ``text`` as a refusal (see :class:`Refused`), with its stable code when it has one."""
    out = Refused(text)
    if error_code:
        out.error_code = error_code
    return out


class NothingToConfirm(str):
    """A confirm gate's preview saying the call would write nothing (e.g. ``commit`` with no
    changes): the call runs at once and nothing is held for the user to confirm."""


def is_refusal(reply: str, output: str = "text") -> bool:
    """Whether ``reply`` reports that the tool refused: a :class:`Refused` text, or a JSON reply
    whose ``success`` is false."""
    if isinstance(reply, Refused):
        return True
    if output != "json":
        return False
    try:
        data = json.loads(reply)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("success") is False


# ---------------------------------------------------------------------------------- refusals
# Every refusal of a text tool reads ``X失败：reason`` (issue 43 item 3), the spec's form (放置失败,
# 移动失败, ...): a host marks a text reply failed when it says 失败. ``X`` is the tool's verb; a
# name that is no tool (an unknown one) fails as 调用.
FAILURE_WORDS: dict[str, str] = {
    "get_overview": "查询",
    "query_range": "查询",
    "find_free": "查询",
    "list_tasks": "查询",
    "get_task_info": "查询",
    "place": "放置",
    "move": "移动",
    "swap": "交换",
    "batch_move": "批量移动",
    "unplace": "移除",
    "check_feasibility": "可行性检查",
    "propose_placement": "粗排",
    "apply_proposal": "应用方案",
    "spread_even": "均匀分散",
    "min_context_switch": "减少切换",
    "restore_best": "恢复最佳状态",
    "resolve_negotiation": "记录协商",
    "commit": "提交",
    "reload": "重新加载",
    "upsert_task_class": "保存任务类",
    "confirm": "确认",
    "reject": "取消",
}
UNKNOWN_WORD = "调用"
# The heads refusals had before issue 43, still written by a few handlers: rewritten on the way
# out (:func:`failure_form`), so the model reads one form.
_OLD_HEADS = ("{name} 未执行：", "{name} 未执行，")
_ARG_HEAD = "参数错误："


def failure_head(name: str) -> str:
    """``移动失败``: the head of a refusal of tool ``name`` (``调用失败`` for a name that is no
    tool)."""
    return f"{FAILURE_WORDS.get(name, UNKNOWN_WORD)}失败"


PREVIEW_HEAD = "预览（"  # the first line of a preview reply (:data:`.preview.PREVIEW_LINE`)


def failure_text(name: str, reason: str) -> str:
    """``移动失败：reason``; a preview's first line stays first (``预览（…）：`` then the
    refusal)."""
    if reason.startswith(PREVIEW_HEAD) and "\n" in reason:
        first, rest = reason.split("\n", 1)
        return f"{first}\n{failure_head(name)}：{rest}"
    return f"{failure_head(name)}：{reason}"


def failure_form(name: str, reply: str) -> str:
    """A handler's text refusal of tool ``name`` in the form ``X失败：reason``: kept as it is
    when its head line (after a preview's first line) already says 失败, as the spec's own
    refusals do; an old head (``move 未执行：``, ``参数错误：``) is replaced. Keeps the
    :class:`Refused` mark and its code."""
    lines = reply.split("\n")
    head = lines[1] if lines[0].startswith(PREVIEW_HEAD) and len(lines) > 1 else lines[0]
    if "失败" in head:
        return reply
    preview = ""
    body = reply
    if lines[0].startswith(PREVIEW_HEAD) and len(lines) > 1:
        preview, body = lines[0] + "\n", "\n".join(lines[1:])
    for old in _OLD_HEADS:
        old = old.format(name=name)
        if body.startswith(old):
            body = body[len(old) :]
            break
    if body.startswith(_ARG_HEAD):
        body = "参数错误，" + body[len(_ARG_HEAD) :]
    text = preview + failure_text(name, body)
    return refused(text, getattr(reply, "error_code", "")) if isinstance(reply, Refused) else text


Handler = Callable[[ToolContext, Any], str]


@dataclass(frozen=True)
class ToolSpec:
    """One row of the tool registry."""

    name: str
    kind: Literal["read", "write"]
    args_model: type[BaseModel]
    handler: Handler
    description: str  # Chinese, for the LLM
    output: Literal["text", "json"] = "text"
    needs_state: bool = True
    needs_confirm: bool = False
    modes: frozenset[Mode] = ALL_MODES  # modes in which the tool is offered to the model
    # A JSON tool whose replies are not the analysis envelope renders its own failures.
    error_reply: Callable[[str, str], str] | None = None
    # A confirm-gated tool's own preview of what confirming would do (e.g. ``commit``'s net
    # change per table); the gate shows it instead of the bare arguments.
    preview: Callable[[ToolContext, Any], str] | None = None

    @property
    def is_write(self) -> bool:
        return self.kind == "write"

    def error(self, error_code: str, error: str) -> str:
        """A failure decided outside the handler, in this tool's reply shape."""
        if self.output == "text":
            return refused(error)
        if self.error_reply is not None:
            return self.error_reply(error_code, error)
        return json_error(self.name, error_code, error)


def json_error(tool: str, error_code: str, error: str) -> str:
    """The analysis envelope (p1 §4.1/4.2) for a failure, as JSON text."""
    return json.dumps(
        {
            "tool": tool,
            "success": False,
            "metric_schema": {},
            "metrics": {},
            "issues": [],
            "next_actions": [],
            "error": error,
            "error_code": error_code,
        },
        ensure_ascii=False,
    )

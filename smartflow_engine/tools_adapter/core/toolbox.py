"""``Toolbox``: the engine's tools over one window. ``call(name, args) -> str`` never raises for bad input.

A bare ``Toolbox`` is the engine without an execute loop: no user requests, no round cap, no
refusal of writes after a close (issue 27). Every agent surface (:class:`~.session.Session`, and
through it HTTP and MCP) adds the loop; a host wiring a model to the tools uses a Session.
Every call goes through :mod:`.pipeline`, the one path shared with :class:`~.session.Session`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...solver.budget import DEFAULT_CALIBRATION, Calibration
from ...solver.placement import warm_imports
from ...state import ScheduleState
from . import pipeline, registry
from .render import DAY_LABELS, DayLabels
from .semester import dated
from .spec import Mode, ToolContext, ToolSpec, failure_text, refused

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore

log = logging.getLogger(__name__)


_HIDDEN = "是隐藏工具，需显式启用（enabled_tools）后才能调用"


def _env_self_check() -> bool:
    from ...settings import current

    return current().self_check


def _env_day_labels() -> DayLabels:
    from ...settings import current

    labels: DayLabels = current().day_labels
    return labels


def check_day_labels(value: Any) -> DayLabels:
    """``value`` if it is a day-label style (``index`` / ``weekday``), else ``ValueError``."""
    if value not in DAY_LABELS:
        raise ValueError(f"day_labels must be one of {', '.join(DAY_LABELS)}, not {value!r}")
    out: DayLabels = value
    return out


@dataclass(frozen=True)
class ToolReply:
    """One call's reply and whether it is an error (the tool refused or did not run).

    ``text`` is exactly what the model reads; ``is_error`` is what MCP's ``isError``, the
    session's ``status="error"`` and the CLI's exit code carry.
    """

    tool: str
    text: str
    is_error: bool = False
    needs_confirm: bool = False  # a confirm-required tool called without ``confirm=True``


class Toolbox:
    """The tools of one planning window: the engine without an execute loop.

    Nothing here stops a model that grinds on (no requests, no round cap, writes allowed after a
    close signal); agents are served by :class:`~.session.Session`, which enforces the loop.

    Parameters
    ----------
    state
        The loaded window, or ``None`` (only tools with ``needs_state=False`` then work).
    self_check
        Recompute the grid from scratch after every write and raise :class:`SelfCheckError` on any
        difference (default: the ``SMARTFLOW_SELF_CHECK`` environment variable; tests turn it on).
    max_time_limit_s, num_workers
        Caps for solver-backed tools.
    calibration
        The solver's figures every solver-backed tool runs with (:class:`~smartflow_engine.solver.budget.Calibration`,
        default the measured ones).
    store, user_id
        The database backend and the user for tools that write it (``upsert_task_class``).
    enabled_tools
        Hidden tools (offered in no mode, e.g. ``min_context_switch``) this toolbox may call; a
        hidden tool not named here is refused like an unknown one.
    loop
        Keep the agent loop's rounds, close rules, infeasible gate, evidence lines and round log
        (a :class:`~.session.Session` turns this on; a bare toolbox answers as the spec's tools).
    day_labels
        How text replies name a day: ``index`` (the spec's ``第6天``) or ``weekday``
        (``第6天(星期六)``, :mod:`.render`); default the ``SMARTFLOW_DAY_LABELS`` setting.
    """

    def __init__(
        self,
        state: ScheduleState | None = None,
        *,
        self_check: bool | None = None,
        max_time_limit_s: float = 10.0,
        num_workers: int = 1,
        store: ScheduleStore | None = None,
        user_id: int | None = None,
        enabled_tools: Iterable[str] = (),
        loop: bool = False,
        calibration: Calibration = DEFAULT_CALIBRATION,
        day_labels: DayLabels | None = None,
    ) -> None:
        from ..sessions.loop_state import LoopState

        self.ctx = ToolContext(
            dated(state),
            [],
            max_time_limit_s,
            num_workers,
            store,
            user_id,
            loop=LoopState() if loop else None,
            calibration=calibration,
            day_labels=_env_day_labels() if day_labels is None else check_day_labels(day_labels),
        )
        self.self_check = _env_self_check() if self_check is None else self_check
        self.enabled_tools: tuple[str, ...] = tuple(dict.fromkeys(enabled_tools))
        # A tool call's clock starts with the call: the solver's one-time imports (~0.4 s) are
        # paid here, once per process, not inside a process's first solver call's limit.
        warm_imports()

    @property
    def state(self) -> ScheduleState | None:
        return self.ctx.state

    @property
    def changes(self) -> list[Any]:
        """The change log: every applied write, in order (for the confirm step)."""
        return self.ctx.changes

    # ------------------------------------------------------------------ metadata
    def tool_names(self, mode: Mode | str | None = None) -> list[str]:
        """The tools this toolbox offers: those of ``mode``, or of any mode when ``None``, plus
        the enabled hidden ones; without a loaded schedule, only those that need none."""
        base = (
            registry.tool_names(mode)
            if mode is not None
            else [s.name for s in registry.TOOLS if s.modes]
        )
        names = base + [n for n in self.enabled_tools if n not in base and n in registry.REGISTRY]
        if self.ctx.state is None:
            names = [n for n in names if not registry.REGISTRY[n].needs_state]
        return names

    def is_offered(self, name: str) -> bool:
        spec = registry.get_spec(name)
        return spec is not None and (bool(spec.modes) or name in self.enabled_tools)

    def is_write_tool(self, name: str) -> bool:
        return registry.is_write_tool(name)

    def spec(self, name: str) -> ToolSpec | None:
        return registry.get_spec(name)

    def schemas(self, fmt: str = "openai", mode: Mode | str | None = None) -> list[dict[str, Any]]:
        from .schemas import tool_schemas

        usable = set(self.tool_names(mode))
        return [
            s
            for s in tool_schemas(fmt=fmt, mode=mode, include=self.enabled_tools)
            if _schema_name(s) in usable
        ]

    # ------------------------------------------------------------------ calling
    def validate(self, name: str, args: Any) -> tuple[ToolSpec | None, Any, str | None]:
        """Parse ``args`` for tool ``name``: ``(spec, parsed, None)`` or ``(spec?, None, reply)``."""
        found = pipeline.lookup(
            registry.REGISTRY, name, self.tool_names(), self.is_offered, _HIDDEN
        )
        if isinstance(found, pipeline.CallResult):
            return registry.get_spec(name), None, found.reply
        parsed, rejected = pipeline.parse(found, args, self.ctx)
        if rejected is not None:
            return found, None, rejected.reply
        return found, parsed, None

    def invoke(
        self, name: str, args: dict[str, Any] | None = None, *, confirm: bool = False
    ) -> ToolReply:
        """As :meth:`call`, with the reply flagged as an error when the tool refused."""
        result = self.invoke_result(name, args, confirm=confirm)
        return ToolReply(
            result.tool,
            result.reply,
            is_error=result.status == "error",
            needs_confirm=result.error_code == "confirm_required",
        )

    def invoke_result(
        self, name: str, args: Any = None, *, confirm: bool = False
    ) -> pipeline.CallResult:
        """Run tool ``name`` and report what happened (see :class:`~.pipeline.CallResult`)."""
        found = pipeline.lookup(
            registry.REGISTRY, name, self.tool_names(), self.is_offered, _HIDDEN
        )
        if isinstance(found, pipeline.CallResult):
            return found
        parsed, refused_call = pipeline.parse(found, args, self.ctx)
        if refused_call is not None:
            return refused_call
        if found.needs_confirm and not confirm:
            return pipeline.CallResult(
                found.name,
                self._confirm_needed(found, parsed),
                found.output,
                "error",
                "confirm_required",
            )
        return pipeline.execute(self.ctx, found, parsed, check=self.self_check)

    def call(self, name: str, args: dict[str, Any] | None = None, *, confirm: bool = False) -> str:
        """Run tool ``name`` with ``args``; always a reply, never an exception for bad input.

        A confirm-required tool (``upsert_task_class``) runs only with ``confirm=True`` (the user
        agreed); otherwise the reply is a preview saying confirmation is needed and nothing is
        written.
        """
        return self.invoke_result(name, args, confirm=confirm).reply

    def run(self, spec: ToolSpec, parsed: Any) -> str:
        """Run an already-validated call (the confirm gate uses this)."""
        return pipeline.execute(self.ctx, spec, parsed, check=self.self_check).reply

    def _confirm_needed(self, spec: ToolSpec, parsed: Any) -> str:
        args = parsed.model_dump(mode="json", exclude_unset=True)
        msg = (
            f"{spec.name} 需要用户确认后才能执行（待确认），本次未执行，没有任何修改。"
            "请在用户明确同意后以 confirm=True 再次调用。"
        )
        if spec.output != "json":
            shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
            return refused(failure_text(spec.name, f"{msg}\n参数：{shown}"), "confirm_required")
        # The tool's own failure shape, plus what would be run.
        data = json.loads(spec.error("confirm_required", msg))
        data["preview"] = {"tool": spec.name, "args": args}
        return json.dumps(data, ensure_ascii=False)


def _schema_name(schema: dict[str, Any]) -> str:
    return str(schema.get("name") or schema.get("function", {}).get("name", ""))

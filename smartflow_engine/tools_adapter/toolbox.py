"""``Toolbox``: one session's tool surface. ``call(name, args) -> str`` never raises for bad input.

Every call goes through :mod:`.pipeline`, the one path shared with :class:`~.session.Session`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from ..state import ScheduleState
from . import pipeline, registry
from .spec import Mode, ToolContext, ToolSpec

log = logging.getLogger(__name__)


_HIDDEN = "是隐藏工具，需显式启用（enabled_tools）后才能调用"


def _env_self_check() -> bool:
    return os.environ.get("SMARTFLOW_SELF_CHECK", "") not in ("", "0", "false")


class Toolbox:
    """The tools of one planning window.

    Parameters
    ----------
    state
        The loaded window, or ``None`` (only tools with ``needs_state=False`` then work).
    self_check
        Recompute the grid from scratch after every write and raise :class:`SelfCheckError` on any
        difference (default: the ``SMARTFLOW_SELF_CHECK`` environment variable; tests turn it on).
    max_time_limit_s, num_workers
        Caps for solver-backed tools.
    store, user_id
        The database backend and the user for tools that write it (``upsert_task_class``).
    enabled_tools
        Hidden tools (offered in no mode, e.g. ``min_context_switch``) this toolbox may call; a
        hidden tool not named here is refused like an unknown one.
    loop
        Keep the agent loop's rounds, close rules, infeasible gate, evidence lines and round log
        (a :class:`~.session.Session` turns this on; a bare toolbox answers as the spec's tools).
    """

    def __init__(
        self,
        state: ScheduleState | None = None,
        *,
        self_check: bool | None = None,
        max_time_limit_s: float = 10.0,
        num_workers: int = 1,
        store: Any = None,
        user_id: int | None = None,
        enabled_tools: Iterable[str] = (),
        loop: bool = False,
    ) -> None:
        from .loop import LoopState

        self.ctx = ToolContext(state, [], max_time_limit_s, num_workers, store, user_id,
                               loop=LoopState() if loop else None)
        self.self_check = _env_self_check() if self_check is None else self_check
        self.enabled_tools: tuple[str, ...] = tuple(dict.fromkeys(enabled_tools))

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
        the enabled hidden ones."""
        offered = set(registry.tool_names(mode)) if mode is not None else {
            s.name for s in registry.TOOLS if s.modes}
        offered |= set(self.enabled_tools)
        return [s.name for s in registry.TOOLS if s.name in offered]

    def is_offered(self, name: str) -> bool:
        spec = registry.get_spec(name)
        return spec is not None and (bool(spec.modes) or name in self.enabled_tools)

    def is_write_tool(self, name: str) -> bool:
        return registry.is_write_tool(name)

    def spec(self, name: str) -> ToolSpec | None:
        return registry.get_spec(name)

    def schemas(self, fmt: str = "openai", mode: Mode | str | None = None) -> list[dict[str, Any]]:
        from .schemas import tool_schemas

        if mode is not None:
            return tool_schemas(fmt=fmt, mode=mode, include=self.enabled_tools)
        names = set(self.tool_names())
        return [s for s in tool_schemas(fmt=fmt)
                if (s.get("function", s) if fmt == "openai" else s)["name"] in names]

    # ------------------------------------------------------------------ calling
    def validate(self, name: str, args: Any) -> tuple[ToolSpec | None, Any, str | None]:
        """Parse ``args`` for tool ``name``: ``(spec, parsed, None)`` or ``(spec?, None, reply)``."""
        found = pipeline.lookup(registry.REGISTRY, name, self.tool_names(), self.is_offered,
                                _HIDDEN)
        if isinstance(found, pipeline.CallResult):
            return registry.get_spec(name), None, found.reply
        parsed, refused = pipeline.parse(found, args, self.ctx)
        if refused is not None:
            return found, None, refused.reply
        return found, parsed, None

    def invoke(self, name: str, args: Any = None) -> pipeline.CallResult:
        """Run tool ``name`` and report what happened (see :class:`~.pipeline.CallResult`)."""
        found = pipeline.lookup(registry.REGISTRY, name, self.tool_names(), self.is_offered,
                                _HIDDEN)
        if isinstance(found, pipeline.CallResult):
            return found
        parsed, refused = pipeline.parse(found, args, self.ctx)
        if refused is not None:
            return refused
        return pipeline.execute(self.ctx, found, parsed, check=self.self_check)

    def call(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Run tool ``name`` with ``args``; always a reply, never an exception for bad input."""
        return self.invoke(name, args).reply

    def run(self, spec: ToolSpec, parsed: Any) -> str:
        """Run an already-validated call (the confirm gate uses this)."""
        return pipeline.execute(self.ctx, spec, parsed, check=self.self_check).reply

"""``Toolbox``: one session's tool surface. ``call(name, args) -> str`` never raises for bad input."""

from __future__ import annotations

import logging
import os
from typing import Any

from pydantic import ValidationError

from ..state import ScheduleState, SelfCheckError, self_check
from . import registry
from .args import describe_validation_error
from .schemas import drop_null_optionals
from .spec import Mode, ToolContext, ToolSpec

log = logging.getLogger(__name__)


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
    ) -> None:
        self.ctx = ToolContext(state, [], max_time_limit_s, num_workers, store, user_id)
        self.self_check = _env_self_check() if self_check is None else self_check

    @property
    def state(self) -> ScheduleState | None:
        return self.ctx.state

    @property
    def changes(self) -> list[Any]:
        """The change log: every applied write, in order (for the confirm step)."""
        return self.ctx.changes

    # ------------------------------------------------------------------ metadata
    def tool_names(self, mode: Mode | str | None = None) -> list[str]:
        return registry.tool_names(mode)

    def is_write_tool(self, name: str) -> bool:
        return registry.is_write_tool(name)

    def spec(self, name: str) -> ToolSpec | None:
        return registry.get_spec(name)

    def schemas(self, fmt: str = "openai", mode: Mode | str | None = None) -> list[dict[str, Any]]:
        from .schemas import tool_schemas

        return tool_schemas(fmt=fmt, mode=mode)

    # ------------------------------------------------------------------ calling
    def validate(self, name: str, args: Any) -> tuple[ToolSpec | None, Any, str | None]:
        """Parse ``args`` for tool ``name``: ``(spec, parsed, None)`` or ``(spec?, None, reply)``."""
        spec = registry.get_spec(name)
        if spec is None:
            names = "、".join(registry.tool_names())
            return None, None, f"未知工具：{name}。可用工具：{names}。"
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return spec, None, self._arg_error(spec, "参数应为 JSON 对象。")
        if spec.needs_state and self.ctx.state is None:
            return spec, None, spec.error("no_state", f"当前没有加载日程，无法调用 {name}。")
        try:
            # A strict-mode model sends null for an optional argument it leaves out.
            parsed = spec.args_model.model_validate(drop_null_optionals(spec.args_model, args))
        except ValidationError as exc:
            return spec, None, self._arg_error(spec, describe_validation_error(exc))
        return spec, parsed, None

    def call(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Run tool ``name`` with ``args``; always a reply, never an exception for bad input."""
        spec, parsed, refusal = self.validate(name, args)
        if refusal is not None or spec is None:
            return refusal or ""
        return self.run(spec, parsed)

    def run(self, spec: ToolSpec, parsed: Any) -> str:
        """Run an already-validated call (the confirm gate uses this)."""
        try:
            reply = spec.handler(self.ctx, parsed)
        except SelfCheckError:
            raise
        except Exception as exc:  # a bug must not reach the model as a traceback
            log.exception("tool %s failed", spec.name)
            return spec.error("internal_error", f"内部错误：{spec.name} 执行失败（{type(exc).__name__}）。")
        if spec.is_write and self.self_check and self.ctx.state is not None:
            self_check(self.ctx.state)
        return reply

    def _arg_error(self, spec: ToolSpec, msg: str) -> str:
        return spec.error("invalid_args", msg if spec.output == "json" else f"参数错误：{msg}")

"""``Toolbox``: one session's tool surface. ``call(name, args) -> str`` never raises for bad input."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..state import ScheduleState, SelfCheckError, self_check
from . import registry
from .args import describe_validation_error, short_name
from .schemas import drop_null_optionals
from .spec import Mode, ToolContext, ToolSpec, is_refusal, refused

log = logging.getLogger(__name__)


def _env_self_check() -> bool:
    return os.environ.get("SMARTFLOW_SELF_CHECK", "") not in ("", "0", "false")


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
        """The tools that work here (without a loaded schedule, only those that need none)."""
        names = registry.tool_names(mode)
        if self.ctx.state is None:
            names = [n for n in names if not registry.REGISTRY[n].needs_state]
        return names

    def is_write_tool(self, name: str) -> bool:
        return registry.is_write_tool(name)

    def spec(self, name: str) -> ToolSpec | None:
        return registry.get_spec(name)

    def schemas(self, fmt: str = "openai", mode: Mode | str | None = None) -> list[dict[str, Any]]:
        from .schemas import tool_schemas

        usable = set(self.tool_names(mode))
        return [s for s in tool_schemas(fmt=fmt, mode=mode) if _schema_name(s) in usable]

    # ------------------------------------------------------------------ calling
    def validate(self, name: str, args: Any) -> tuple[ToolSpec | None, Any, str | None]:
        """Parse ``args`` for tool ``name``: ``(spec, parsed, None)`` or ``(spec?, None, reply)``."""
        spec = registry.get_spec(name)
        if spec is None:
            names = "、".join(self.tool_names())
            return None, None, refused(f"未知工具：{short_name(str(name))}。可用工具：{names}。")
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

    def call(self, name: str, args: dict[str, Any] | None = None, *, confirm: bool = False) -> str:
        """Run tool ``name`` with ``args``; always a reply, never an exception for bad input.

        A confirm-required tool (``upsert_task_class``) runs only with ``confirm=True`` (the user
        agreed); otherwise the reply is a preview saying confirmation is needed and nothing is
        written.
        """
        return self.invoke(name, args, confirm=confirm).text

    def invoke(self, name: str, args: dict[str, Any] | None = None, *,
               confirm: bool = False) -> ToolReply:
        """As :meth:`call`, with the reply flagged as an error when the tool refused."""
        spec, parsed, refusal = self.validate(name, args)
        if refusal is not None or spec is None:
            return ToolReply(str(name), refusal or "", is_error=True)
        if spec.needs_confirm and not confirm:
            return ToolReply(spec.name, self._confirm_needed(spec, parsed), is_error=True,
                             needs_confirm=True)
        reply = self.run(spec, parsed)
        return ToolReply(spec.name, reply, is_error=is_refusal(reply, spec.output))

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

    def _confirm_needed(self, spec: ToolSpec, parsed: Any) -> str:
        args = parsed.model_dump(mode="json", exclude_unset=True)
        msg = (f"{spec.name} 需要用户确认后才能执行，本次未执行，没有任何修改。"
               "请在用户明确同意后以 confirm=True 再次调用。")
        if spec.output != "json":
            shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
            return refused(f"待确认：{msg}\n参数：{shown}")
        # The tool's own failure shape, plus what would be run.
        data = json.loads(spec.error("confirm_required", msg))
        data["preview"] = {"tool": spec.name, "args": args}
        return json.dumps(data, ensure_ascii=False)

    def _arg_error(self, spec: ToolSpec, msg: str) -> str:
        return spec.error("invalid_args", msg if spec.output == "json" else f"参数错误：{msg}")


def _schema_name(schema: dict[str, Any]) -> str:
    return str(schema.get("name") or schema.get("function", {}).get("name", ""))

"""MCP server over one :class:`Session`, built with the official ``mcp`` SDK (v2 API, ``MCPServer``).

Every tool the session offers in its mode is published under its own name with the registry's
schema (``schemas.tool_schemas(fmt="mcp")``: optional arguments are optional, not nullable); the
session validates the arguments, so a bad argument comes back as a tool result with
``isError: true`` and the same Chinese reply the :class:`Toolbox` gives, never as a protocol
error. A tool's own refusal (a conflict, a locked task, a missing id) is ``isError: true`` too,
its text unchanged. JSON tools also return structured content.
The P1-C rules of the session's mode are the server's instructions.

When a confirm-required tool is offered, the server also offers ``confirm`` and ``reject``
(taking the token the preview gave).

Run over stdio: ``python -m smartflow_engine.tools_adapter.mcp_server --state FILE`` (what
``smartflow mcp --state FILE`` calls through :func:`run_stdio`).

A line on stdin that is not a JSON-RPC message is dropped by the SDK's stdio transport without a
reply, so a client waiting on that request's id would wait for ever. :func:`serve_stdio` reads the
lines first: a malformed line that carries an id gets a JSON-RPC error with that id (``-32700``
parse error for text that is not JSON, ``-32600`` invalid request for JSON that is not a valid
message); a malformed line without an id (a notification) gets none, as JSON-RPC says.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from io import TextIOWrapper
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from .. import __version__
from ..state import ScheduleState
from .args import Args
from .schemas import ENVELOPE_SCHEMA, mcp_annotations, mcp_input_schema, tool_description
from .session import CallResult, Session
from .spec import Mode, ToolSpec

SERVER_NAME = "smartflow-engine"


class _RawArguments(FuncMetadata):
    """Hands the call's arguments to the tool untouched: the session validates them itself, so the
    model reads the same reply through MCP as through any other adapter."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class _NoFields(ArgModelBase):
    pass


class TokenArgs(Args):
    token: str


def to_call_tool_result(result: CallResult) -> CallToolResult:
    """A session's :class:`CallResult` as an MCP tool result."""
    content: list[Any] = [TextContent(type="text", text=result.reply)]
    data = result.data
    if result.is_error or not isinstance(data, dict):
        return CallToolResult(content=content, is_error=result.is_error)
    return CallToolResult(content=content, structured_content=data)


def _tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    annotations: dict[str, bool],
    run: Callable[[dict[str, Any]], CallResult],
    output_schema: dict[str, Any] | None,
) -> Tool:
    async def fn(arguments: dict[str, Any]) -> CallToolResult:
        # A worker thread: a solver call must not stall the event loop; the session lock
        # serialises calls.
        result = await anyio.to_thread.run_sync(run, arguments)
        return to_call_tool_result(result)

    meta = _RawArguments(arg_model=_NoFields, output_schema=output_schema)
    return Tool(
        fn=fn,
        name=name,
        description=description,
        parameters=parameters,
        fn_metadata=meta,
        is_async=True,
        annotations=ToolAnnotations(
            read_only_hint=annotations["readOnlyHint"],
            destructive_hint=annotations["destructiveHint"],
            idempotent_hint=annotations["idempotentHint"],
            open_world_hint=annotations["openWorldHint"],
        ),
    )


def _spec_tool(session: Session, spec: ToolSpec, after_call: Callable[[CallResult], None]) -> Tool:
    def run(arguments: dict[str, Any]) -> CallResult:
        result = session.invoke(spec.name, arguments)
        after_call(result)
        return result

    return _tool(
        spec.name,
        tool_description(spec),
        mcp_input_schema(spec.args_model),
        mcp_annotations(spec),
        run,
        dict(ENVELOPE_SCHEMA) if spec.output == "json" else None,
    )


def build_server(session: Session, *, save_path: str | Path | None = None) -> MCPServer:
    """An :class:`MCPServer` publishing the tools ``session`` offers in its current mode.

    Parameters
    ----------
    session
        The session every call goes to (its mode is fixed for the server's lifetime).
    save_path
        When given, the state is written there (atomically) after every call that changed it.
    """

    def after_call(result: CallResult) -> None:
        if save_path is not None and result.changes and session.state is not None:
            _write_atomic(Path(save_path), session.state.to_json())

    specs = session.visible_specs()
    tools = [_spec_tool(session, spec, after_call) for spec in specs]
    if any(spec.needs_confirm for spec in specs):
        gate = {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        }
        token_schema = mcp_input_schema(TokenArgs)

        def confirm(arguments: dict[str, Any]) -> CallResult:
            result = _with_token(arguments, session.confirm, "confirm")
            after_call(result)
            return result

        tools.append(
            _tool(
                "confirm",
                "执行一个需要确认的调用：参数 token 为预览给出的确认令牌。"
                "只有在用户明确同意后才能调用。",
                token_schema,
                gate,
                confirm,
                None,
            )
        )
        tools.append(
            _tool(
                "reject",
                "放弃一个需要确认的调用：参数 token 为预览给出的确认令牌，不做任何修改。",
                token_schema,
                gate,
                lambda a: _with_token(a, session.reject, "reject"),
                None,
            )
        )

    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions=session.rules(),
        version=__version__,
        tools=tools,
        log_level="WARNING",
    )
    server.add_resource(
        FunctionResource(
            uri="smartflow://state",
            name="state",
            mime_type="application/json",
            description="当前日程状态（规格 §3.1 的 JSON）",
            fn=lambda: session.state.to_json() if session.state is not None else "null",
        )
    )
    server.add_resource(
        FunctionResource(
            uri="smartflow://changes",
            name="changes",
            mime_type="application/json",
            description="本会话已应用的变更记录",
            fn=lambda: json.dumps([c.to_dict() for c in session.changes], ensure_ascii=False),
        )
    )
    return server


def _with_token(
    arguments: dict[str, Any], action: Callable[[str], CallResult], name: str
) -> CallResult:
    token = arguments.get("token")
    extra = sorted(set(arguments) - {"token"})
    if extra:
        msg = f"参数错误：未知参数 {extra[0]}。"
    elif not isinstance(token, str):
        msg = "参数错误：缺少必填参数 token（字符串）。"
    else:
        return action(token)
    return CallResult(name, msg, status="error", error_code="invalid_args")


_ID_RE = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def parse_error_reply(line: str) -> mcp_types.JSONRPCError | None:
    """The JSON-RPC error for a stdin line the SDK cannot read, when the line carries an id.

    ``None`` for a valid message, a blank line, or a malformed line with no recoverable id.
    """
    if not line.strip():
        return None
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        not_json = any(e["type"] == "json_invalid" for e in exc.errors())
    else:
        return None
    request_id: Any = None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        request_id = data.get("id")
    elif data is None and (found := _ID_RE.search(line)):
        try:
            request_id = json.loads(found.group(1))
        except ValueError:
            request_id = None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if isinstance(request_id, str) and request_id.encode("utf-8", "replace").decode() != request_id:
        return None  # an id with a lone surrogate cannot be written back
    code, message = (
        (mcp_types.PARSE_ERROR, "Parse error: the line is not valid JSON")
        if not_json
        else (mcp_types.INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC message")
    )
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message)
    )


class _ReplyingLines:
    """stdin lines for the SDK's stdio transport; malformed lines with an id are answered here
    (through the transport's own writer, so frames never interleave) and not passed on."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self.write_stream: Any = None
        self._ready = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        self.write_stream = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            error = parse_error_reply(line)
            if error is None:
                yield line
                continue
            await self._ready.wait()
            await self.write_stream.send(SessionMessage(error))


async def serve_stdio(server: MCPServer, stdin: Any = None, stdout: Any = None) -> None:
    """Serve ``server`` over stdio (or the given text streams) until stdin closes, answering
    malformed lines that carry an id (see the module docstring)."""
    if stdin is None:
        stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    lines = _ReplyingLines(stdin)
    async with stdio_server(stdin=cast(Any, lines), stdout=stdout) as (read_stream, write_stream):
        lines.attach(write_stream)
        # The SDK exposes no public handle on the low-level server; MCPServer.run_stdio_async
        # runs it the same way.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def run_stdio(
    state_path: str | Path | None,
    *,
    mode: Mode | str = Mode.FIRST_FULL,
    save_path: str | Path | None = None,
    enabled_tools: tuple[str, ...] = (),
    max_time_limit_s: float = 10.0,
    num_workers: int = 1,
    database: Any = None,
    db_user_id: int | None = None,
    window: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> None:
    """Serve one session over stdio until the client closes the stream.

    ``state_path`` is the §3.1 JSON (``None``: no loaded schedule). With a ``database`` (a
    ``smartflow_engine.store`` backend), ``db_user_id`` and a ``window`` (first and last
    ``(week, day_of_week)``), the session opens on that window of the database and the
    ``commit``/``reload`` tools write and read it. Raises
    :class:`~smartflow_engine.state.StateError` for an unreadable or invalid state file,
    ``StoreError`` for a bad window and
    :class:`~smartflow_engine.tools_adapter.session.SessionError` for a bad mode or tool name.
    """
    state = ScheduleState.from_json(Path(state_path)) if state_path is not None else None
    if database is not None and window is not None and db_user_id is not None:
        from ..store import window_days

        state = database.load_window(db_user_id, window_days(*window))
    session = Session(
        state,
        mode=mode,
        enabled_tools=enabled_tools,
        max_time_limit_s=max_time_limit_s,
        num_workers=num_workers,
        store=database,
        db_user_id=db_user_id,
    )
    anyio.run(serve_stdio, build_server(session, save_path=save_path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="smartflow-mcp", description="SmartFlow MCP server (stdio)"
    )
    parser.add_argument("--state", help="state JSON file (the spec's §3.1 format)")
    parser.add_argument("--mode", default=Mode.FIRST_FULL.value, choices=[m.value for m in Mode])
    parser.add_argument("--save", help="write the state here after every change")
    parser.add_argument(
        "--enable",
        action="append",
        default=[],
        help="offer a tool hidden in this mode (repeatable)",
    )
    parser.add_argument(
        "--time-limit", type=float, default=10.0, help="cap on any solver time limit, seconds"
    )
    ns = parser.parse_args(argv)
    try:
        run_stdio(
            ns.state,
            mode=ns.mode,
            save_path=ns.save,
            enabled_tools=tuple(ns.enable),
            max_time_limit_s=ns.time_limit,
        )
    except ValueError as exc:  # StateError / SessionError: one line, no traceback
        print(f"smartflow mcp: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

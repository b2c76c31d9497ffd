"""MCP server over one :class:`Session`, built with the official ``mcp`` SDK (v2 API, ``MCPServer``).

Every tool the session offers in its mode is published under its own name with the registry's
schema (``schemas.tool_schemas(fmt="mcp")``: optional arguments are optional, not nullable); the
session validates the arguments, so a bad argument comes back as a tool result with
``isError: true`` and the same Chinese reply the :class:`Toolbox` gives, never as a protocol
error. A tool's own refusal (a conflict, a locked task, a missing id) is ``isError: true`` too,
its text unchanged. JSON tools also return structured content.
The P1-C rules of the session's mode are the server's instructions.

The confirm gate (DESIGN: the user confirms, never the model). A confirm-required tool
(``commit``, ``upsert_task_class``) does not act when the model calls it: the server sends the
client an elicitation request (MCP's ``elicitation/create``, the SDK's ``ctx.elicit``) carrying the
change summary, and runs the call only when the user accepts; a decline or a cancel writes
nothing and is an ``isError`` result saying so. No tool confirms: the model cannot approve its own
write. A client that does not support elicitation gets an ``isError`` refusal saying how to
confirm, unless the operator started the server with ``auto_confirm`` (``smartflow mcp
--auto-confirm``): then the host's own per-call approval step stands for the user's confirmation
and a confirm-required call runs when it is made.

User requests (issue 27). The host starts a new request by putting
``{"smartflow/request": {"key": ..., "mode": ..., "frozen_days": ..., "existing_fixed": ...}}``
in a ``tools/call``'s
``_meta`` (MCP's place for what the client adds beside the model's arguments; the model never
sees or writes it, so it cannot reset its own round cap). ``key`` (required, 1-64 characters) is
the host's id of the user message: the first call carrying a new key starts the request (in
``mode`` or the window's default, with ``frozen_days`` and ``existing_fixed`` when given) before
it runs, later calls
with the same key change nothing, so the host may attach it to every call of that message. A
request that changes the mode republishes the tool list and sends ``tools/list_changed``. A bad
value refuses the call (``invalid_request``) and starts nothing. See :func:`meta_request`.

Run over stdio: ``python -m smartflow_engine.tools_adapter.mcp.server --state FILE`` (what
``smartflow mcp --state FILE`` calls through :func:`run_stdio`).

A line on stdin that is not a JSON-RPC message is dropped by the SDK's stdio transport without a
reply, so a client waiting on that request's id would wait for ever. :func:`serve_stdio` reads the
lines first: a malformed line that carries an id gets a JSON-RPC error with that id (``-32700``
parse error for text that is not JSON, ``-32600`` invalid request for JSON that is not a valid
message); one whose id is no valid id (``[1]``, an object, ``null``, ``1.5``) gets the error
with id ``null``, as JSON-RPC says for an id that cannot be determined; a malformed line without
an id (a notification) gets none. An unknown prompt is an invalid-params error (``-32602``).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable
from io import TextIOWrapper
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp_types
from mcp.server.mcpserver import (
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.resolve import build_resolver_plans
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.request_state import RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, ValidationError

from ... import __version__
from ...files import write_atomic
from ...state import ScheduleState
from ..core import pipeline
from ..core.render import DAY_LABELS
from ..core.schemas import (
    CONFIRM_NOTE,
    mcp_annotations,
    mcp_input_schema,
    mcp_output_schema,
    tool_description,
)
from ..core.spec import Mode, ToolSpec
from ..sessions.prompts import mcp_rules
from ..sessions.session import CallResult, PendingCall, Session
from ..sessions.snapshot import without_token

if TYPE_CHECKING:
    from ...store.protocol import ScheduleStore

SERVER_NAME = "smartflow-engine"
# The ``_meta`` key of a tools/call that starts a new user request (see the module docstring).
REQUEST_META = "smartflow/request"
_REQUEST_FIELDS = frozenset({"key", "mode", "frozen_days", "existing_fixed"})
log = logging.getLogger(__name__)


class _RawArguments(FuncMetadata):
    """Hands the call's arguments to the tool untouched: the session validates them itself, so the
    model reads the same reply through MCP as through any other adapter."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class _NoFields(ArgModelBase):
    pass


class Approval(BaseModel):
    """The elicitation's form: nothing to fill in, the user's accept is the confirmation."""


# On MCP a confirm-required call asks the user itself (no token reaches the model).
MCP_CONFIRM_NOTE = (
    "（需用户确认：调用时会请用户确认变更摘要，用户同意后才执行，拒绝则不做任何修改。）"
)
AUTO_CONFIRM_FLAG = "--auto-confirm"
# The first protocol whose tools/call carries the user's confirmation inside the call's own
# round trips (``input_required`` results), over stdio and HTTP alike.
INPUT_REQUIRED_VERSION = "2026-07-28"


class _Server(MCPServer):
    """The SDK's server, with an unknown prompt answered as invalid params (-32602; the SDK
    answers error code 0)."""

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(code=mcp_types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        return await super().get_prompt(name, arguments, context)


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
    fn: Callable[..., Any],
    output_schema: dict[str, Any] | None,
) -> Tool:
    meta = _RawArguments(arg_model=_NoFields, output_schema=output_schema)
    return Tool(
        fn=fn,
        name=name,
        description=description,
        parameters=parameters,
        fn_metadata=meta,
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(
            read_only_hint=annotations["readOnlyHint"],
            destructive_hint=annotations["destructiveHint"],
            idempotent_hint=annotations["idempotentHint"],
            open_world_hint=annotations["openWorldHint"],
        ),
    )


def meta_request(meta: Any) -> dict[str, Any] | str | None:
    """The request a call's ``_meta`` starts: ``None`` when it carries no :data:`REQUEST_META`,
    else :meth:`Session.begin_request`'s arguments (``key``, ``mode``, ``frozen_days``,
    ``existing_fixed``) or a
    one-line Chinese reason why the value is refused."""
    if not isinstance(meta, dict) or REQUEST_META not in meta:
        return None
    value = meta[REQUEST_META]
    if not isinstance(value, dict):
        return f"_meta.{REQUEST_META} 应为对象（key 必填，mode、frozen_days 可选）"
    unknown = sorted(str(k) for k in set(value) - _REQUEST_FIELDS)
    if unknown:
        return f"_meta.{REQUEST_META} 含未知字段：{'、'.join(unknown)}"
    key = value.get("key")
    if not isinstance(key, str) or not 1 <= len(key) <= 64:
        return f"_meta.{REQUEST_META}.key 应为 1-64 个字符的字符串（宿主的用户消息编号）"
    mode = value.get("mode")
    if mode is not None and mode not in {m.value for m in Mode}:
        return f"_meta.{REQUEST_META}.mode 应为 {'、'.join(m.value for m in Mode)} 之一"
    days = value.get("frozen_days")
    if isinstance(days, float) and days.is_integer():
        days = int(days)
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 0):
        return f"_meta.{REQUEST_META}.frozen_days 应为不小于 0 的整数"
    fixed = value.get("existing_fixed")
    if fixed is not None and not isinstance(fixed, bool):
        return f"_meta.{REQUEST_META}.existing_fixed 应为 true 或 false"
    return {"key": key, "mode": mode, "frozen_days": days, "existing_fixed": fixed}


class _Requests:
    """Starts the user requests the calls' ``_meta`` asks for, on ``session``; republishes the
    server's tools when a request changed the mode."""

    def __init__(self, session: Session, publish: Callable[[], None]) -> None:
        self.session = session
        self.publish = publish

    def start(self, spec: ToolSpec, ctx: Context) -> tuple[CallResult | None, bool]:
        """``(refusal or None, whether the tool list changed)`` for the call ``ctx`` carries."""
        try:
            meta = ctx.request_context.meta
        except ValueError:  # no request (a direct call in tests)
            return None, False
        asked = meta_request(dict(meta) if meta is not None else None)
        if asked is None:
            return None, False
        if isinstance(asked, str):
            return _gate_refusal(spec, "invalid_request", f"{asked}。"), False
        before = self.session.mode
        try:
            self.session.begin_request(
                asked["mode"],
                asked["frozen_days"],
                key=asked["key"],
                existing_fixed=asked["existing_fixed"],
            )
        except ValueError as exc:  # SessionError (e.g. more frozen days than allowed)
            text = f"新请求的参数无效（{exc}）。"
            return _gate_refusal(spec, "invalid_request", text), False
        changed = self.session.mode != before
        if changed:
            self.publish()
        return None, changed


async def _list_changed(ctx: Context) -> None:
    """Tell the client the tool list changed (best effort: a client may not listen)."""
    try:
        await ctx.request_context.session.send_tool_list_changed()
    except Exception:  # a closed or stateless transport: the next tools/list shows it anyway
        log.debug("tools/list_changed not sent", exc_info=True)


def _spec_tool(
    session: Session,
    spec: ToolSpec,
    after_call: Callable[[CallResult], None],
    auto_confirm: bool,
    requests: _Requests,
) -> Tool:
    async def fn(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        # A worker thread: a solver call must not stall the event loop; the session lock
        # serialises calls.
        refused_start, changed = await anyio.to_thread.run_sync(requests.start, spec, ctx)
        if changed:
            await _list_changed(ctx)
        if refused_start is not None:
            return to_call_tool_result(refused_start)
        result = await anyio.to_thread.run_sync(session.invoke, spec.name, arguments)
        after_call(result)
        return to_call_tool_result(result)

    description = tool_description(spec)
    if spec.needs_confirm:
        description = description.replace(CONFIRM_NOTE, MCP_CONFIRM_NOTE)
    tool = _tool(
        spec.name,
        description,
        mcp_input_schema(spec.args_model),
        mcp_annotations(spec),
        fn,
        mcp_output_schema(spec),
    )
    if spec.needs_confirm:
        _gate(tool, session, spec, after_call, auto_confirm, requests)
    return tool


def _gate(
    tool: Tool,
    session: Session,
    spec: ToolSpec,
    after_call: Callable[[CallResult], None],
    auto_confirm: bool,
    requests: _Requests,
) -> None:
    """Make ``tool`` (a confirm-required one) ask the user before it runs.

    The question is the SDK's resolver (``Resolve`` returning ``Elicit``), so it travels the way
    the negotiated protocol wants: a mid-call ``elicitation/create`` request (up to 2025-11-25)
    or an ``input_required`` result the client answers on its retry (2026-07-28, over any
    transport). The resolver may run once per round, so it holds nothing: it previews the call
    (:meth:`Session.preview_call`) and asks with the preview, whose number is the digest of
    what it describes; the SDK takes an answer only for the question exactly as it was asked.
    The tool body runs the call only if it still does what that round's question showed
    (:meth:`Session.confirm_call`): a write that came in while the user read is never
    approved with it (issue 44 item 1).
    """
    shown: dict[str, PendingCall] = {}  # what each request's question showed, by request id

    def ask(arguments: dict[str, Any], ctx: Context) -> Elicit[Approval] | CallResult | bool:
        refused_start, _ = requests.start(spec, ctx)  # (a repeated key starts nothing)
        if refused_start is not None:
            return refused_start
        found = session.preview_call(spec.name, arguments)
        if isinstance(found, CallResult):
            return found  # refused before any confirm, or nothing to confirm (it ran)
        while len(shown) >= _MAX_SHOWN:  # questions a client never answered
            shown.pop(next(iter(shown)))
        shown[ctx.request_id] = found
        if auto_confirm:  # the operator said the host's own approval step is the user's
            return True
        if not _supports_elicitation(ctx):
            return _gate_refusal(spec, "confirm_unsupported", _cannot_ask(spec, ctx))
        return Elicit(_summary(spec, found), Approval)

    def run(arguments: dict[str, Any], answer: Any, request_id: str) -> CallResult:
        seen = shown.pop(request_id, None)
        if isinstance(answer, DeclinedElicitation | CancelledElicitation):
            code, text = (
                ("user_declined", "用户拒绝了确认，未执行，没有任何修改。")
                if isinstance(answer, DeclinedElicitation)
                else ("user_cancelled", "用户未确认（已取消），未执行，没有任何修改。")
            )
            return _gate_refusal(spec, code, text)
        if isinstance(answer.data, CallResult):
            return answer.data
        if seen is None:  # the body runs only after this request's question: never here
            return _gate_refusal(spec, "confirm_unsupported", f"{spec.name} 未执行：没有预览。")
        return session.confirm_call(spec.name, arguments, seen)

    async def fn(
        arguments: dict[str, Any], ctx: Context, approval: ElicitationResult[Approval]
    ) -> CallToolResult:
        result = await anyio.to_thread.run_sync(run, arguments, approval, ctx.request_id)
        after_call(result)
        return to_call_tool_result(result)

    resolved = {"approval": (Resolve(ask), True)}  # True: the body sees accept/decline/cancel
    tool.fn = fn
    tool.resolved_params = dict(resolved)
    tool.resolver_plans = build_resolver_plans(resolved, {"arguments"})


# Questions kept per server while their answer is awaited (a client may drop a question).
_MAX_SHOWN = 64


def _supports_elicitation(ctx: Context) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` counts)."""
    found = ctx.client_capabilities.elicitation if ctx.client_capabilities is not None else None
    return found is not None and (found.form is not None or found.url is None)


def _no_back_channel(ctx: Context) -> bool:
    """A protocol before 2026-07-28 on a transport that cannot carry a server-to-client request
    (stateless streamable HTTP): the question cannot be asked, whatever the client supports."""
    version = ctx.protocol_version
    if version is None or is_version_at_least(version, INPUT_REQUIRED_VERSION):
        return False
    try:
        return not ctx.request_context.session.can_send_request
    except (AttributeError, ValueError):
        return False


def _cannot_ask(spec: ToolSpec, ctx: Context) -> str:
    """Why the user cannot be asked here, and how to confirm instead."""
    if _no_back_channel(ctx):
        return (
            f"{spec.name} 需要用户确认，但本连接（MCP 协议 {ctx.protocol_version}，无状态的"
            "streamable HTTP）无法向客户端发出确认请求，本次未执行，没有任何修改。请用 MCP "
            f"{INPUT_REQUIRED_VERSION} 或更新的协议连接（确认随工具结果往返，任何传输都可用；"
            '官方 mcp 客户端的 mode="auto" 即是），或改用 stdio；或由宿主通过 HTTP API 的'
            " confirm 接口确认。"
        )
    return (
        f"{spec.name} 需要用户确认，但当前 MCP 客户端不支持确认请求（elicitation），"
        "本次未执行，没有任何修改。请改用支持 elicitation 的客户端，由用户在弹出的确认中"
        f"同意；或由运维以 smartflow mcp {AUTO_CONFIRM_FLAG} 启动服务器，由宿主应用在每次"
        "工具调用前的批准步骤代替确认。"
    )


def _summary(spec: ToolSpec, held: PendingCall) -> str:
    """What the user is asked to approve: the held call's preview (the change summary and its
    number), without the token line the session adds for its host."""
    body = "\n".join(without_token(held.preview).splitlines()[1:])
    return (
        f"智能排程请求执行 {spec.name}（写入数据库）：\n{body}\n"
        "同意后立即执行；拒绝或取消则不做任何修改。"
    )


def _gate_refusal(spec: ToolSpec, code: str, text: str) -> CallResult:
    """A refusal the server decides, in the tool's reply shape (``X失败：text``)."""
    return pipeline.refusal(spec, code, text)


class _SessionServer(_Server):
    """The SDK's server, answering a call to a tool it does not publish (unknown, or not offered
    in the session's mode) through the session: the model reads the refusal every other surface
    gives (``调用失败：未知工具 …``), not the SDK's ``Unknown tool: …``."""

    def __init__(
        self, session: Session, after_call: Callable[[CallResult], None], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._session = session
        self._after_call = after_call

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._tool_manager.get_tool(name) is not None:
            return await super().call_tool(name, arguments, context)
        result = await anyio.to_thread.run_sync(self._session.invoke, name, arguments)
        self._after_call(result)
        return to_call_tool_result(result)


def build_server(
    session: Session,
    *,
    save_path: str | Path | None = None,
    auto_confirm: bool = False,
    request_state: RequestStateSecurity | None = None,
) -> MCPServer:
    """An :class:`MCPServer` publishing the tools ``session`` offers in its current mode.

    Parameters
    ----------
    session
        The session every call goes to; its tools are those of the current request's mode (a
        request started through ``_meta`` that changes the mode republishes them).
    save_path
        When given, the state is written there (atomically) after every call that changed it.
    auto_confirm
        The operator's choice (``smartflow mcp --auto-confirm``) that the host's own approval of
        each tool call is the user's confirmation: confirm-required calls then run when made.
        Off by default: they run only when the user accepts the server's elicitation request.
    request_state
        How the server seals the ``requestState`` of a multi-round-trip call (2026-07-28): the
        SDK's per-server key when not given (one server for the whole stdio connection); the
        streamable-HTTP endpoint, which builds a server per HTTP request, passes its
        deployment's shared key (:mod:`.http`).
    """

    def after_call(result: CallResult) -> None:
        if save_path is not None and result.changes and session.state is not None:
            write_atomic(Path(save_path), session.state.to_json())

    def publish() -> None:
        # The SDK has no public call to replace the tool set at once; the tool manager's table
        # is what tools/list and tools/call read.
        fresh = {
            spec.name: _spec_tool(session, spec, after_call, auto_confirm, requests)
            for spec in session.visible_specs()
        }
        table = server._tool_manager._tools  # noqa: SLF001 (the SDK has no public tool table)
        table.clear()
        table.update(fresh)

    requests = _Requests(session, publish)
    tools = [
        _spec_tool(session, spec, after_call, auto_confirm, requests)
        for spec in session.visible_specs()
    ]

    server: MCPServer = _SessionServer(
        session,
        after_call,
        name=SERVER_NAME,
        instructions=mcp_rules(session.rules()),
        version=__version__,
        tools=tools,
        log_level="WARNING",
        request_state_security=request_state,
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


def build_unavailable_server(reason: str, mode: Mode | str = Mode.FIRST_FULL) -> MCPServer:
    """A server for a session that could not open (issue 45 item 7): a client that starts
    ``smartflow mcp`` with a missing or unreadable state file (a relative path resolved in the
    client's own directory, say) would otherwise see only "Connection closed". This one completes
    the handshake, says ``reason`` in its instructions and answers every tool of ``mode`` with
    it as an error, so the cause reaches the user through the client."""
    from ..core.registry import REGISTRY, tool_names

    async def fn(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)

    tools = [
        _tool(
            name,
            tool_description(REGISTRY[name]),
            mcp_input_schema(REGISTRY[name].args_model),
            mcp_annotations(REGISTRY[name]),
            fn,
            None,
        )
        for name in tool_names(mode)
    ]
    return MCPServer(
        SERVER_NAME, instructions=reason, version=__version__, tools=tools, log_level="WARNING"
    )


def run_unavailable_stdio(reason: str, mode: Mode | str = Mode.FIRST_FULL) -> None:
    """Serve :func:`build_unavailable_server` over stdio until the client closes the stream."""
    anyio.run(serve_stdio, build_unavailable_server(reason, mode))


_ID_RE = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


def parse_error_reply(line: str) -> mcp_types.JSONRPCError | None:
    """The JSON-RPC error for a stdin line the SDK cannot read or would drop, when the line
    carries an id (``id: null`` in the error when the line's id is no valid id).

    ``None`` for a valid message, a blank line, or a malformed line with no recoverable id.
    """
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and "id" in data and not _is_request_id(data["id"]):
        # The SDK would take it for a notification and drop it: the sender waits for ever.
        return _error_reply(None, not_json=False)
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        not_json = any(e["type"] == "json_invalid" for e in exc.errors())
    else:
        return None
    request_id: Any = None
    if isinstance(data, dict):
        request_id = data.get("id")
    elif data is None and (found := _ID_RE.search(line)):
        try:
            request_id = json.loads(found.group(1))
        except ValueError:
            request_id = None
    if not _is_request_id(request_id):
        return None
    if isinstance(request_id, str) and request_id.encode("utf-8", "replace").decode() != request_id:
        return None  # an id with a lone surrogate cannot be written back
    return _error_reply(request_id, not_json=not_json)


def _is_request_id(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | str)


def _error_reply(request_id: Any, *, not_json: bool) -> mcp_types.JSONRPCError:
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
        lowlevel = server._lowlevel_server  # noqa: SLF001
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(
    state_path: str | Path | None,
    *,
    mode: Mode | str = Mode.FIRST_FULL,
    save_path: str | Path | None = None,
    enabled_tools: tuple[str, ...] = (),
    max_time_limit_s: float = 10.0,
    num_workers: int = 1,
    database: ScheduleStore | None = None,
    db_user_id: int | None = None,
    window: tuple[tuple[int, int], tuple[int, int]] | None = None,
    auto_confirm: bool = False,
    day_labels: str | None = None,
) -> None:
    """Serve one session over stdio until the client closes the stream.

    ``state_path`` is the §3.1 JSON (``None``: no loaded schedule). With a ``database`` (a
    ``smartflow_engine.store`` backend), ``db_user_id`` and a ``window`` (first and last
    ``(week, day_of_week)``), the session opens on that window of the database and the
    ``commit``/``reload`` tools write and read it. ``auto_confirm``: see :func:`build_server`.
    ``day_labels``: ``index`` / ``weekday``, how text replies name a day (default: the
    ``SMARTFLOW_DAY_LABELS`` setting).
    Raises
    :class:`~smartflow_engine.state.StateError` for an unreadable or invalid state file,
    ``StoreError`` for a bad window and
    :class:`~smartflow_engine.tools_adapter.sessions.session.SessionError` for a bad mode or tool name.
    """
    state = ScheduleState.from_json(Path(state_path)) if state_path is not None else None
    from_database = database is not None and window is not None and db_user_id is not None
    if from_database:
        from ...store import window_days

        assert database is not None and window is not None and db_user_id is not None
        state = database.load_window(db_user_id, window_days(*window))
    session = Session(
        state,
        mode=mode,
        enabled_tools=enabled_tools,
        max_time_limit_s=max_time_limit_s,
        num_workers=num_workers,
        store=database,
        db_user_id=db_user_id,
        day_labels=cast(Any, day_labels),  # checked by the Session (SessionError)
        db_window=from_database,
    )
    anyio.run(serve_stdio, build_server(session, save_path=save_path, auto_confirm=auto_confirm))


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
    parser.add_argument(
        AUTO_CONFIRM_FLAG,
        action="store_true",
        help="the host approves every tool call itself: run confirm-required calls when made "
        "(default: ask the user through an elicitation request)",
    )
    parser.add_argument(
        "--day-labels",
        choices=list(DAY_LABELS),
        help="how text replies name a day: index (第6天) or weekday (第6天(星期六))",
    )
    ns = parser.parse_args(argv)
    try:
        run_stdio(
            ns.state,
            mode=ns.mode,
            save_path=ns.save,
            enabled_tools=tuple(ns.enable),
            max_time_limit_s=ns.time_limit,
            auto_confirm=ns.auto_confirm,
            day_labels=ns.day_labels,
        )
    except ValueError as exc:  # StateError / SessionError: one line, no traceback
        print(f"smartflow mcp: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

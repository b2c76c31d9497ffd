"""A typed OpenAPI document (issue 30 item 7): the window's JSON schema and one typed route per tool.

The generic routes take the window and a tool's arguments as JSON objects and validate them
themselves, so that a bad window or argument gets the engine's own reply (a Chinese refusal,
``status="error"``) rather than a framework 422. Their OpenAPI document now says what those objects
are, so a generated client is typed:

- the window (``ScheduleState``'s JSON schema, §3.1 of the tool-layer design) is a component, and
  every ``state`` field of a request or a reply refers to it;
- every tool has a route of its own, ``POST /v1/sessions/{session_id}/tools/{name}``, whose body
  is that tool's argument schema (the same the model reads over MCP) under a component
  ``<Tool>Args``; it answers exactly as ``POST .../calls`` with ``{"tool": name, "args": body}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool

from ...state import ScheduleState
from ..core.schemas import input_schema
from ..core.spec import ToolSpec
from .context import Ctx, Ref
from .errors import ApiError
from .models import CallOut

STATE_COMPONENT = "ScheduleState"
# The models whose ``state`` field carries a window (a request's or a reply's).
STATE_FIELDS = ("StateCall", "SessionCreate", "StatelessCallOut", "StateOut")


def args_component(name: str) -> str:
    """``place`` -> ``PlaceArgs``: the component of a tool's argument schema."""
    return "".join(part.capitalize() for part in name.split("_")) + "Args"


def install(app: FastAPI, table: Mapping[str, ToolSpec]) -> None:
    """Add one typed route per tool and the components to ``app`` (before its first request)."""
    from .routes_sessions import ONE, answer

    for name in sorted(table):
        _add_tool_route(app, name, answer, ONE)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        _add_components(schema, table)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _add_tool_route(app: FastAPI, name: str, answer: Any, responses: Any) -> None:
    async def call_tool(ctx: Ctx, ref: Ref, request: Request) -> Any:
        raw = await request.body()
        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError:  # not JSON, or not UTF-8 text at all
            raise ApiError(422, "invalid_request", "the body is not JSON") from None

        # The session call is synchronous (a solver may run): off the event loop, as the
        # generic route runs.
        def run() -> Any:
            with ctx.use(ref.principal, ref.session_id, read_only=ctx.reads_only(name)) as s:
                return answer(ctx.invoke(s, name, args))

        return await run_in_threadpool(run)

    ref = f"#/components/schemas/{args_component(name)}"
    app.add_api_route(
        f"/v1/sessions/{{session_id}}/tools/{name}",
        call_tool,
        methods=["POST"],
        response_model=CallOut,
        responses=responses,
        name=f"call_{name}",
        operation_id=f"call_{name}",
        summary=f"Call {name} in a session",
        description=f'The same as `POST .../calls` with `{{"tool": "{name}", "args": body}}`.',
        tags=["tools"],
        openapi_extra={
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": {"$ref": ref}}},
            }
        },
    )


def _add_components(schema: dict[str, Any], table: Mapping[str, ToolSpec]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    window = ScheduleState.model_json_schema(ref_template="#/components/schemas/{model}")
    for key, value in window.pop("$defs", {}).items():
        components.setdefault(key, value)
    components[STATE_COMPONENT] = window
    for model in STATE_FIELDS:
        props = components.get(model, {}).get("properties", {})
        if "state" in props:
            old = props["state"]
            ref = {"$ref": f"#/components/schemas/{STATE_COMPONENT}"}
            nullable = any(o.get("type") == "null" for o in old.get("anyOf", ()))
            props["state"] = {
                **({"anyOf": [ref, {"type": "null"}]} if nullable else ref),
                **{k: old[k] for k in ("description", "title", "default") if k in old},
            }
    for name, spec in table.items():
        args = input_schema(spec.args_model)
        args["title"] = args_component(name)
        components[args_component(name)] = args

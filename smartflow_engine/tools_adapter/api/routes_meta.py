"""Metadata routes: health, tool schemas, prompt rules."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from ... import __version__
from ..core.schemas import FORMATS, tool_schemas
from ..core.spec import Mode
from ..sessions.prompts import prompt_rules
from .context import Ctx, Principal
from .errors import ERRORS
from .models import HealthOut, RulesOut, ToolsOut

router = APIRouter(tags=["meta"])


@router.get("/health", response_model=HealthOut, responses={503: {"model": HealthOut}})
async def health(ctx: Ctx) -> Any:
    """Liveness: answered on the event loop, never behind a tool call (those run in threads or
    worker processes). 503 ``degraded`` when the solver's worker processes cannot start (the
    solving tools then answer 503 ``solver_unavailable``)."""
    pool = ctx.solver.health()
    ok = not pool.startswith("cannot start")
    out = HealthOut(
        status="ok" if ok else "degraded",
        version=__version__,
        tools=len(ctx.table),
        solver_pool=pool,
    )
    return out if ok else JSONResponse(out.model_dump(), status_code=503)


@router.get("/v1/tools", response_model=ToolsOut, responses=ERRORS)
def list_tools(
    ctx: Ctx,
    _principal: Principal,
    fmt: Annotated[Literal["openai", "anthropic", "mcp"], Query()] = "openai",
    mode: Annotated[Mode | None, Query()] = None,
) -> ToolsOut:
    assert fmt in FORMATS
    return ToolsOut(
        mode=mode, format=fmt, tools=tool_schemas(fmt, mode, specs=list(ctx.table.values()))
    )


@router.get("/v1/prompts/{mode}", response_model=RulesOut, responses=ERRORS)
def get_rules(_principal: Principal, mode: Mode) -> RulesOut:
    return RulesOut(mode=mode, rules=prompt_rules(mode))

"""Stateless routes: one tool call on a posted window (no session)."""

from __future__ import annotations

from fastapi import APIRouter

from ...state import ScheduleState, StateError
from ..core import registry
from ..core.pipeline import unknown_tool_text
from ..sessions.session import Session
from ..tools.analysis import ANALYSIS_TOOLS
from .context import ApiContext, Ctx, Principal
from .errors import ERRORS, NOT_FOUND, UNAVAILABLE, ApiError
from .models import StateCall, StatelessCallOut, ToolName, call_out
from .solver_pool import SolverUnavailable

router = APIRouter(tags=["stateless"])

FEASIBILITY_TOOL = "check_feasibility"
PROPOSAL_TOOL = "propose_placement"
ANALYZERS = frozenset(spec.name for spec in ANALYSIS_TOOLS)
RESPONSES = {**ERRORS, **NOT_FOUND, **UNAVAILABLE}


def load_state(data: dict[str, object]) -> ScheduleState:
    try:
        return ScheduleState.from_json(data)
    except StateError as exc:
        raise ApiError(422, "invalid_state", f"state: {exc}") from None
    except RecursionError:
        raise ApiError(422, "invalid_state", "state: nested too deeply") from None


def stateless(ctx: ApiContext, name: str, body: StateCall) -> StatelessCallOut:
    spec = ctx.table.get(name)
    if spec is None:
        offered = [n for n, s in ctx.table.items() if s.modes]
        raise ApiError(404, "unknown_tool", unknown_tool_text(name, offered))
    if spec.needs_confirm:
        raise ApiError(422, "needs_session", f"{name} needs confirmation: call it inside a session")
    state = load_state(body.state) if spec.needs_state else None  # refuse a bad state here
    if ctx.solver.handles(name) and registry.REGISTRY.get(name) is spec:
        try:
            result, after = ctx.solver.stateless_call(
                body.state if state is not None else None,
                name,
                body.args,
                ctx.max_time_limit_s,
                ctx.num_workers,
                ctx.calibration,
            )
        except SolverUnavailable as exc:
            raise ApiError(503, "solver_unavailable", str(exc)) from None
        return call_out(result, StatelessCallOut, state=after)
    # a hidden tool (offered in no mode) stays hidden here too
    session = Session(
        state,
        specs=[spec],
        enabled_tools=[name] if spec.modes else [],
        max_time_limit_s=ctx.max_time_limit_s,
        num_workers=ctx.num_workers,
        calibration=ctx.calibration,
    )
    result = session.invoke(name, body.args)
    after = session.state.to_dict() if result.changes and session.state is not None else None
    return call_out(result, StatelessCallOut, state=after)


@router.post("/v1/feasibility", response_model=StatelessCallOut, responses=RESPONSES)
def feasibility(ctx: Ctx, _principal: Principal, body: StateCall) -> StatelessCallOut:
    """Exact feasibility of the posted window (the ``check_feasibility`` tool)."""
    return stateless(ctx, FEASIBILITY_TOOL, body)


@router.post("/v1/proposal", response_model=StatelessCallOut, responses=RESPONSES)
def proposal(ctx: Ctx, _principal: Principal, body: StateCall) -> StatelessCallOut:
    """A rough placement proposal for the posted window (the ``propose_placement`` tool)."""
    return stateless(ctx, PROPOSAL_TOOL, body)


@router.post("/v1/analyze/{name}", response_model=StatelessCallOut, responses=RESPONSES)
def analyze(ctx: Ctx, _principal: Principal, name: ToolName, body: StateCall) -> StatelessCallOut:
    """Any analyzer (``analyze_load``, ..., ``analyze_health``) on the posted window."""
    if name not in ANALYZERS or name not in ctx.table:
        raise ApiError(404, "unknown_tool", f"unknown analyzer {name}")
    return stateless(ctx, name, body)


@router.post("/v1/tools/{name}/call", response_model=StatelessCallOut, responses=RESPONSES)
def call_stateless(
    ctx: Ctx, _principal: Principal, name: ToolName, body: StateCall
) -> StatelessCallOut:
    """Any registered tool on the posted window; a write returns the state after it."""
    return stateless(ctx, name, body)

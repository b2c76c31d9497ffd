"""``POST /v1/rough-build`` (issue 41 item 5): SmartFlow-Agent's rough build by the proposal
search, on the server's database, answered in the backend's coordinates; nothing is written."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from .context import Ctx, Principal
from .errors import DATABASE, ERRORS, ApiError
from .routes_sessions import database_user

router = APIRouter(tags=["database"])


class RoughBuildIn(BaseModel):
    """The backend's ``UserSmartPlanningMultiRequest`` plus our options."""

    model_config = ConfigDict(extra="forbid")

    task_class_ids: list[int] = Field(min_length=1, max_length=100)
    db_user_id: int | None = None
    time_limit_s: float = Field(default=5.0, gt=0)
    num_workers: int = Field(default=1, ge=1, le=8)


@router.post("/v1/rough-build", responses={**ERRORS, **DATABASE})
def post_rough_build(ctx: Ctx, principal: Principal, body: RoughBuildIn) -> dict[str, Any]:
    """Place the classes' pending items (every class rule) and answer ``placements`` as
    ``(task_item_id, week, day_of_week, section_from, section_to, embed_course_event_id)``; when
    not everything fits, what fits with the proven maximum, the capacity gap and the negotiation
    figures. The time limit is capped by the server's ``max_time_limit_s``."""
    from ...store import StoreError

    database = ctx.database
    if database is None:
        raise ApiError(422, "no_database", "this server has no database to build from")
    wanted = database_user(principal, body.db_user_id)
    unknown = [c for c in body.task_class_ids if not 1 <= c < 2**63]
    if unknown:  # no row has such an id
        raise ApiError(422, "invalid_task_classes", f"task classes {unknown} do not exist")
    try:
        answer = database.rough_build(
            wanted,
            body.task_class_ids,
            time_limit_s=min(body.time_limit_s, ctx.max_time_limit_s),
            num_workers=body.num_workers,
        )
    except StoreError as exc:
        raise ApiError(422, "invalid_task_classes", str(exc)) from None
    out: dict[str, Any] = answer.to_dict()
    return out

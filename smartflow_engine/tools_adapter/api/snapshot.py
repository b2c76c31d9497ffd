"""Full validation of a posted session snapshot (``POST /v1/restore``), before it becomes a
session: every field typed, ids and periods in range, numbers finite, so a restored session can
never break a later route (issue 12 item 5). Unknown top-level keys are allowed (later snapshot
versions of the session may carry more, e.g. a round log) and passed on untouched."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...state.model import MAX_TASK_ID
from ..core.spec import Mode
from ..sessions.session import SNAPSHOT_VERSION

Status = Literal["existing", "suggested", "pending"]
TaskId = Annotated[int, Field(strict=True, ge=1, le=MAX_TASK_ID)]
Period = Annotated[int, Field(strict=True, ge=1, le=24)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Block(_Strict):
    day: Annotated[int, Field(strict=True, ge=1, le=1000)]
    slot_start: Period
    slot_end: Period


class _Change(_Strict):
    op: Annotated[str, Field(min_length=1, max_length=32)]
    task_id: TaskId
    status_before: Status
    status_after: Status
    block_before: _Block | None
    block_after: _Block | None
    embed_host_before: TaskId | None
    embed_host_after: TaskId | None


class _Pending(_Strict):
    token: Annotated[str, Field(min_length=1, max_length=64)]
    tool: Annotated[str, Field(min_length=1, max_length=64)]
    args: dict[str, Any]
    preview: Annotated[str, Field(max_length=100_000)] = ""
    created_at: float = 0.0
    session_id: Annotated[str, Field(max_length=64)] | None = None
    digest: Annotated[str, Field(max_length=64)] = ""
    seen: Annotated[int, Field(strict=True, ge=0, le=1_000_000)] = 0
    log: Annotated[str, Field(max_length=64)] = ""

    @field_validator("created_at")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


class _Snapshot(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: Literal[1]
    user_id: str | None = None
    session_id: str | None = None
    mode: Mode = Mode.FIRST_FULL
    enabled_tools: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list, max_length=64
    )
    state: dict[str, Any] | None = None
    changes: list[_Change] = Field(default_factory=list, max_length=100_000)
    pending: list[_Pending] = Field(default_factory=list, max_length=64)
    created_at: float | None = None
    day_labels: Literal["index", "weekday"] | None = None
    db_window: bool = True

    @field_validator("created_at")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


assert SNAPSHOT_VERSION == 1, "update _Snapshot.version with the session's snapshot version"


def check_snapshot(data: Any) -> str | None:
    """``None`` when ``data`` is a well-formed snapshot, else one line naming the first bad
    field (``snapshot.changes.0.task_id: ...``)."""
    try:
        _Snapshot.model_validate(data, strict=False)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in ("snapshot", *err.get("loc", ())))
        return f"{loc}: {err.get('msg', 'invalid')}"
    except RecursionError:
        return "snapshot: nested too deeply"
    return None

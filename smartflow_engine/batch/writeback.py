"""``--commit``: write each feasible proposal back to the database as ``suggested``.

One user at a time, one transaction per user, through :meth:`Store.commit`. Stale-safe in two
layers: the user's window is loaded again and must be exactly the one the batch solved (same
fingerprint), otherwise the user is reported ``stale`` and nothing is written; then
:meth:`Store.commit`'s own optimistic checks (the rows it touches are still as loaded, the target
periods are free, inside the same transaction) refuse a change that slipped in between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .jobs import WindowResult, apply_placements
from .sources import fingerprint

if TYPE_CHECKING:
    from ..store import Store

CommitStatus = Literal["committed", "stale", "conflict", "skipped", "failed"]
COMMIT_STATUSES: tuple[str, ...] = ("committed", "stale", "conflict", "skipped", "failed")
_PROPOSED = ("optimal", "feasible")


def commit_result(store: Store, result: WindowResult) -> tuple[CommitStatus, str]:
    """Commit one window's proposal; ``(status, detail)`` for the table's commit columns."""
    from ..store import StoreError

    row = result.row
    if row.get("error"):
        return "skipped", "the window has an error"
    if result.user_id is None or result.day_mapping is None or result.fingerprint is None:
        return "skipped", "not a database window"
    if row.get("is_feasible") is False:
        return "skipped", "infeasible: the proposal cannot place every pending task"
    if row.get("proposal_status") not in _PROPOSED or row.get("unplaced_tasks"):
        return "skipped", (
            f"proposal {row.get('proposal_status')} leaves "
            f"{row.get('unplaced_tasks')} tasks unplaced"
        )
    placements = result.placements or []
    if not placements:
        return "skipped", "nothing to place"
    mapping = [{"day_index": d, "week": w, "day_of_week": dow} for d, w, dow in result.day_mapping]
    try:
        state = store.load_window(
            result.user_id, mapping, slots_per_day=int(row.get("slots_per_day") or 12)
        )
    except StoreError as exc:
        return "stale", f"the window no longer loads: {exc}"
    if fingerprint(state.to_json(indent=None)) != result.fingerprint:
        return "stale", "the user's rows changed since the batch loaded them; nothing written"
    applied = apply_placements(state, placements)
    if not applied.ok:
        return "conflict", f"the proposal does not apply: {applied.refusal}"
    out = store.commit(result.user_id, state, applied.changes)
    if out.ok:
        return "committed", f"{out.tasks_written} tasks suggested"
    status: CommitStatus = out.error_code if out.error_code in ("stale", "conflict") else "failed"  # type: ignore[assignment]
    return status, f"{out.error_code}: {out.error}"


def summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many windows got each commit status."""
    counts = dict.fromkeys(COMMIT_STATUSES, 0)
    for row in rows:
        status = row.get("commit_status")
        if status in counts:
            counts[status] += 1
    return counts

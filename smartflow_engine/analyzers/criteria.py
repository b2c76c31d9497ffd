"""Evidence for a write: which issues it resolved, made worse or created, and whether an action's
``success_criteria`` hold on a health envelope.

Criteria are data: ``{"recheck_tool": "analyze_health", "conditions": [{"metric": PATH,
"operator": OP, "value": V}, ...]}`` where ``PATH`` names a field of the ``analyze_health``
envelope (``issues[].issue_id``, ``metrics.close_signal.critical``, ``feasibility.capacity_gap``;
``[]`` maps over a list) and ``OP`` is a comparison (``< <= > >= ==``) on a single value or
``contains`` / ``not_contains`` on a list. An optional ``where`` (``{"severity": ["critical",
"warning"]}``) keeps only the list items whose fields take one of the listed values.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .result import SEVERITY_RANK, Issue

SEVERE = ("critical", "warning")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}


@dataclass(frozen=True)
class IssueDiff:
    """Critical/warning issues a change resolved, made worse (higher severity or impact) or
    created, by ``issue_id``."""

    resolved: tuple[str, ...]
    worse: tuple[str, ...]
    created: tuple[str, ...]

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "resolved": list(self.resolved),
            "worse": list(self.worse),
            "created": list(self.created),
        }


@dataclass(frozen=True)
class CriteriaCheck:
    """How many conditions hold; ``met`` is ``None`` when one cannot be evaluated."""

    met: bool | None
    held: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"met": self.met, "held": self.held, "total": self.total}


def severe(issues: Iterable[Issue]) -> dict[str, Issue]:
    """The critical and warning issues by id."""
    return {i.issue_id: i for i in issues if i.severity in SEVERE}


def diff_issues(before: Iterable[Issue], after: Iterable[Issue]) -> IssueDiff:
    """Compare two issue lists (critical and warning only)."""
    old, new = severe(before), severe(after)
    resolved = tuple(i for i in old if i not in new)
    created = tuple(i for i in new if i not in old)
    worse = tuple(
        i
        for i, issue in new.items()
        if i in old
        and (
            SEVERITY_RANK[issue.severity] < SEVERITY_RANK[old[i].severity]
            or (issue.severity == old[i].severity and issue.impact_score > old[i].impact_score)
        )
    )
    return IssueDiff(resolved, worse, created)


def resolve_path(doc: Any, path: str, where: dict[str, Any] | None = None) -> list[Any] | None:
    """The values at ``path`` (``None`` when a part is missing); ``where`` filters list items."""
    values: list[Any] = [doc]
    for part in path.split("."):
        spread = part.endswith("[]")
        key = part[:-2] if spread else part
        out: list[Any] = []
        for value in values:
            if not isinstance(value, dict) or key not in value:
                return None
            item = value[key]
            if spread:
                if not isinstance(item, list):
                    return None
                out.extend(x for x in item if _kept(x, where))
            else:
                out.append(item)
        values = out
    return values


def _kept(item: Any, where: dict[str, Any] | None) -> bool:
    if not where:
        return True
    if not isinstance(item, dict):
        return False
    return all(item.get(k) in (v if isinstance(v, list) else [v]) for k, v in where.items())


def condition_holds(doc: Any, cond: dict[str, Any]) -> bool | None:
    """One condition on ``doc``: ``True``/``False``, or ``None`` when it cannot be evaluated."""
    path, op, value = cond.get("metric"), cond.get("operator"), cond.get("value")
    if not isinstance(path, str):
        return None
    where = cond.get("where")
    found = resolve_path(doc, path, where if isinstance(where, dict) else None)
    if found is None:
        return None
    if op == "contains":
        return value in found
    if op == "not_contains":
        return value not in found
    compare = _COMPARE.get(str(op))
    if compare is None or len(found) != 1 or not isinstance(found[0], int | float):
        return None
    return bool(compare(found[0], value))


def check_criteria(doc: dict[str, Any], criteria: dict[str, Any]) -> CriteriaCheck:
    """Evaluate ``criteria['conditions']`` on the health envelope ``doc`` (as a dict)."""
    conds = criteria.get("conditions")
    if not isinstance(conds, list) or not conds:
        return CriteriaCheck(None, 0, 0)
    results = [condition_holds(doc, c) if isinstance(c, dict) else None for c in conds]
    held = sum(1 for r in results if r is True)
    met: bool | None = None if any(r is None for r in results) else held == len(results)
    if any(r is False for r in results):
        met = False
    return CriteriaCheck(met, held, len(results))

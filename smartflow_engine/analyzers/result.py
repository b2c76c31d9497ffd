"""The analysis envelope (p1 §4.1/§4.2) as data: results, issues, triggers and next actions.

Analyzers return :class:`AnalysisResult`; only ``tools_adapter`` turns it into JSON text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..rules import Severity

ErrorCode = Literal["invalid_args", "out_of_range", "no_state", "internal_error"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SEVERITY_RANK = {name: i for i, name in enumerate(SEVERITIES)}
DIMENSIONS: tuple[str, ...] = ("load", "subjects", "context", "tolerance")
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


class ParamError(ValueError):
    """An invalid analyzer parameter: ``code`` is a stable ``error_code``, the message is readable."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Trigger:
    """One machine-checkable condition: ``actual <operator> threshold`` held."""

    metric: str
    operator: str
    threshold: float
    actual: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "operator": self.operator,
            "threshold": self.threshold,
            "actual": self.actual,
        }


@dataclass
class Issue:
    """One finding. ``trigger`` is the band's first condition; ``conditions`` lists all of them.

    ``day`` (1-based) or ``category`` names the entity; both are ``None`` for a window-wide issue.
    """

    issue_id: str
    dimension: str
    severity: Severity
    rule: str
    trigger: Trigger
    conditions: tuple[Trigger, ...]
    impact_score: float
    day: int | None = None
    category: str | None = None
    merged_issue_ids: list[str] = field(default_factory=list)
    fixable: bool = True  # False: fixed content (courses, locked tasks) alone causes it

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "issue_id": self.issue_id,
            "dimension": self.dimension,
            "severity": self.severity,
            "rule": self.rule,
            "day": self.day,
            "category": self.category,
            "trigger": self.trigger.to_dict(),
            "conditions": [c.to_dict() for c in self.conditions],
            "impact_score": self.impact_score,
        }
        if self.merged_issue_ids:
            out["merged_issue_ids"] = list(self.merged_issue_ids)
        if not self.fixable:
            out["fixable"] = False
        return out


@dataclass
class NextAction:
    """A direction for the LLM (p1 §4.2.2): a scope, filters and a success test, never write args.

    ``issue_ids`` name the issues the action addresses; ``figures`` carries numbers (the
    negotiation actions' extra days, slots to cut, ...).
    """

    action_id: str
    intent_code: str
    candidate_scope: dict[str, Any]
    target_filter: dict[str, Any]
    slot_filter: dict[str, Any]
    required_reads: list[dict[str, Any]]
    success_criteria: dict[str, Any]
    candidate_write_tools: list[str]
    issue_ids: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    priority: int = 1
    # Set by analyze_health (destinations.make_actionable, then ``fixable_checked``): True when
    # some legal destination creates no new critical/warning issue, False (with the reason) when
    # none does, None when the search budget ran out first. Not emitted when never checked.
    fixable: bool | None = None
    fixable_reason: str = ""
    fixable_checked: bool = False
    fixable_cut: bool = False  # the call's time limit stopped the search (fixable is False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action_id": self.action_id,
            "priority": self.priority,
            "intent_code": self.intent_code,
            "target_filter": self.target_filter,
            "slot_filter": self.slot_filter,
            "candidate_scope": self.candidate_scope,
            "required_reads": self.required_reads,
            "success_criteria": self.success_criteria,
            "candidate_write_tools": list(self.candidate_write_tools),
            "issue_ids": list(self.issue_ids),
        }
        if self.figures:
            out["figures"] = self.figures
        if self.fixable_checked:
            out["fixable"] = self.fixable
            if self.fixable_reason:
                out["fixable_reason"] = self.fixable_reason
            if self.fixable_cut:
                out["fixable_cut"] = "time_limit"
        return out


CLOSE_RULE = "critical=0 && warning<=1"


def close_signal(
    critical: int,
    warning: int,
    floor: dict[str, Any] | None = None,
    *,
    best_achievable: bool = False,
    floor_cut: bool = False,
    complete: bool = True,
) -> dict[str, Any]:
    """``metrics.close_signal``, built here only (issue 40 item 8): the spec's close rule
    (P1-E, ``critical=0 && warning<=1``) on the counts, and with ``floor`` (the proven floor's
    dict) the reason and ``best_achievable``. A session adds its round fields
    (:meth:`~smartflow_engine.tools_adapter.sessions.loop_state.LoopState.on_health`).

    ``complete``: no pending period that could be placed is left (proven). Without it the
    request may not close although the rule is met (issue 45 item 1), reason
    ``pending_placeable``."""
    rules_met = critical == 0 and warning <= 1
    acceptable = rules_met and complete
    out: dict[str, Any] = {
        "acceptable_to_close": acceptable,
        "critical": critical,
        "warning": warning,
    }
    if floor is None:
        return out
    out.update(
        rule=CLOSE_RULE,
        reason="rules_met"
        if acceptable
        else "pending_placeable"
        if rules_met
        else "best_achievable"
        if best_achievable
        else "open",
        best_achievable=best_achievable,
        floor=floor,
    )
    if floor_cut:
        out["floor_cut"] = "time_limit"
    return out


@dataclass
class AnalysisResult:
    """The envelope of one analysis tool call; ``feasibility`` is set by ``analyze_health`` only."""

    tool: str
    success: bool
    metric_schema: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    next_actions: list[NextAction] = field(default_factory=list)
    error: str = ""
    error_code: str = ""
    feasibility: dict[str, Any] | None = None
    has_feasibility: bool = False  # a successful health result carries the key, even when null

    def to_dict(self) -> dict[str, Any]:
        """The envelope as a JSON-ready dict, keys in the spec's order."""
        out: dict[str, Any] = {
            "tool": self.tool,
            "success": self.success,
            "metric_schema": self.metric_schema,
            "metrics": self.metrics,
            "issues": [i.to_dict() for i in self.issues],
            "next_actions": [a.to_dict() for a in self.next_actions],
            "error": self.error,
            "error_code": self.error_code,
        }
        if self.has_feasibility:
            out["feasibility"] = self.feasibility
        return out

    @classmethod
    def failure(cls, tool: str, code: ErrorCode, message: str) -> AnalysisResult:
        """The failure envelope; like the Toolbox's ``json_error``, without ``feasibility``."""
        return cls(tool=tool, success=False, error=message, error_code=code)

    def issue_counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for issue in self.issues:
            counts[issue.severity] += 1
        return counts

"""The closed-loop benchmark an integrator runs on their own model (issue 31).

A public task set (:mod:`.tasks`, shipped as package data and built by :mod:`.build`), graders on
the final state (:mod:`.goals`), policies (:mod:`.policies`: the scripted tools-only agent, any
OpenAI-compatible endpoint) and the runner that tabulates pass^k (:mod:`.runner`).
"""

from .goals import CallRecord, CheckResult, Outcome, grade
from .policies import OpenAIPolicy, ScriptedPolicy
from .runner import BudgetedSession, Policy, PolicyStats, markdown, run_eval, run_trial, summary
from .tasks import KINDS, MAX_TOOL_CALLS, EvalTask, load_tasks

__all__ = [
    "KINDS",
    "MAX_TOOL_CALLS",
    "BudgetedSession",
    "CallRecord",
    "CheckResult",
    "EvalTask",
    "OpenAIPolicy",
    "Outcome",
    "Policy",
    "PolicyStats",
    "ScriptedPolicy",
    "grade",
    "load_tasks",
    "markdown",
    "run_eval",
    "run_trial",
    "summary",
]

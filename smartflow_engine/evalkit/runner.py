"""Runs tasks k times for a policy through a real :class:`Session` and tabulates pass^k.

A trial: a fresh ``Session`` on the task's window in the request's mode, wrapped in
:class:`BudgetedSession` (the 60-call cap, the call trace); the policy works; the final state and
the trace are graded (:mod:`.goals`). pass^k (τ-bench) of a task with ``c`` successes in ``n``
trials is ``C(c, k) / C(n, k)``, the chance that k trials drawn from the n all pass; a kind's
pass^k is the mean over its tasks.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..tools_adapter import Session
from ..tools_adapter.core.pipeline import CallResult
from ..tools_adapter.core.registry import is_write_tool
from .goals import CallRecord, Outcome, grade
from .tasks import KINDS, EvalTask

if TYPE_CHECKING:
    import pandas as pd

SOLVER_CAP_S = 2.0  # the sessions' cap on a solver tool's time limit (as bench_loop)

# The words every solver tool's reply uses when the wall clock, not the work budget, ended its
# search or left its answer unproven ("搜索被时限截断", "时限内未找到", "2秒内未得出证明",
# "只来得及给出初始贪心方案"): such a call's answer can differ on a busier or quieter machine.
CLOCK_CUT = re.compile(r"时限截断|时限内|秒内未得出证明|只来得及给出")


class BudgetedSession:
    """A session as the policy sees it: calls pass through to the real session until the cap;
    past it they are refused (``round_cap``) without running. Every call is recorded."""

    def __init__(self, session: Session, max_calls: int) -> None:
        self.session = session
        self.max_calls = max_calls
        self.calls: list[CallRecord] = []
        self.exhausted = False
        self.clock_cuts = 0  # calls whose answer the wall clock cut (see CLOCK_CUT)

    @property
    def remaining(self) -> int:
        return self.max_calls - len(self.calls)

    def schemas(self, fmt: str = "openai") -> list[dict[str, Any]]:
        return self.session.schemas(fmt)

    def rules(self) -> str:
        return self.session.rules()

    def call(self, name: str, args: Any = None) -> str:
        return self.invoke(name, args).reply

    def invoke(self, name: str, args: Any = None) -> CallResult:
        if self.remaining <= 0:
            self.exhausted = True
            return CallResult(
                name,
                f"{name} 未执行：本次请求的工具调用已达上限（{self.max_calls} 次）。",
                status="error",
                error_code="round_cap",
            )
        result = self.session.invoke(name, args)
        self.clock_cuts += bool(CLOCK_CUT.search(result.reply))
        self.calls.append(
            CallRecord(
                name,
                args,
                result.status,
                result.error_code,
                wrote=bool(result.changes),
                is_write=is_write_tool(name),
            )
        )
        return result


@dataclass
class PolicyStats:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None  # the policy could not go on (e.g. the endpoint failed)


class Policy(Protocol):
    name: str

    def run(self, task: EvalTask, s: BudgetedSession) -> PolicyStats: ...


@dataclass
class Trial:
    task: EvalTask
    trial: int
    passed: bool
    failed: list[str]
    details: dict[str, str]
    tool_calls: int
    rounds: int
    refused_writes: int
    stats: PolicyStats
    seconds: float
    clock_cuts: int = 0  # tool calls whose answer the wall clock cut


def run_trial(task: EvalTask, policy: Policy, trial: int = 0) -> Trial:
    """One trial of ``task`` (see the module docstring)."""
    started = time.perf_counter()
    session = Session(
        task.initial_state(),
        mode=task.request.mode,
        max_time_limit_s=SOLVER_CAP_S,
        frozen_days=task.request.frozen_days,
    )
    s = BudgetedSession(session, task.goal.max_tool_calls)
    try:
        stats = policy.run(task, s)
    except Exception as exc:  # a policy's bug is a failed trial with its reason, not a crash
        stats = PolicyStats(error=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    assert session.state is not None
    outcome = Outcome(session.state, s.calls, s.exhausted)
    results = grade(task, outcome)
    if session.request_info()["rounds_left"] == 0:
        session.begin_request()  # a capped request refuses every call, the log read included
    rounds = json.loads(session.call("get_round_log", {"limit": 1}))["metrics"]["round"]
    failed = [r.goal for r in results if not r.ok]
    if stats.error:
        failed.append("policy_error")
    details = {r.goal: r.detail for r in results}
    if stats.error:
        details["policy_error"] = stats.error
    return Trial(
        task,
        trial,
        not failed,
        failed,
        details,
        len(s.calls),
        int(rounds),
        sum(1 for c in s.calls if c.is_write and c.status == "error"),
        stats,
        seconds,
        s.clock_cuts,
    )


def run_eval(
    tasks: Sequence[EvalTask],
    policy: Policy,
    k: int = 1,
    on_trial: Callable[[Trial], None] | None = None,
    timings: bool = True,
) -> pd.DataFrame:
    """Every task ``k`` times; one row per trial. ``timings=False`` leaves out the wall-clock
    column (``seconds``), so that the table is a function of the task set and the policy (what
    the committed baseline is)."""
    import pandas as pd

    rows = []
    for task in tasks:
        for i in range(k):
            t = run_trial(task, policy, i)
            rows.append(
                {
                    "task_id": task.id,
                    "kind": task.kind,
                    "request": task.request.type,
                    "days": task.days,
                    "trial": i,
                    "passed": t.passed,
                    "failed_goals": ",".join(t.failed),
                    "details": json.dumps(t.details, ensure_ascii=False),
                    "tool_calls": t.tool_calls,
                    "rounds": t.rounds,
                    "refused_writes": t.refused_writes,
                    "prompt_tokens": t.stats.prompt_tokens,
                    "completion_tokens": t.stats.completion_tokens,
                    "clock_cuts": t.clock_cuts,
                    **({"seconds": round(t.seconds, 2)} if timings else {}),
                }
            )
            if on_trial is not None:
                on_trial(t)
    df = pd.DataFrame(rows)
    for col in ("prompt_tokens", "completion_tokens"):
        df[col] = df[col].astype("Int64")
    return df


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """τ-bench's pass^k of one task: ``C(c, k) / C(n, k)``."""
    return math.comb(successes, k) / math.comb(trials, k) if trials >= k else float("nan")


def summary(trials: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per task kind (and ``all``): tasks, pass^1..pass^k, rounds, tool calls, refused writes,
    trials with a call the wall clock cut, tokens, and (when the trials have them) seconds."""
    import pandas as pd

    per_task = trials.groupby(["kind", "task_id"], sort=False).agg(
        c=("passed", "sum"), n=("passed", "size")
    )
    out = []
    kinds = [kd for kd in KINDS if kd in set(trials["kind"])]
    for kind in [*kinds, "all"]:
        rows = trials if kind == "all" else trials[trials["kind"] == kind]
        tasks = per_task if kind == "all" else per_task.loc[kind]
        row: dict[str, Any] = {"kind": kind, "tasks": len(tasks), "trials": len(rows)}
        for j in range(1, k + 1):
            row[f"pass^{j}"] = round(
                float(sum(pass_hat_k(int(c), int(n), j) for c, n in tasks.values)) / len(tasks), 3
            )
        tokens = rows["prompt_tokens"].fillna(0) + rows["completion_tokens"].fillna(0)
        row.update(
            rounds_median=float(rows["rounds"].median()),
            tool_calls_median=float(rows["tool_calls"].median()),
            tool_calls_max=int(rows["tool_calls"].max()),
            refused_writes=int(rows["refused_writes"].sum()),
            clock_cut_trials=int((rows["clock_cuts"] > 0).sum()),
            tokens_mean=None if rows["prompt_tokens"].isna().all() else float(tokens.mean()),
        )
        if "seconds" in rows:
            row["seconds_median"] = round(float(rows["seconds"].median()), 1)
        out.append(row)
    return pd.DataFrame(out)


def markdown(summary_df: pd.DataFrame, trials: pd.DataFrame, title: str, notes: str = "") -> str:
    """The summary and the per-task rows as markdown tables, then ``notes`` (verbatim)."""

    def table(df: pd.DataFrame) -> list[str]:
        cols = list(df.columns)
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for rec in df.itertuples(index=False):
            cells = ["–" if v is None or v != v else str(v) for v in rec]  # NaN != NaN
            lines.append("| " + " | ".join(cells) + " |")
        return lines

    per_task = (
        trials.groupby(["task_id", "kind", "request", "days"], sort=False)
        .agg(
            passed=("passed", "sum"),
            trials=("passed", "size"),
            failed_goals=("failed_goals", lambda s: ";".join(sorted({x for x in s if x}))),
            tool_calls=("tool_calls", "median"),
            rounds=("rounds", "median"),
            refused_writes=("refused_writes", "sum"),
            clock_cuts=("clock_cuts", "sum"),
        )
        .reset_index()
    )
    return "\n".join(
        [
            f"## {title}",
            "",
            *table(summary_df),
            "",
            "Per task (passed of trials; the goal parts that failed in any trial):",
            "",
            *table(per_task),
            "",
        ]
    ) + (notes if not notes or notes.endswith("\n") else notes + "\n")

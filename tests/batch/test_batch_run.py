"""Tests of run_batch: rows equal the public entry points (and the check_feasibility tool's
reply) called one by one, the same table on
every engine and worker count, error rows for bad windows, and argument checks."""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

from smartflow_engine import Toolbox
from smartflow_engine.analyzers import analyze_health
from smartflow_engine.batch import (
    JOBS,
    JobConfig,
    ListSource,
    SourceError,
    WindowItem,
    columns,
    run_batch,
)
from smartflow_engine.batch import jobs as batch_jobs
from smartflow_engine.batch.engines import chunked, run_local
from smartflow_engine.solver import (
    TERM_NAMES,
    check_feasibility,
    negotiation_figures,
    propose_placement,
)
from smartflow_engine.state import Request, relocate
from tests.helpers.batch_windows import TIME_LIMIT, WORK_LIMIT, runtime_columns, tiny_cohort
from tests.helpers.fresh_interpreter import proposal_with_hash_seed


def _expected_row(state, seed: int) -> dict:
    """One window's figures from the solver and analyzers, called directly."""
    pending = state.pending_tasks()
    report = check_feasibility(state, time_limit_s=TIME_LIMIT, num_workers=1)
    figures = negotiation_figures(state, report, time_limit_s=TIME_LIMIT, num_workers=1)
    # The batch's proposal: its work budget under the job's wall clock.
    proposal = propose_placement(
        state, time_limit_s=TIME_LIMIT, seed=seed, num_workers=1, work_limit_s=WORK_LIMIT
    )
    assert not proposal.wall_limited
    after = state.copy_state()
    applied = relocate(
        after,
        [Request(p.task_id, p.day, p.slot_start) for p in proposal.placements],
        op="apply_proposal",
        status_after="suggested",
    )
    assert applied.ok
    health = analyze_health(after if proposal.placements else state, time_limit_s=TIME_LIMIT)
    close = health.metrics["close_signal"]
    floor = close.get("floor") or {}
    row = {
        "days": state.num_days,
        "tasks": len(state.tasks),
        "pending_tasks": len(pending),
        "pending_slots": sum(t.need() for t in pending),
        "is_feasible": report.is_feasible,
        "proven": report.proven,
        "required_task_slots": report.required_task_slots,
        "feasible_slots": report.feasible_slots,
        "capacity_gap": report.capacity_gap,
        "free_capacity_slots": report.free_capacity_slots,
        "slack_slots": report.slack_slots,
        "reason_code": report.reason_code,
        "extra_days_needed": figures.extra_days_needed,
        "extra_days_possible": figures.extra_days_possible,
        "slots_to_cut": figures.slots_to_cut,
        "lifting_banned_suffices": figures.lifting_banned_suffices,
        "lifting_class_constraints_suffices": figures.lifting_class_constraints_suffices,
        "negotiation_proven": figures.proven,
        "proposal_status": proposal.status,
        "proposal_wall_limited": False,
        "placed_tasks": len(proposal.placements),
        "placed_slots": sum(p.length for p in proposal.placements),
        "unplaced_tasks": len(proposal.unplaced),
        "unplaced_slots": proposal.objective["unplaced_slots"],
        "max_slots": proposal.max_slots,
        "objective_bound": proposal.bound,
        "critical": close["critical"],
        "warning": close["warning"],
        "acceptable_to_close": close["acceptable_to_close"],
        "close_reason": close.get("reason"),
        "best_achievable": close.get("best_achievable"),
        "floor_critical": floor.get("critical"),
        "floor_warning": floor.get("warning"),
        "floor_proven": floor.get("proven"),
        "health_of": "proposal" if proposal.placements else "window",
        "clock_cut": False,  # every call ended on its proof or work budget
    }
    for name in (*TERM_NAMES, "weighted_total"):
        row[f"obj_{name}"] = proposal.objective[name]
    return row


def _value(v):
    return None if v is pd.NA or (isinstance(v, float) and v != v) else v


def test_rows_equal_the_entry_points_called_one_by_one():
    """Tests that every figure of every batch row equals check_feasibility, negotiation_figures,
    propose_placement and analyze_health called directly on that window."""
    cohort = tiny_cohort()
    df = run_batch(cohort, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, seed=3, engine="loop")
    assert list(df.columns) == list(columns())
    assert df["error"].isna().all()
    assert (df["is_feasible"] == False).any() and (df["is_feasible"] == True).any()  # noqa: E712
    for i, state in enumerate(cohort):
        expected = _expected_row(state, seed=3)
        got = df.iloc[i]
        assert got["window_id"] == str(i)
        for column, value in expected.items():
            assert _value(got[column]) == value, (i, column)


def _tool_figures(reply: str) -> dict:
    """The figures a check_feasibility tool reply states, by the batch's column names (only
    those the reply states: a feasible window's reply has no negotiation line)."""
    verdict = re.match(r"可行性：(可行|不可行|未知)", reply)
    assert verdict, reply
    out: dict = {
        "is_feasible": {"可行": True, "不可行": False, "未知": None}[verdict[1]],
        "proven": verdict[1] != "未知",
    }
    patterns = {
        "reason_code": r"原因：[^（]*（([a-z_]+)）",
        "required_task_slots": r"共需(\d+)个时段",
        "feasible_slots": r"最多可同时放下(\d+)个时段",
        "capacity_gap": r"缺口(-?\d+)个",
        "free_capacity_slots": r"空闲容量(\d+)个时段",
        "slack_slots": r"余量(-?\d+)个",
        "extra_days_needed": r"末尾追加(\d+)个空白天后可全部放下",
        "slots_to_cut": r"删减任务需减少(\d+)个时段",
    }
    for column, pattern in patterns.items():
        if found := re.search(pattern, reply):
            out[column] = found[1] if column == "reason_code" else int(found[1])
    if "追加空白天无法全部放下" in reply:
        out["extra_days_possible"] = False
    for column, what in (
        ("lifting_banned_suffices", "取消禁排时段"),
        ("lifting_class_constraints_suffices", "取消任务类时间窗与禁排时段"),
    ):
        if f"{what}后可全部放下" in reply:
            out[column] = True
        elif f"{what}后仍放不下" in reply:
            out[column] = False
    return out


def test_rows_equal_the_check_feasibility_tool_called_one_by_one():
    """Tests that a batch row's feasibility and negotiation figures are what the
    check_feasibility tool tells an agent about the same window, figure by figure."""
    cohort = tiny_cohort()
    df = run_batch(
        cohort,
        jobs=("feasibility",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    stated = set()
    for i, state in enumerate(cohort):
        reply = Toolbox(state).call("check_feasibility", {"time_limit_s": TIME_LIMIT})
        figures = _tool_figures(reply)
        stated |= figures.keys()
        for column, value in figures.items():
            assert _value(df[column].iloc[i]) == value, (i, column, reply)
    # the cohort's infeasible window states its negotiation figures too
    assert {
        "reason_code",
        "capacity_gap",
        "extra_days_needed",
        "slots_to_cut",
        "lifting_banned_suffices",
        "lifting_class_constraints_suffices",
    } <= stated


def test_same_table_on_every_engine_and_worker_count():
    """Tests that one seed gives the same table (runtimes aside) in a loop, on a pool of one
    worker and on a pool of two workers with another chunk size."""
    cohort = tiny_cohort(6)
    loop = run_batch(
        cohort, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, seed=1, engine="loop"
    )
    runtime = runtime_columns(list(loop.columns))
    for workers, chunk in ((1, None), (2, 1)):
        pool = run_batch(
            cohort,
            time_limit_s=TIME_LIMIT,
            work_limit_s=WORK_LIMIT,
            seed=1,
            engine="local",
            workers=workers,
            chunk_size=chunk,
        )
        assert pool.attrs["batch"]["workers"] == workers
        assert len(pool.attrs["batch"]["peak_rss_mb"]) >= 1
        assert pool.attrs["batch"]["worker_cpu_s"] > 0  # the workers report their CPU time
        pd.testing.assert_frame_equal(loop.drop(columns=runtime), pool.drop(columns=runtime))
    assert not loop["proposal_wall_limited"].any() and loop.attrs["batch"]["wall_limited"] == 0


def test_proposals_stop_on_the_given_work_budget():
    """Tests that work_limit_s is the proposals' work budget: each row equals propose_placement
    called with that budget under a distant wall clock, and the run records budget and wall."""
    cohort = tiny_cohort(3)
    df = run_batch(
        cohort,
        jobs=("proposal",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=0.05,
        seed=5,
        engine="loop",
    )
    run = df.attrs["batch"]
    assert run["proposal_work_limit_s"] == 0.05
    assert run["proposal_wall_limit_s"] == TIME_LIMIT
    for i, state in enumerate(cohort):
        direct = propose_placement(
            state, time_limit_s=60.0, seed=5, num_workers=1, work_limit_s=0.05
        )
        assert not direct.wall_limited and not df["proposal_wall_limited"].iloc[i]
        assert df["proposal_status"].iloc[i] == direct.status
        assert df["placed_slots"].iloc[i] == sum(p.length for p in direct.placements)
        assert df["obj_weighted_total"].iloc[i] == direct.objective["weighted_total"]


def test_a_proposal_cut_by_the_wall_clock_says_so():
    """Tests that a row whose proposal the wall clock cut (a work budget far beyond a tiny
    limit) is marked proposal_wall_limited and counted in the run's figures."""
    cohort = tiny_cohort(2)
    df = run_batch(cohort, jobs=("proposal",), time_limit_s=0.001, work_limit_s=30.0, engine="loop")
    assert df["error"].isna().all()
    assert df["proposal_wall_limited"].all()
    assert df.attrs["batch"]["wall_limited"] == 2
    assert df["clock_cut"].all() and df.attrs["batch"]["clock_cut"] == 2


def test_a_row_any_clock_cut_is_marked():
    """Tests that a row is marked clock_cut when any of its solver calls ended on the wall clock
    (an unproven check or figures, a wall-limited proposal, an unproven floor or health check),
    and not when every one ended on its proof or work (issue 45 item 2)."""
    from smartflow_engine.batch.jobs import clock_cut

    whole = {
        "proven": True,
        "negotiation_proven": True,
        "proposal_wall_limited": False,
        "floor_proven": True,
        "health_check_proven": True,
    }
    assert not clock_cut(whole)
    assert not clock_cut({})  # no job ran: nothing cut
    for flag, cut_value in (
        ("proven", False),
        ("negotiation_proven", False),
        ("proposal_wall_limited", True),
        ("floor_proven", False),
        ("health_check_proven", False),
    ):
        assert clock_cut({**whole, flag: cut_value}), flag
    # the loaded cohort: nothing cut at the tests' limit, and the count says so
    df = run_batch(tiny_cohort(2), jobs=("feasibility", "health"), time_limit_s=TIME_LIMIT)
    assert not df["clock_cut"].any() and df.attrs["batch"]["clock_cut"] == 0
    assert "health_check_proven" not in df.columns


BAD_WINDOWS = [
    ("{not json", "invalid_state: invalid JSON"),  # malformed text
    (json.dumps({"window": {"total_days": 0}, "tasks": []}), "invalid_state:"),  # invalid window
    (
        json.dumps(
            {
                "window": {"total_days": 2},
                "tasks": [  # two tasks on one period
                    {
                        "state_id": 1,
                        "name": "a",
                        "category": "x",
                        "status": "existing",
                        "slots": [{"day": 1, "slot_start": 1, "slot_end": 2}],
                    },
                    {
                        "state_id": 2,
                        "name": "b",
                        "category": "x",
                        "status": "existing",
                        "slots": [{"day": 1, "slot_start": 2, "slot_end": 3}],
                    },
                ],
            }
        ),
        "invalid_state:",
    ),
    (42, "invalid_state: a int is not a state"),  # not a state at all
]


def test_bad_windows_give_error_rows_and_never_stop_the_batch():
    """Tests that malformed, invalid and non-state windows become error rows in place while the
    windows around them get their figures."""
    good = tiny_cohort(2)
    windows = [good[0], *[w for w, _ in BAD_WINDOWS], good[1]]
    calls = []
    df = run_batch(
        windows,
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
        chunk_size=2,
        progress=lambda *args: calls.append(args),
    )
    assert len(df) == len(windows)
    n = len(windows)
    assert calls[0] == (0, 0, n) and calls[-1] == (n, len(BAD_WINDOWS), n)
    assert [c[0] for c in calls] == sorted(c[0] for c in calls) and len(calls) == 1 + n // 2
    assert df["error"].iloc[0] is pd.NA and df["error"].iloc[-1] is pd.NA
    assert df["is_feasible"].iloc[0] == True and df["proposal_status"].iloc[-1] in (  # noqa: E712
        "optimal",
        "feasible",
    )
    for k, (_, prefix) in enumerate(BAD_WINDOWS, start=1):
        assert str(df["error"].iloc[k]).startswith(prefix), df["error"].iloc[k]
        assert df["is_feasible"].iloc[k] is pd.NA
    assert df.attrs["batch"]["failures"] == len(BAD_WINDOWS)


def test_a_window_over_its_timeout_gets_a_timeout_row():
    """Tests that the per-window wall-clock budget turns a window that runs past it into a
    `timeout` error row naming the job that was running, and the next window still runs."""
    cohort = tiny_cohort(2)
    df = run_batch(
        cohort,
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
        window_timeout_s=1e-6,
    )
    assert df["error"].str.startswith("timeout: ").all()
    assert df.attrs["batch"]["failures"] == 2
    ok = run_batch(
        cohort, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, engine="loop", window_timeout_s=60
    )
    assert ok["error"].isna().all()


def test_a_window_that_kills_its_worker_gets_an_error_row(monkeypatch):
    """Tests that a worker process dying on one window (a native crash) costs only that window:
    the pool is replaced and the other windows in flight are run again."""
    real = batch_jobs.run_window

    def crashing(item, config):
        if item.window_id == "crash":
            os._exit(3)
        return real(item, config)

    monkeypatch.setattr(batch_jobs, "run_window", crashing)  # inherited by forked workers
    cohort = tiny_cohort(4)
    items = [
        WindowItem(i, "crash" if i == 1 else str(i), s.to_json(indent=None))
        for i, s in enumerate(cohort)
    ]
    config = JobConfig(jobs=("feasibility",), time_limit_s=TIME_LIMIT)
    rows = {}
    for results, _ in run_local(chunked(items, 2), config, workers=2, mp_context="fork"):
        for res in results:
            rows[res.index] = res.row
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[1]["error"].startswith("worker_crash:")
    for i in (0, 2, 3):
        assert rows[i]["error"] is None and rows[i]["is_feasible"] is not None


def test_feasibility_without_negotiation_leaves_only_the_figures_null():
    """Tests that negotiation=False keeps every figure of the check (equal to the full run's)
    and leaves the negotiation columns null, infeasible windows included."""
    cohort = tiny_cohort(6)
    full = run_batch(
        cohort,
        jobs=("feasibility",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    check = run_batch(
        cohort,
        jobs=("feasibility",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
        negotiation=False,
    )
    assert (full["is_feasible"] == False).any()  # noqa: E712
    figures = [
        "extra_days_needed",
        "extra_days_possible",
        "slots_to_cut",
        "lifting_banned_suffices",
        "lifting_class_constraints_suffices",
        "negotiation_proven",
    ]
    assert check[figures].isna().all().all() and full[figures].notna().all().all()
    same = [c for c in columns() if c not in figures and not c.endswith("_s")]
    pd.testing.assert_frame_equal(full[same], check[same])
    assert check.attrs["batch"]["negotiation"] is False


def test_jobs_subset_leaves_other_columns_null():
    """Tests that feasibility alone fills the feasibility columns and leaves proposal and health
    columns null, and that the columns are the same whatever the jobs."""
    df = run_batch(
        tiny_cohort(3),
        jobs=("feasibility",),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    assert list(df.columns) == list(columns())
    assert df["is_feasible"].notna().all()
    assert df["proposal_status"].isna().all() and df["critical"].isna().all()
    assert df.attrs["batch"]["jobs"] == ["feasibility"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobs": ("feasibility", "solve")}, "unknown job"),  # a job that does not exist
        ({"time_limit_s": 0}, "time_limit_s"),  # no time to solve
        ({"time_limit_s": True}, "time_limit_s"),  # a bool is not a number of seconds
        ({"work_limit_s": -1}, "work_limit_s"),  # no work to do
        ({"work_limit_s": "1"}, "work_limit_s"),  # a string is not a number of seconds
        ({"engine": "spark"}, "unknown engine"),  # an engine that does not exist
        ({"workers": 0}, "workers"),  # no worker
        (
            {"commit": True, "jobs": ("feasibility",)},
            "include the 'proposal' job",
        ),  # nothing to write
        ({"commit": True}, "database source"),  # files have no database to commit into
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(kwargs, message):
    """Tests that bad run_batch arguments raise ValueError naming the problem, before any work."""
    with pytest.raises(ValueError, match=message):
        run_batch(ListSource(tiny_cohort(1)), **kwargs)


def test_unopenable_source_is_refused():
    """Tests that a path that does not exist raises SourceError (a ValueError)."""
    with pytest.raises(SourceError, match="no such file"):
        run_batch("/nonexistent/windows", engine="loop")


def test_job_names_are_the_documented_three():
    """Tests that the jobs are exactly feasibility, proposal and health, in that order."""
    assert JOBS == ("feasibility", "proposal", "health")


def test_health_without_a_proposal_measures_the_window_as_loaded():
    """Tests that without the proposal job the health columns describe the window as loaded
    (health_of = window) and equal analyze_health called on it."""
    cohort = tiny_cohort(3)
    df = run_batch(
        cohort,
        jobs=("feasibility", "health"),
        time_limit_s=TIME_LIMIT,
        work_limit_s=WORK_LIMIT,
        engine="loop",
    )
    assert (df["health_of"] == "window").all()
    for i, state in enumerate(cohort):
        close = analyze_health(state, time_limit_s=TIME_LIMIT).metrics["close_signal"]
        assert df["critical"].iloc[i] == close["critical"]
        assert df["warning"].iloc[i] == close["warning"]
        assert bool(df["acceptable_to_close"].iloc[i]) == close["acceptable_to_close"]


def test_a_solver_failure_is_an_error_row_with_the_figures_before_it(monkeypatch):
    """Tests that an exception inside a job (here the proposal, on one window) becomes that
    row's error naming the job, keeps the figures computed before it, and spares the others."""
    import smartflow_engine.solver as solver

    real = solver.propose_placement

    def failing(state, **kwargs):
        if len(state.pending_tasks()) != 5:
            raise RuntimeError("boom")
        return real(state, **kwargs)

    monkeypatch.setattr(solver, "propose_placement", failing)
    cohort = tiny_cohort(4)
    sizes = [len(s.pending_tasks()) for s in cohort]
    assert 5 in sizes and any(n != 5 for n in sizes)
    df = run_batch(cohort, time_limit_s=TIME_LIMIT, work_limit_s=WORK_LIMIT, engine="loop")
    for i, n in enumerate(sizes):
        if n == 5:
            assert df["error"].iloc[i] is pd.NA and df["critical"].iloc[i] is not pd.NA
        else:
            assert df["error"].iloc[i] == "proposal_error: RuntimeError: boom"
            assert df["is_feasible"].iloc[i] is not pd.NA  # feasibility ran before
            assert df["proposal_status"].iloc[i] is pd.NA and df["critical"].iloc[i] is pd.NA


def test_stream_chunks_keeps_a_bounded_number_in_flight():
    """Tests the pool's and Ray's shared submission loop: every chunk is submitted once and
    yielded once, never more than `in_flight` are outstanding, and the source is read lazily
    (topped up as chunks come back, in the order they finish)."""
    from smartflow_engine.batch.engines import stream_chunks

    read: list[int] = []

    def source():
        for k in range(7):
            read.append(k)
            yield [k]

    outstanding: set[int] = set()
    peak = 0

    def submit(chunk):
        nonlocal peak
        outstanding.add(chunk[0])
        peak = max(peak, len(outstanding))
        return chunk[0]

    def wait_any(handles):
        done = max(handles)  # the newest finishes first: order must follow finishing
        outstanding.discard(done)
        return [done]

    got = []
    for handle, chunk in stream_chunks(source(), submit, wait_any, in_flight=3):
        assert chunk == [handle]
        got.append(handle)
        assert len(read) <= len(got) + 3  # never more than in_flight ahead of the results
    assert sorted(got) == list(range(7)) and peak == 3
    assert got[:2] == [2, 3]  # 0, 1, 2 in flight; 2 finishes, 3 is submitted and finishes next


def test_pool_workers_hash_strings_with_the_fixed_seed():
    """Tests that the pool's proposals are those of an interpreter started with
    PYTHONHASHSEED=HASH_SEED, whatever this process's own seed: a window whose proposal depends
    on string-hash order (seed 12 of the benchmark cohort) gets the same row on every run."""

    from smartflow_engine.batch.engines import HASH_SEED
    from smartflow_engine.state.synthetic import synthetic_window

    text = synthetic_window(12, 30, variant="tight", with_task_classes=False).to_json(indent=None)
    expected = proposal_with_hash_seed(text, HASH_SEED)["objective"]
    df = run_batch(
        [text], jobs=("proposal",), time_limit_s=5.0, work_limit_s=0.08, engine="local", workers=1
    )
    assert not df["proposal_wall_limited"].iloc[0]
    assert df["obj_weighted_total"].iloc[0] == expected["weighted_total"]
    assert df["obj_context_switch"].iloc[0] == expected["context_switch"]

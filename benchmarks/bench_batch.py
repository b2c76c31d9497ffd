"""Batch throughput: windows per second for a cohort of seeded 30-day windows, on a plain loop in
one process, the local process pool and Ray, with 1 and 2 workers.

The cohort mixes variants (plain, fragmented, tight, with and without task classes, and one window
in ten over-full), so about a tenth is proven infeasible. Two job sets:

- *feasibility*: ``check_feasibility`` + ``negotiation_figures`` (the exact proof; milliseconds);
- *feasibility + proposal*: also ``propose_placement`` at a fixed time limit (the proposal spends
  its work budget, a share of the limit, so this is bounded by the limit, not by the engine).

Also measured: the per-window cost of shipping a window and parsing it (the null job set, no
solver), which is the engines' own overhead; start-up (local: spawning and importing in each
worker, included in the pool's wall time; Ray: ``ray.init`` and the first tasks' imports, done
before timing and reported apart); a steady rate from the first chunk's results to the last,
which excludes start-up for every engine alike; peak resident memory per worker process. Every engine runs the
same windows in the same process, one after the other; the tables must be identical (checked).
The 50,000-student figure is a projection from the measured per-window cost, not a measurement.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

import pandas as pd
from rich.console import Console

from smartflow_engine.batch import ListSource, run_batch
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window

DAYS = 30
PROPOSAL_LIMIT_S = 0.2
FEAS_LIMIT_S = 5.0
JOB_SETS: dict[str, tuple[str, ...]] = {
    "null (ship + parse)": (),
    "feasibility": ("feasibility",),
    "feasibility + proposal": ("feasibility", "proposal"),
}
STUDENTS = 50_000


def cohort(n: int, days: int = DAYS) -> list[ScheduleState]:
    """``n`` seeded windows: kind by seed % 10 (0 over-full, 1-3 tight, 4-6 fragmented, 7-9 plain),
    task classes on odd seeds."""
    out = []
    for seed in range(n):
        kind = seed % 10
        classes = seed % 2 == 1
        if kind == 0:
            out.append(synthetic_window(seed, days, variant="plain", pending=5 * days,
                                        with_task_classes=classes))
        else:
            variant = "tight" if kind <= 3 else "fragmented" if kind <= 6 else "plain"
            out.append(synthetic_window(seed, days, variant=variant, with_task_classes=classes))
    return out


def _ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _run(windows: list[ScheduleState], jobs: tuple[str, ...], engine: str, workers: int,
         limit: float) -> pd.DataFrame:
    """One batch; ``attrs["progress"]`` records ``(seconds since start, windows done)`` per chunk."""
    marks: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    df = run_batch(ListSource(windows), jobs=jobs, time_limit_s=limit, seed=0, engine=engine,
                   workers=workers if engine != "loop" else None,
                   progress=lambda done, _f, _t: marks.append((time.perf_counter() - t0, done)))
    df.attrs["progress"] = marks
    return df


def _figures(df: pd.DataFrame) -> dict[str, Any]:
    """Wall rate (start-up included) and steady rate (first chunk back to last chunk back)."""
    run = df.attrs["batch"]
    marks = [m for m in df.attrs["progress"] if m[1] > 0]  # chunks back (not the start call)
    wall = run["wall_s"]
    steady = float("nan")
    if len(marks) >= 2 and marks[-1][0] > marks[0][0]:
        steady = (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])
    return {"wall": wall, "rate": len(df) / wall, "steady": steady,
            "first": marks[0][0] if marks else float("nan"),
            "peak": max(run["peak_rss_mb"].values()) if run["peak_rss_mb"] else float("nan"),
            "errors": int(df["error"].notna().sum())}


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    runtime = [c for c in a.columns if c.endswith("_s")]
    return a.drop(columns=runtime).equals(b.drop(columns=runtime))


def run(quick: bool = False) -> str:
    console = Console(stderr=True)
    n_feas = 40 if quick else 1000
    n_prop = 8 if quick else 100
    load_before = os.getloadavg()
    windows = cohort(n_feas)
    engines: list[tuple[str, int]] = [("loop", 1), ("local", 1), ("local", 2)]
    if _ray_available():
        engines += [("ray", 1), ("ray", 2)]
    results: dict[tuple[str, str, int], dict[str, Any]] = {}
    tables: dict[tuple[str, str, int], pd.DataFrame] = {}
    ray_init_s: dict[int, float] = {}

    def measure(engine: str, workers: int) -> None:
        for name, jobs in JOB_SETS.items():
            sample = windows if jobs != JOB_SETS["feasibility + proposal"] else windows[:n_prop]
            limit = PROPOSAL_LIMIT_S if "proposal" in jobs else FEAS_LIMIT_S
            console.print(f"bench_batch: {name} on {engine} x{workers} ({len(sample)} windows)")
            df = _run(sample, jobs, engine, workers, limit)
            tables[(name, engine, workers)] = df
            results[(name, engine, workers)] = _figures(df)

    for engine, workers in engines:
        if engine == "local":
            measure(engine, workers)  # each run starts its own pool (in its wall time)
        elif engine == "ray":
            from smartflow_engine.batch import ray_init

            t0 = time.perf_counter()
            ray_init(workers=workers)
            ray_init_s[workers] = time.perf_counter() - t0
            import ray

            try:
                # Warm-up: the Ray workers start and import the engine (kept across runs).
                _run(windows[: 4 * workers], ("feasibility", "proposal"), "ray", workers, 0.05)
                measure(engine, workers)
            finally:
                ray.shutdown()
        else:
            _run(windows[:2], ("feasibility", "proposal"), "loop", 1, 0.05)  # imports, kernels
            measure(engine, workers)

    split = _feasibility_split(windows)
    base = tables[("feasibility", "loop", 1)]
    infeasible = int((base["is_feasible"] == False).sum())  # noqa: E712
    unproven = int(base["is_feasible"].isna().sum())
    identical = {name: all(_same(tables[(name, "loop", 1)], tables[(name, e, w)])
                           for e, w in engines) for name in JOB_SETS}
    load_after = os.getloadavg()

    lines = [
        "## Batch (run_batch: loop, local process pool, Ray)",
        "",
        f"{n_feas} seeded {DAYS}-day windows (kinds by seed: 1 in 10 over-full, 3 tight, 3 "
        f"fragmented, 3 plain; task classes on half): {infeasible} proven infeasible "
        f"({infeasible / n_feas:.0%}), {unproven} unproven. *feasibility*: check_feasibility + "
        f"negotiation figures (limit {FEAS_LIMIT_S:g} s); *feasibility + proposal*: also "
        f"propose_placement at {PROPOSAL_LIMIT_S:g} s, on the first {n_prop} windows "
        + ("(reduced from 1,000: at the fixed limit each proposal spends its work budget, and the "
           "full run would hold the shared machine for tens of minutes)" if not quick else "")
        + f"; *null*: ship and parse only. Load average on this shared 2-core machine "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after: other engineers' jobs ran "
        "meanwhile, so absolute rates are low and noisy; compare engines within a row group.",
        "",
        "*windows/s* counts the whole wall time (a local pool's start-up, spawning its workers and "
        "importing the engine in each, included); *steady* counts from the first chunk's results "
        "to the last (start-up excluded, for every engine alike); *x one worker* compares steady "
        "rates of the same engine.",
        "",
        "| jobs | engine | workers | windows | wall (s) | first results after (s) | windows/s "
        "| steady windows/s | x one worker | peak MB per worker | errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in JOB_SETS:
        for engine, workers in engines:
            r = results[(name, engine, workers)]
            one = results.get((name, engine, 1))
            ratio = r["steady"] / one["steady"] if one else float("nan")
            lines.append(
                f"| {name} | {engine} | {workers} | {len(tables[(name, engine, workers)])} | "
                f"{r['wall']:.1f} | {r['first']:.1f} | {r['rate']:.1f} | {r['steady']:.1f} | "
                f"{ratio:.2f}x | {r['peak']:.0f} | {r['errors']} |")
    if ray_init_s:
        lines += ["", "Ray start-up (before timing; its workers then warmed up on a few windows): "
                  + ", ".join(f"ray.init with {w} CPU(s) {t:.1f} s" for w, t in ray_init_s.items())
                  + "."]
    lines += ["", "Tables identical across engines and worker counts (runtime columns aside): "
              + "; ".join(f"{name}: {'yes' if same else 'NO'}" for name, same in identical.items())
              + "." + ("" if all(identical.values()) else
                       " A proposal differs when its wall-clock safety net cut the search before "
                       "its deterministic work budget ran out (the machine was several times "
                       "slower than the solver's calibration under the other engineers' load); "
                       "the tests check identity on windows whose proposals finish well inside "
                       "their limits."), ""]

    # Ray's overhead per window: null jobs, same CPUs, against the local pool (net rates).
    overhead = []
    for w in (1, 2):
        if ("null (ship + parse)", "ray", w) in results:
            ray_r = results[("null (ship + parse)", "ray", w)]["steady"]
            loc_r = results[("null (ship + parse)", "local", w)]["steady"]
            overhead.append(f"{w} worker(s): Ray {1000 / ray_r:.2f} ms of wall time per window vs "
                            f"the local pool's {1000 / loc_r:.2f} ms")
    if overhead:
        lines += ["Engine overhead per window (null jobs: ship, parse, return; steady rates): "
                  + "; ".join(overhead) + ".", ""]

    # Goals (issue 13).
    f1 = results[("feasibility", "local", 1)]["steady"]
    f2 = results[("feasibility", "local", 2)]["steady"]
    goals = [f"- feasibility on 2 workers vs 1 (local pool, steady): {f2 / f1:.2f}x "
             f"(goal >= 1.8x: {'met' if f2 / f1 >= 1.8 else 'not met'}); {f2:.0f} windows/s "
             f"(goal >= 500: {'met' if f2 >= 500 else 'not met'})."]
    if ("feasibility", "ray", 2) in results:
        r2 = results[("feasibility", "ray", 2)]["steady"]
        goals.append(f"- Ray vs local pool, feasibility, 2 workers: {r2 / f2:.2f}x the pool's "
                     f"rate (goal: within 15%: {'met' if r2 >= 0.85 * f2 else 'not met'}).")
    loop_rate = results[("feasibility", "loop", 1)]["steady"]
    goals.append(f"- plain loop in one process: {loop_rate:.0f} windows/s (feasibility); "
                 f"per-window feasibility time, median {1000 * statistics.median(base['feasibility_s'].dropna()):.1f} ms, "
                 f"mean {1000 * base['feasibility_s'].mean():.1f} ms (the infeasible windows' "
                 "negotiation figures dominate the mean).")
    goals.append(f"- where the time goes (plain loop, one call at a time): check_feasibility "
                 f"alone {split['check_feasible']} on feasible windows, {split['check_infeasible']} "
                 f"on infeasible ones; negotiation_figures on infeasible ones "
                 f"{split['negotiation']}. The check on a feasible window takes milliseconds; the "
                 "proofs on infeasible windows and their exact negotiation figures (extra days, "
                 "lifting flags) dominate the feasibility job's mean.")
    lines += ["Goals:", *goals, ""]

    # Projection for 50,000 students.
    lines += [f"Projection (not measured) for {STUDENTS:,} students: per-window cost measured "
              "with one local worker (steady rate), scaled by the measured 2-worker efficiency "
              "and assumed to scale the same way across machines of 2 cores.", "",
              "| jobs | s per window (1 worker) | 2-worker efficiency | 1 machine | 10 machines | "
              "50 machines |", "|---|---:|---:|---:|---:|---:|"]
    for name in ("feasibility", "feasibility + proposal"):
        c = 1 / results[(name, "local", 1)]["steady"]
        eff = min(1.0, results[(name, "local", 2)]["steady"] * c / 2)
        cells = [STUDENTS * c / (m * 2 * eff) for m in (1, 10, 50)]
        lines.append(f"| {name} | {c:.4f} | {eff:.0%} | "
                     + " | ".join(_duration(x) for x in cells) + " |")
    return "\n".join(lines)


def _feasibility_split(windows: list[ScheduleState]) -> dict[str, str]:
    """Median / mean ms of check_feasibility by verdict, and of negotiation_figures."""
    from smartflow_engine.solver import check_feasibility, negotiation_figures

    times: dict[str, list[float]] = {"check_feasible": [], "check_infeasible": [],
                                     "negotiation": []}
    for state in windows:
        t0 = time.perf_counter()
        report = check_feasibility(state, time_limit_s=FEAS_LIMIT_S, num_workers=1,
                                   explain=False)
        t1 = time.perf_counter()
        times["check_feasible" if report.is_feasible else "check_infeasible"].append(t1 - t0)
        if report.is_feasible is False:
            t1 = time.perf_counter()
            negotiation_figures(state, report, time_limit_s=FEAS_LIMIT_S, num_workers=1)
            times["negotiation"].append(time.perf_counter() - t1)
    return {k: (f"median {1000 * statistics.median(v):.1f} ms, mean "
                f"{1000 * statistics.mean(v):.1f} ms ({len(v)} windows)" if v else "n/a")
            for k, v in times.items()}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))

"""Tests of when the pricing kernels are compiled and loaded (solver._jit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from smartflow_engine.solver import _jit
from smartflow_engine.solver.budget import DEFAULT_CALIBRATION

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, cache_dir: Path, mode: str | None = None) -> dict[str, object]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env.pop("SMARTFLOW_KERNELS", None)
    if mode is not None:
        env["SMARTFLOW_KERNELS"] = mode
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


PROPOSE = """
    import json
    from smartflow_engine.cli import sample_window_path
    from dataclasses import replace
    from smartflow_engine.solver import _jit, propose_placement
    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION
    from smartflow_engine.state import ScheduleState
    soft = replace(DEFAULT_CALIBRATION, one_search=False)  # the path that uses the kernels
    state = ScheduleState.from_json(sample_window_path())
    p = propose_placement(state, time_limit_s=0.5, seed=0, calibration=soft)
    done = _jit.wait_for_background(600)
    again = propose_placement(state, time_limit_s=0.5, seed=0, calibration=soft)
    print(json.dumps({"first_bound": p.bound, "first_columns": p.columns_explored,
                      "first_status": p.status, "waited": done,
                      "second_bound": again.bound, "second_columns": again.columns_explored,
                      "second_placed": again.objective["placed_slots"],
                      "first_placed": p.objective["placed_slots"]}))
"""


@pytest.mark.slow
def test_cold_cache_first_proposal_skips_columns_then_background_fills_cache(
    tmp_path: Path,
) -> None:
    """Tests that with an empty numba cache the first proposal does not compile in-process (no
    column search, no column bound, still the proven maximum of periods), that the background
    process fills the cache, and that the next proposal in the same process uses the kernels;
    a fresh process then finds them in the cache."""
    cold = _run(PROPOSE, tmp_path)
    assert cold["first_columns"] == 0
    assert cold["waited"] is True
    assert cold["second_columns"] >= 1 and cold["second_bound"] is not None
    assert cold["first_placed"] == cold["second_placed"]
    assert any(tmp_path.rglob("*.nbi"))
    warm = _run(PROPOSE, tmp_path)
    assert warm["first_columns"] >= 1 and warm["first_bound"] is not None
    assert warm["first_bound"] == warm["second_bound"]


@pytest.mark.slow
def test_wait_mode_compiles_before_the_first_proposal(tmp_path: Path) -> None:
    """Tests that SMARTFLOW_KERNELS=wait compiles in-process, so even the first proposal of an
    empty cache runs the column search."""
    out = _run(PROPOSE, tmp_path, mode="wait")
    assert out["first_columns"] >= 1 and out["first_bound"] == out["second_bound"]


def test_cache_index_is_readable_with_installed_numba() -> None:
    """Tests that the cache inspection works with the installed numba (a numba whose internals
    changed would make every process compile in-process again, silently)."""
    _jit.compile_now()
    for name, dispatcher in _jit._dispatchers().items():
        sigs = _jit.cached_signatures(dispatcher)
        assert sigs is not None, name
        assert sigs, f"{name} is not in numba's cache after compiling"
    assert set(_jit._dispatchers()) >= {"day_kernel", "totals_kernel", "lagrange_kernel"}


def test_warm_up_covers_every_signature_a_proposal_uses() -> None:
    """Tests that a proposal after the warm-up compiles nothing new (the cache written by the
    background process is complete)."""
    from smartflow_engine.cli import sample_window_path
    from smartflow_engine.solver import propose_placement
    from smartflow_engine.state import ScheduleState
    from smartflow_engine.state.synthetic import synthetic_window

    _jit.compile_now()
    before = {n: set(d.signatures) for n, d in _jit._dispatchers().items()}
    soft = replace(DEFAULT_CALIBRATION, one_search=False)  # the path that uses the kernels
    propose_placement(
        ScheduleState.from_json(sample_window_path()), time_limit_s=0.5, calibration=soft
    )
    propose_placement(
        synthetic_window(3, 30, pending=60, with_task_classes=True),
        time_limit_s=0.5,
        calibration=soft,
    )
    after = {n: set(d.signatures) for n, d in _jit._dispatchers().items()}
    assert after == before


@pytest.mark.slow
def test_warm_up_command_fills_an_empty_cache(tmp_path: Path) -> None:
    """Tests that `smartflow warm-up` compiles the kernels into an empty numba cache, so a
    fresh process then finds every kernel there."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    subprocess.run(
        [sys.executable, "-m", "smartflow_engine.cli", "warm-up"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    out = _run(
        """
        import json
        from smartflow_engine.solver import _jit
        print(json.dumps({n: len(_jit.cached_signatures(d) or [])
                          for n, d in _jit._dispatchers().items()}))
    """,
        tmp_path,
    )
    assert out and all(v >= 1 for v in out.values())

"""Subject codes of sparse task ids (state ids may be anything up to 2**31 - 1): the lookup
never allocates by the largest id, and every health view works on such a window."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smartflow_engine import health_facts
from smartflow_engine.concepts import subject_of
from smartflow_engine.state import ScheduleState
from smartflow_engine.state.synthetic import synthetic_window


def shifted(state: ScheduleState, by: int) -> ScheduleState:
    """``state`` with every state id (and embed host) raised by ``by``."""
    data = state.to_dict()
    for task in data["tasks"]:
        task["state_id"] += by
        if "embed_host" in task:
            task["embed_host"] += by
        task.pop("embedded_by", None)
    return ScheduleState.model_validate(data)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 50), by=st.sampled_from([0, 7, 1_000, 2_000_000_000]))
def test_of_ids_gives_each_tasks_subject_code(seed: int, by: int) -> None:
    """Tests that of_ids (dense table or sorted ids alike) gives every period of the grid the
    code of its task's subject, 0 for free periods and events, and that the study layer puts
    a guest's subject over its host's."""
    state = shifted(synthetic_window(seed, 13, with_task_classes=seed % 2 == 0), by)
    codes = health_facts.subject_codes(state.tasks)
    grid = state.grid
    got = codes.of_ids(grid.owner)
    for d in range(state.num_days):
        for q in range(state.slots_per_day):
            tid = int(grid.owner[d, q])
            want = 0
            if tid:
                name = subject_of(state.task(tid))  # type: ignore[arg-type]
                want = 0 if name is None else codes.code_of[name]
            assert got[d, q] == want
    study = codes.study_layer(grid.owner, grid.guest)
    hosted = grid.guest != 0
    assert (study[hosted] == codes.of_ids(grid.guest)[hosted]).all()
    assert (study[~hosted] == got[~hosted]).all()


@pytest.mark.parametrize("by", [0, 2_000_000_000])
def test_of_ids_refuses_an_unknown_id(by: int) -> None:
    """Tests that an id of no task is an IndexError (the evaluators rebuild on it), on both
    the dense table and the sorted ids."""
    state = shifted(synthetic_window(1, 7), by)
    codes = health_facts.subject_codes(state.tasks)
    top = max(t.state_id for t in state.tasks)
    for bad in (top + 1, top + 10**6):
        with pytest.raises(IndexError):
            codes.of_ids(np.array([[0, bad]], dtype=np.int64))


def test_a_window_of_huge_ids_fits_in_little_memory() -> None:
    """Tests that the read, analysis and proposal tools answer on a window whose state ids are
    near 2**31 in a process limited to 4 GB of address space: no table grows with the
    largest id (a list or table by id would need ~16 GB)."""
    script = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        from smartflow_engine.state import ScheduleState
        from smartflow_engine.state.synthetic import synthetic_window
        from smartflow_engine.tools_adapter import Toolbox
        data = synthetic_window(1, 30, with_task_classes=True).to_dict()
        for t in data["tasks"]:
            t["state_id"] += 2_000_000_000
            if "embed_host" in t:
                t["embed_host"] += 2_000_000_000
            t.pop("embedded_by", None)
        box = Toolbox(ScheduleState.model_validate(data))
        for name in ("analyze_load", "analyze_context", "analyze_subjects",
                     "analyze_tolerance", "analyze_health", "query_target_tasks"):
            reply = box.call(name, {})
            assert '"success": true' in reply, (name, reply[:300])
        reply = box.call("propose_placement", {"time_limit_s": 1})
        assert "粗排方案" in reply, reply[:300]
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")

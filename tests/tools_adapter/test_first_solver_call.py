"""A process's first solver call keeps its limit: the one-time imports are paid when the
toolbox is made, not inside the call's clock."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_fresh_process_first_proposal_keeps_its_limit_and_its_after_line() -> None:
    """Tests, in a fresh process, that the first propose_placement call (2 s) ends within its
    limit and still has the time to read the health after applying it ("1/1 → 0/0", not
    "时限内未计算"): before, CP-SAT's import (~0.4 s) ran inside the call's clock, the call
    overran its limit and the line was left out."""
    script = textwrap.dedent(
        """
        import time
        from smartflow_engine import Toolbox
        from tests.helpers.solver_windows import make_state
        state = make_state(1, 6, [{"duration": 2}, {"duration": 2}])
        box = Toolbox(state)
        started = time.perf_counter()
        reply = box.call("propose_placement", {"time_limit_s": 2})
        took = time.perf_counter() - started
        print(round(took, 3))
        print(reply)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    took, reply = done.stdout.split("\n", 1)
    assert float(took) <= 2.0, took
    assert "时限内未计算" not in reply and "体检（严重/警告）0/0 → 0/0" in reply, reply

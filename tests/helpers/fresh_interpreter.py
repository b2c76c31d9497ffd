"""A proposal computed in a fresh interpreter with a chosen string-hash seed (shared by the
solver's and the batch's hash-order tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_CODE = (
    "import sys, json; from smartflow_engine.state import ScheduleState; "
    "from smartflow_engine.solver import propose_placement; "
    "s = ScheduleState.from_json(sys.stdin.read()); "
    "p = propose_placement(s, time_limit_s=60.0, seed=0, num_workers=1, work_limit_s=0.08); "
    "assert not p.wall_limited; "
    "print(json.dumps({'objective': p.objective, 'placements': "
    "[(x.task_id, x.day, x.slot_start) for x in p.placements]}, sort_keys=True))"
)


def proposal_with_hash_seed(text: str, hash_seed: str) -> dict[str, Any]:
    """The proposal (``objective``, ``placements``) of the window ``text`` at seed 0 and a fixed
    work budget (0.08 s, under a wall limit no machine reaches), computed by a fresh interpreter
    started with ``PYTHONHASHSEED=hash_seed``."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _CODE],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result

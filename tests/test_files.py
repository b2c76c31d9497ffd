"""Tests that every file the engine writes is written atomically (issue 44 item 9): a process
killed in the middle of writing leaves the file it replaces as it was, never a part."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from smartflow_engine.batch.sinks import write_table
from smartflow_engine.files import atomic_path, write_atomic
from tests.helpers.windows import DATA

ROOT = Path(__file__).resolve().parents[1]
OLD = '{"old": "the previous state file, which must survive"}'
LIMIT = 600  # bytes a writer gets out before the kernel stops its writes


def _killed_while_writing(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``smartflow ARGV`` with a file-size limit: the kernel refuses every write past LIMIT
    bytes (Python ignores SIGXFSZ, so the write fails with EFBIG), which stops the process in
    the middle of writing its output file, as a kill there would."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return subprocess.run(
        [sys.executable, "-c", "from smartflow_engine.cli import main; main()", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
    )


COMMANDS = [
    # the commands that write a state file with --out
    [
        "call",
        "move",
        "--state",
        "{state}",
        "--args",
        '{"task_id": 9, "new_day": 6, "new_slot_start": 1}',
        "--out",
        "{out}",
    ],
    ["propose", "{state}", "--time-limit", "0.5", "--out", "{out}"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=["call", "propose"])
def test_a_kill_mid_write_leaves_the_old_state_file(tmp_path: Path, argv: list[str]):
    """Tests issue 44 item 9: ``smartflow call/propose --out FILE`` killed while writing FILE
    leaves FILE exactly as it was (before: written in place, a kill left a part of the new
    state, 0 bytes in 11 of 12 runs of the issue's report)."""
    out = tmp_path / "state.json"
    out.write_text(OLD, encoding="utf-8")
    state = DATA / "sample_window.json"
    done = _killed_while_writing(
        *(a.replace("{state}", str(state)).replace("{out}", str(out)) for a in argv)
    )
    assert done.returncode in (2, -signal.SIGXFSZ), (done.returncode, done.stdout, done.stderr)
    assert done.returncode == -signal.SIGXFSZ or "File too large" in done.stderr
    assert out.read_text(encoding="utf-8") == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_write_atomic_replaces_whole_or_not_at_all(tmp_path: Path):
    """Tests the helper: a write that completes replaces the file (its permissions kept); a
    writer that fails half-way leaves the old file and no temporary file behind."""
    target = tmp_path / "sub" / "out.json"
    write_atomic(target, "first")
    target.chmod(0o640)
    write_atomic(target, b"second")
    assert target.read_text() == "second" and (target.stat().st_mode & 0o777) == 0o640
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half of the thi")
        raise RuntimeError("killed")
    assert target.read_text() == "second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_batch_tables_are_written_atomically(tmp_path: Path, suffix: str):
    """Tests that a batch table goes through a temporary file with its own suffix (the format
    is read from it) and lands whole."""
    target = tmp_path / f"cohort{suffix}"
    df = pd.DataFrame({"window": ["a", "b"], "critical": [1, 2]})
    write_table(df, target)
    back = pd.read_parquet(target) if suffix == ".parquet" else pd.read_csv(target)
    assert back.to_dict("list") == df.to_dict("list")
    assert [p.name for p in tmp_path.iterdir()] == [target.name]

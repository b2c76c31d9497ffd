"""Run every benchmark module side by side and assemble one Markdown report.

Each ``benchmarks/bench_<area>.py`` exposes ``run(quick: bool = False) -> str`` returning a Markdown
section. ``smartflow bench`` (or ``python -m benchmarks.run``) runs them all in one process.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
from pathlib import Path

from rich.console import Console

AREAS = (
    "ratios",
    "tools",
    "solver",
    "analyzers",
    "adapters",
    "store",
    "startup",
    "batch",
    "loop",
    "close",
    "tokens",
    "lanes",
    "rough_build",
)


def run_all(quick: bool = False, console: Console | None = None) -> str:
    console = console or Console(stderr=True)
    here = Path(__file__).parent
    parts = [
        "# smartflow-engine benchmark results",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {'quick' if quick else 'full'} run on "
        f"{time.strftime('%Y-%m-%d')}. Medians of repeated calls; every ratio is measured side by side "
        "in the same run on the same seeded windows (the machine is shared and noisy: trust ratios "
        "over absolute times).",
        "",
    ]
    for area in AREAS:
        if not (here / f"bench_{area}.py").exists():
            continue
        console.print(f"[bold]benchmark: {area}[/bold]")
        module = importlib.import_module(f"benchmarks.bench_{area}")
        started = time.perf_counter()
        parts.append(module.run(quick=quick))
        parts.append(f"\n_{area}: {time.perf_counter() - started:.1f} s_\n")
    return "\n".join(parts)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print(run_all(quick=quick))

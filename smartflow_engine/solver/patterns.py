"""Packing patterns of one free run: which multisets of task kinds fit into it together.

A *kind* is what matters about a task inside one run: its duration and the offsets where it may
start there (its class's banned periods fall at fixed offsets of the run). A *pattern* is a
multiset of kinds that fits into the run at once; only inclusion-maximal patterns are kept (a
copy of the run that takes a pattern can always take fewer tasks). Patterns depend only on the
run length and the kinds, so they are cached across runs, models and calls.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

MAX_PATTERNS = 32  # above this a run type uses the positional (coverage) encoding instead

KindSpec = tuple[tuple[int, tuple[int, ...]], ...]  # per kind: (duration, allowed offsets)


@lru_cache(maxsize=4096)
def run_patterns(length: int, kinds: KindSpec) -> tuple[np.ndarray, tuple[tuple[int, ...], ...]]:
    """Maximal patterns of a run of ``length`` periods for ``kinds``.

    Returns ``(counts, layouts)``: ``counts[i, k]`` is how many tasks of kind ``k`` pattern ``i``
    holds; ``layouts[i]`` is one realisation as a flat tuple ``(offset, kind, offset, kind, ...)``.
    """
    n = len(kinds)
    allowed = [set(offs) for _, offs in kinds]
    # reach[pos]: multiset (as count tuple) -> one layout, for packings of offsets pos..length-1.
    reach: list[dict[tuple[int, ...], tuple[int, ...]]] = [{} for _ in range(length + 2)]
    reach[length] = {(0,) * n: ()}
    reach[length + 1] = {}
    for pos in range(length - 1, -1, -1):
        here = dict(reach[pos + 1])
        for k, (d, _) in enumerate(kinds):
            if pos not in allowed[k] or pos + d > length:
                continue
            for ms, lay in reach[pos + d].items():
                grown = (*ms[:k], ms[k] + 1, *ms[k + 1 :])
                if grown not in here:
                    here[grown] = (pos, k, *lay)
        reach[pos] = here
    items = list(reach[0].items())
    counts = np.array([ms for ms, _ in items], dtype=np.int64).reshape(len(items), n)
    keep = _maximal(counts)
    return counts[keep], tuple(items[i][1] for i in np.flatnonzero(keep))


def _maximal(counts: np.ndarray) -> np.ndarray:
    """Rows not dominated by another row (>= everywhere, > somewhere)."""
    if len(counts) == 0:
        return np.zeros(0, dtype=bool)
    ge = (counts[:, None, :] >= counts[None, :, :]).all(axis=2)  # ge[i, j]: i dominates-or-eq j
    gt = ge & ~ge.T  # strictly dominates
    return np.asarray(~gt.any(axis=0), dtype=bool)


@lru_cache(maxsize=4096)
def count_patterns(length: int, kinds: KindSpec) -> int:
    """Number of maximal patterns, without building them when there are obviously too many."""
    if len(kinds) > 6:
        return MAX_PATTERNS + 1
    return len(run_patterns(length, kinds)[1])

"""The pricing programme's cell states, shared by :mod:`.pricing` (which builds the day data)
and :mod:`._kernels` (the compiled programme). They live here, below both, so that neither
imports the other for them (``_kernels`` imports numba and is loaded lazily by ``pricing``).

A state is the previous cell's, seen from the current one; subjects follow from ``OCC`` on.
The compiled programme reads these as compile-time constants: after changing them, delete its
numba cache (``__pycache__/_kernels*.nbi``/``.nbc``), which only tracks ``_kernels.py`` itself.
"""

from __future__ import annotations

FREE_CAND = 0  # free, its left neighbour is not free: isolated unless the next cell is free
FREE_OK = 1  # free with a free left neighbour
OCC_NONE = 2  # occupied by something without a subject (or the run's edge)
OCC = 3  # OCC + k: occupied by subject k

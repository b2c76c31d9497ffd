"""The linear relaxation of the counting model, and what it proves (issue 10, item 6).

:class:`MatrixSink` records the rows :class:`.counting.CountModelBuilder` writes; GLOP solves
them as a linear programme. Two things can come out of it, and neither trusts a float:

- **A safe bound.** For any row multipliers ``y`` (here GLOP's duals, rounded to multiples of
  ``1/D``), weak duality gives, for every ``x`` inside the variable bounds ``[l, u]`` and the
  row bounds ``[lo, hi]``::

      c·x = y·(A x) + (c − Aᵀy)·x  <=  Σ_i (y_i > 0 ? y_i hi_i : y_i lo_i)
                                      + Σ_j max((c − Aᵀy)_j l_j, (c − Aᵀy)_j u_j)

  With ``Y = D y`` integral, ``D`` times the right-hand side is an integer sum over the model's
  integer data, computed exactly in int64 (magnitudes are checked first; multipliers too
  large for that give no bound, and CP-SAT decides). The objective is
  integral on integer points, so its floor bounds the integer optimum: a proof however
  imprecise the multipliers are (bad multipliers only weaken it).
- **An integral optimum.** When GLOP's solution rounds to integers that satisfy every bound and
  every row (checked exactly in integers), it is a solution of the integer model itself.

On the 120-day tight windows with task classes the bound met the integer optimum on every
benchmark window, and a greedy packing or the integral optimum met the bound on most of them,
so CP-SAT is not needed there (``benchmarks/results_solver.md``).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

INF = float("inf")
DUAL_SCALE = 1 << 20  # D: multipliers are rounded to multiples of 1/D
INTEGRAL_TOL = 1e-6  # an LP value this close to an integer is tried as that integer


@dataclass
class MatrixSink:
    """A :class:`.counting.LinearSink` that records the rows (for the relaxation)."""

    lb: list[int] = field(default_factory=list)
    ub: list[int] = field(default_factory=list)
    row_of: list[int] = field(default_factory=list)  # per entry: its row
    col_of: list[int] = field(default_factory=list)  # per entry: its variable
    coef: list[int] = field(default_factory=list)
    row_lb: list[float] = field(default_factory=list)
    row_ub: list[float] = field(default_factory=list)
    objective: dict[int, int] = field(default_factory=dict)
    maximize: bool = True

    @property
    def model(self) -> MatrixSink:
        return self

    def new_var(self, lb: int, ub: int, name: str) -> int:  # names are CP-SAT's only
        self.lb.append(int(lb))
        self.ub.append(int(ub))
        return len(self.lb) - 1

    def add_row(self, idx: Sequence[int], coeffs: Sequence[int], lb: float, ub: float) -> None:
        r = len(self.row_lb)
        self.row_of.extend([r] * len(idx))
        self.col_of.extend(idx)
        self.coef.extend(coeffs)
        self.row_lb.append(lb)
        self.row_ub.append(ub)

    def set_objective(self, idx: Sequence[int], coeffs: Sequence[int], maximize: bool) -> None:
        self.objective = {}
        for i, c in zip(idx, coeffs, strict=True):
            self.objective[i] = self.objective.get(i, 0) + int(c)
        self.maximize = maximize


@dataclass(frozen=True)
class Relaxation:
    """What the relaxation proved.

    ``bound``: an integer bound on the objective of every integer solution (an upper bound when
    maximising, a lower bound when minimising), ``None`` when none could be certified;
    ``values``: an integer solution of the model (the LP optimum, integral), or ``None``;
    ``lp_value``: GLOP's optimum and ``solution`` its point (floats: hints, never proofs).
    """

    bound: int | None
    values: list[int] | None
    lp_value: float | None
    solution: np.ndarray | None = None


def solve_relaxation(sink: MatrixSink, *, time_limit_s: float) -> Relaxation:
    """Solve the recorded model's linear relaxation with GLOP and certify what it shows."""
    # Imported by name: a static import makes mypy read ortools' partial linear_solver stubs,
    # which then reject a pywraplp import (the deleted column generation had one).
    mbh: Any = importlib.import_module("ortools.linear_solver.python.model_builder_helper")
    data = _Data.of(sink)
    model = mbh.ModelBuilderHelper()
    n = len(data.lb)
    model.add_var_array_with_bounds(
        data.lb.astype(float), data.ub.astype(float), np.zeros(n, dtype=bool), ""
    )
    new_row, set_lb, set_ub = (
        model.add_linear_constraint,
        model.set_constraint_lower_bound,
        model.set_constraint_upper_bound,
    )
    for lo, hi in zip(sink.row_lb, sink.row_ub, strict=True):
        r = new_row()
        set_lb(r, lo)
        set_ub(r, hi)
    add = model.add_term_to_constraint
    for r, j, a in zip(sink.row_of, sink.col_of, sink.coef, strict=True):
        add(r, j, float(a))
    obj = np.flatnonzero(data.c)
    model.set_objective_coefficients(obj.tolist(), (-data.c[obj]).astype(float).tolist())
    solver = mbh.ModelSolverHelper("glop")
    solver.set_time_limit_in_seconds(max(time_limit_s, 1e-3))
    solver.set_solver_specific_parameters(GLOP_PARAMETERS)
    solver.solve(model)
    if solver.status() != mbh.SolveStatus.OPTIMAL:
        return Relaxation(None, None, None)
    y = np.asarray(solver.dual_values(), dtype=float)
    x = np.asarray(solver.variable_values(), dtype=float)
    # The multipliers' sign convention does not matter for validity: try both, keep the best.
    bounds = [b for b in (data.safe_bound(y), data.safe_bound(-y)) if b is not None]
    sign = 1 if sink.maximize else -1
    bound = None if not bounds else sign * min(bounds)
    return Relaxation(bound, data.integral(x), -sign * solver.objective_value(), x)


# Measured on the 120-day tight windows: GLOP's presolve and scaling cost more than they save
# on these small programmes of small integer coefficients.
GLOP_PARAMETERS = "use_preprocessing: false use_scaling: false"


@dataclass(frozen=True)
class _Data:
    """The recorded model as integer arrays (objective as a maximisation)."""

    lb: np.ndarray
    ub: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    coef: np.ndarray
    row_lb: np.ndarray  # float, may be -inf
    row_ub: np.ndarray  # float, may be +inf
    c: np.ndarray

    @classmethod
    def of(cls, sink: MatrixSink) -> _Data:
        n = len(sink.lb)
        c = np.zeros(n, dtype=np.int64)
        sign = 1 if sink.maximize else -1
        for j, v in sink.objective.items():
            c[j] = sign * v
        return cls(
            np.array(sink.lb, dtype=np.int64),
            np.array(sink.ub, dtype=np.int64),
            np.array(sink.row_of, dtype=np.int64),
            np.array(sink.col_of, dtype=np.int64),
            np.array(sink.coef, dtype=np.int64),
            np.array(sink.row_lb, dtype=float),
            np.array(sink.row_ub, dtype=float),
            c,
        )

    def _magnitude_ok(self, multiplier: float) -> bool:
        finite = [np.abs(a[np.isfinite(a)]).max(initial=0) for a in (self.row_lb, self.row_ub)]
        big = max(
            int(np.abs(self.lb).max(initial=0)),
            int(np.abs(self.ub).max(initial=0)),
            int(max(finite)),
            int(np.abs(self.coef).max(initial=0)),
            int(np.abs(self.c).max(initial=0)),
            1,
        )
        entries = len(self.coef) + len(self.lb) + len(self.row_lb) + 1
        # |Y| <= D·multiplier + 1: every product and sum below stays inside int64.
        return (
            math.log2(DUAL_SCALE * (multiplier + 1)) + 2 * math.log2(big) + math.log2(entries) + 2
            < 62
        )

    def safe_bound(self, y: np.ndarray) -> int | None:
        """floor of the weak-duality bound for multipliers ``y`` (exact integer arithmetic)."""
        if not np.all(np.isfinite(y)) or not self._magnitude_ok(float(np.abs(y).max(initial=0))):
            return None
        big_y = np.rint(y * DUAL_SCALE).astype(np.int64)
        up_ok, low_ok = np.isfinite(self.row_ub), np.isfinite(self.row_lb)
        big_y[(big_y > 0) & ~up_ok] = 0  # a multiplier needing an infinite bound is dropped
        big_y[(big_y < 0) & ~low_ok] = 0
        hi = np.where(up_ok, self.row_ub, 0).astype(np.int64)
        lo = np.where(low_ok, self.row_lb, 0).astype(np.int64)
        row_part = int(np.where(big_y > 0, big_y * hi, big_y * lo).sum())
        aty = np.zeros(len(self.lb), dtype=np.int64)
        np.add.at(aty, self.cols, self.coef * big_y[self.rows])
        red = DUAL_SCALE * self.c - aty
        col_part = int(np.maximum(red * self.lb, red * self.ub).sum())
        return (row_part + col_part) // DUAL_SCALE

    def feasible(self, v: np.ndarray) -> bool:
        """Whether the integer point ``v`` satisfies every bound and row (exactly)."""
        if np.any(v < self.lb) or np.any(v > self.ub):
            return False
        act = np.zeros(len(self.row_lb), dtype=np.int64)
        np.add.at(act, self.rows, self.coef * v[self.cols])
        return not (np.any(act < self.row_lb) or np.any(act > self.row_ub))

    def integral(self, x: np.ndarray) -> list[int] | None:
        """``x`` rounded, if it is within tolerance of integers and satisfies every bound and
        row exactly; else ``None``."""
        if len(x) == 0 or not np.all(np.isfinite(x)):
            return None
        xi = np.rint(x)
        if np.abs(x - xi).max() > INTEGRAL_TOL:
            return None
        v = xi.astype(np.int64)
        return [int(a) for a in v] if self.feasible(v) else None


def certified_bound(sink: MatrixSink, multipliers: Sequence[float]) -> int | None:
    """The integer bound weak duality gives for row ``multipliers`` (any values: wrong ones
    only weaken it), as :func:`solve_relaxation` computes it; ``None`` if too large to check."""
    y = np.asarray(multipliers, dtype=float)
    bound = _Data.of(sink).safe_bound(y)
    if bound is None:
        return None
    return bound if sink.maximize else -bound


def is_solution(sink: MatrixSink, values: Sequence[int]) -> bool:
    """Whether ``values`` is an integer solution of the recorded model (checked exactly)."""
    return len(values) == len(sink.lb) and _Data.of(sink).feasible(
        np.asarray(values, dtype=np.int64)
    )


__all__ = ["MatrixSink", "Relaxation", "certified_bound", "is_solution", "solve_relaxation"]

"""A MILP in the one form every part of this package uses, and its feasibility checker.

    minimise  c @ x + offset
    s.t.      row_lo <= A @ x <= row_hi          (A a scipy CSR matrix, +-inf allowed)
              lb <= x <= ub,   x_j integer for is_int[j]

Maximisation problems are stored negated (``sense = -1`` remembers it, so that
:meth:`MILPInstance.user_objective` can report the objective in the original sense).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

# Absolute/relative tolerances used by the trusted checker (HiGHS defaults are 1e-7/1e-6;
# a slightly looser check accepts what HiGHS returns and still rejects real violations).
FEAS_TOL = 1e-6
INT_TOL = 1e-5


@dataclass
class MILPInstance:
    """A mixed-integer linear program in row-bounded form (minimisation)."""

    name: str
    c: np.ndarray
    A: sp.csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    is_int: np.ndarray
    offset: float = 0.0
    sense: int = 1  # +1: the original problem minimises; -1: it maximised (stored negated)
    family: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.c = np.asarray(self.c, dtype=float)
        self.A = sp.csr_matrix(self.A, dtype=float)
        self.row_lo = np.asarray(self.row_lo, dtype=float)
        self.row_hi = np.asarray(self.row_hi, dtype=float)
        self.lb = np.asarray(self.lb, dtype=float)
        self.ub = np.asarray(self.ub, dtype=float)
        self.is_int = np.asarray(self.is_int, dtype=bool)
        m, n = self.A.shape
        if not (len(self.c) == len(self.lb) == len(self.ub) == len(self.is_int) == n):
            raise ValueError("column arrays disagree with A's column count")
        if not (len(self.row_lo) == len(self.row_hi) == m):
            raise ValueError("row bounds disagree with A's row count")

    @property
    def n_vars(self) -> int:
        return self.A.shape[1]

    @property
    def n_rows(self) -> int:
        return self.A.shape[0]

    def objective(self, x: np.ndarray) -> float:
        """Objective in the stored (minimisation) sense."""
        return float(self.c @ np.asarray(x, dtype=float) + self.offset)

    def user_objective(self, x: np.ndarray) -> float:
        """Objective in the problem's original sense."""
        return self.sense * self.objective(x)

    def violations(self, x: np.ndarray) -> dict[str, float]:
        """Largest violation of rows, bounds and integrality (0 means satisfied)."""
        x = np.asarray(x, dtype=float)
        ax = self.A @ x
        scale = 1.0 + np.abs(ax)  # relative tolerance on big rows
        row = np.maximum(self.row_lo - ax, ax - self.row_hi) / scale
        bound = np.maximum(self.lb - x, x - self.ub)
        frac = np.abs(x - np.round(x))[self.is_int]
        return {
            "row": float(max(row.max(initial=0.0), 0.0)),
            "bound": float(max(bound.max(initial=0.0), 0.0)),
            "integrality": float(frac.max(initial=0.0)),
        }

    def total_violation(self, x: np.ndarray) -> float:
        """Sum of absolute row violations (FMIP's feasibility term, unscaled)."""
        ax = self.A @ np.asarray(x, dtype=float)
        return float(np.maximum(self.row_lo - ax, 0).sum() + np.maximum(ax - self.row_hi, 0).sum())


class InfeasiblePoint(ValueError):
    """A point violates a row, a bound, integrality, or is malformed."""


def check_solution(inst: MILPInstance, x, feas_tol: float = FEAS_TOL,
                   int_tol: float = INT_TOL) -> np.ndarray:
    """Validate ``x`` for ``inst`` and return it as a float array.

    Raises :class:`InfeasiblePoint` naming the first kind of violation found: wrong length,
    non-finite values, a bound, integrality, or a row (relative to ``1 + |a_i x|``).
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InfeasiblePoint(f"solution is not a numeric vector: {exc}") from None
    if arr.ndim != 1 or arr.shape[0] != inst.n_vars:
        raise InfeasiblePoint(f"solution has shape {arr.shape}, expected ({inst.n_vars},)")
    if not np.all(np.isfinite(arr)):
        raise InfeasiblePoint("solution has non-finite entries")
    v = inst.violations(arr)
    if v["bound"] > feas_tol:
        j = int(np.argmax(np.maximum(inst.lb - arr, arr - inst.ub)))
        raise InfeasiblePoint(f"bound violated by {v['bound']:.3g} at column {j}")
    if v["integrality"] > int_tol:
        raise InfeasiblePoint(f"integrality violated by {v['integrality']:.3g}")
    if v["row"] > feas_tol:
        raise InfeasiblePoint(f"row violated by {v['row']:.3g} (relative)")
    return arr


GAP_EPS = 1e-12


def primal_gap(obj: float, best: float) -> float:
    """Primal gap of Berthold (2013), used by the ML4CO/FMIP papers: |obj-best| / max(|obj|,|best|),
    0 when both are 0 and 1 when their signs differ. A relative difference below ``GAP_EPS`` is 0: the
    objective is a floating-point sum whose last bits depend on the CPU's vector width, and a gap of
    1e-15 is the same solution."""
    if obj == best or abs(obj - best) <= GAP_EPS * max(abs(obj), abs(best)):
        return 0.0
    if obj * best < 0:
        return 1.0
    return abs(obj - best) / max(abs(obj), abs(best))

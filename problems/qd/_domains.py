"""Benchmark domains of the DMS paper (Tjanaka et al., ICLR 2026, Section 6 and Appendix).

Every domain evaluates a *batch* of solutions at once and returns ``(objective, measures)``
with shapes ``(n,)`` and ``(n, measure_dim)``. Objectives are normalised so that 1 is the
optimum and 0 a bad reference point, as in the paper's benchmarks (``obj_low = 0``,
``obj_high = 1``), which is what makes ``threshold_min = 0`` meaningful.

* :class:`LinearProjection` -- the LP benchmark of Fontaine et al. (2020), extended by the DMS
  paper to ``k``-dimensional measures: the solution's coordinates are clipped (values outside
  ``[-5.12, 5.12]`` are replaced by ``5.12 / x``), split into ``k`` contiguous blocks
  (``np.array_split``) and each measure is the sum of one block. The objective is the shifted
  sphere or Rastrigin function (optimum at ``x_i = 2.048``) normalised with the value at the
  corner ``x_i = -5.12``, or the constant 1 ("flat", which isolates exploration).
* :class:`PlanarArm` -- the arm repertoire: ``d`` unit links with joint angles ``theta``; the
  measures are the end effector's ``(x, y)``, the objective ``1 - Var(theta)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BOUND = 5.12  # the LP benchmark's box for one coordinate
_SHIFT = 0.4 * _BOUND  # optimum of the shifted sphere / Rastrigin, x_i = 2.048
_RASTRIGIN_A = 10.0

OBJECTIVES = ("sphere", "rastrigin", "flat")


def _sphere_raw(x: np.ndarray) -> np.ndarray:
    return np.sum(np.square(x - _SHIFT), axis=-1)


def _rastrigin_raw(x: np.ndarray) -> np.ndarray:
    d = x - _SHIFT
    return _RASTRIGIN_A * x.shape[-1] + np.sum(d * d - _RASTRIGIN_A * np.cos(2 * np.pi * d), axis=-1)


@dataclass(frozen=True)
class LinearProjection:
    """LP(objective) with ``solution_dim`` parameters and ``measure_dim`` measures.

    The measure bounds are ``+-solution_dim / measure_dim * 5.12`` per dimension (the extreme
    block sums), exactly the ranges the paper's archives use.
    """

    objective: str = "sphere"
    solution_dim: int = 100
    measure_dim: int = 2

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if not 1 <= self.measure_dim <= self.solution_dim:
            raise ValueError("need 1 <= measure_dim <= solution_dim")

    @property
    def name(self) -> str:
        return f"lp_{self.objective}_{self.solution_dim}d_m{self.measure_dim}"

    @property
    def measure_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        # array_split gives blocks of unequal size when measure_dim does not divide
        # solution_dim; the paper uses the same bound for every dimension, and so do we.
        half = self.solution_dim / self.measure_dim * _BOUND
        return np.full(self.measure_dim, -half), np.full(self.measure_dim, half)

    @property
    def objective_bounds(self) -> tuple[float, float]:
        return 0.0, 1.0

    def initial_solution(self) -> np.ndarray:
        return np.zeros(self.solution_dim)

    def evaluate(self, solutions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(solutions, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.solution_dim:
            raise ValueError(f"solutions must have shape (n, {self.solution_dim}), got {x.shape}")
        if self.objective == "flat":
            objective = np.ones(len(x))
        else:
            raw_fn = _sphere_raw if self.objective == "sphere" else _rastrigin_raw
            # Normalise so that the optimum maps to 1 and the corner x_i = -5.12 to 0.
            worst = raw_fn(np.full((1, self.solution_dim), -_BOUND))[0]
            objective = 1.0 - raw_fn(x) / worst
        clipped = np.where(np.abs(x) > _BOUND, _BOUND / np.where(x == 0, 1.0, x), x)
        measures = np.stack([b.sum(axis=1) for b in np.array_split(clipped, self.measure_dim, axis=1)],
                            axis=1)
        return objective, measures


@dataclass(frozen=True)
class PlanarArm:
    """The arm repertoire: ``solution_dim`` unit links, measures in ``[-100, 100]^2``."""

    solution_dim: int = 100
    measure_dim: int = 2

    def __post_init__(self) -> None:
        if self.measure_dim != 2:
            raise ValueError("the arm's measures are the 2-D end-effector position")

    @property
    def name(self) -> str:
        return f"arm_{self.solution_dim}d"

    @property
    def measure_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        # The paper's archive uses +-100 whatever the number of links (100 in its runs).
        reach = float(max(self.solution_dim, 100))
        return np.full(2, -reach), np.full(2, reach)

    @property
    def objective_bounds(self) -> tuple[float, float]:
        return 0.0, 1.0

    def initial_solution(self) -> np.ndarray:
        return np.zeros(self.solution_dim)

    def evaluate(self, solutions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta = np.asarray(solutions, dtype=np.float64)
        if theta.ndim != 2 or theta.shape[1] != self.solution_dim:
            raise ValueError(f"solutions must have shape (n, {self.solution_dim}), got {theta.shape}")
        objective = 1.0 - np.var(theta, axis=1)
        cum = np.cumsum(theta, axis=1)  # absolute angle of each link
        measures = np.stack([np.cos(cum).sum(axis=1), np.sin(cum).sum(axis=1)], axis=1)
        return objective, measures

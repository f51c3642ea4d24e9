"""Grid and CVT archives with CMA-MAE thresholds (Fontaine & Nikolaidis, GECCO 2023).

One archive class does three jobs, depending on ``learning_rate`` (``alpha``) and
``threshold_min``:

* ``alpha = 1``, ``threshold_min = -inf``: a MAP-Elites archive (the CMA-ME archive and the
  *result archive* every algorithm is measured on): a solution enters a cell when it beats the
  elite there.
* ``0 < alpha < 1``, finite ``threshold_min``: the CMA-MAE archive. Every cell has a threshold
  ``t_e`` (``threshold_min`` while the cell is empty); a solution enters when ``f > t_e`` --
  replacing the elite even when it is worse than it -- and the threshold anneals towards it,
  ``t_e <- (1 - alpha) t_e + alpha f`` (CMA-MAE, Algorithm 1, line 13).
* The improvement value handed to the emitters is ``f - t_e`` (``f`` itself for a new cell when
  ``threshold_min = -inf``: CMA-ME's value for new cells).

Batches: when ``k`` solutions of one batch beat the threshold of the same cell, the threshold
takes the batch update of the CMA-MAE paper's appendix,
``t_e <- (1 - alpha)^k t_e + (1 - (1 - alpha)^k) mean(f)``, and the elite becomes the best of
them. At ``alpha = 1`` that formula gives the *mean*, whereas inserting the ``k`` solutions one
at a time in increasing order gives the *max*, i.e. MAP-Elites; we use the max there, so that
CMA-MAE with ``alpha = 1`` is exactly CMA-ME (the paper's Theorem 4.2) in batch mode too.
(pyribs 0.12 uses the mean at ``alpha = 1``; the two agree for ``alpha < 1``.)

:class:`CVTArchive` finds the nearest centroid by brute force,
``argmin_c ||c||^2 - 2 m . c``, one matrix product per batch.
"""

from __future__ import annotations

import math

import numpy as np

from ._threads import single_thread_blas


class Archive:
    """Storage, insertion and statistics shared by :class:`GridArchive` and :class:`CVTArchive`.

    Subclasses define :meth:`index_of` (measures -> integer cell) and :meth:`cell_centers`.
    """

    def __init__(self, *, solution_dim: int, cells: int, measure_dim: int,
                 learning_rate: float = 1.0, threshold_min: float = -math.inf,
                 qd_score_offset: float = 0.0, seed: int | np.random.SeedSequence | None = None) -> None:
        if not 0.0 <= learning_rate <= 1.0:
            raise ValueError("learning_rate must lie in [0, 1]")
        if threshold_min == -math.inf and learning_rate != 1.0:
            raise ValueError("threshold_min = -inf (MAP-Elites) requires learning_rate = 1")
        self.solution_dim = int(solution_dim)
        self.measure_dim = int(measure_dim)
        self.cells = int(cells)
        self.learning_rate = float(learning_rate)
        self.threshold_min = float(threshold_min)
        self.qd_score_offset = float(qd_score_offset)
        self._rng = np.random.default_rng(seed)
        self.occupied = np.zeros(self.cells, dtype=bool)
        self.solutions = np.zeros((self.cells, self.solution_dim))
        self.objectives = np.zeros(self.cells)
        self.measures = np.zeros((self.cells, self.measure_dim))
        self.thresholds = np.full(self.cells, self.threshold_min)

    # ---- geometry (subclasses) ------------------------------------------------------------
    def index_of(self, measures: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def cell_centers(self, indices: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # ---- statistics ------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.occupied.sum())

    @property
    def coverage(self) -> float:
        return len(self) / self.cells

    @property
    def qd_score(self) -> float:
        """Sum over occupied cells of ``objective - qd_score_offset``."""
        return float(np.sum(self.objectives[self.occupied] - self.qd_score_offset))

    @property
    def obj_max(self) -> float:
        return float(self.objectives[self.occupied].max()) if len(self) else -math.inf

    def stats(self) -> dict[str, float]:
        return {"qd_score": self.qd_score, "coverage": self.coverage, "num_elites": float(len(self)),
                "obj_max": self.obj_max, "norm_qd_score": self.qd_score / self.cells}

    def elites(self) -> dict[str, np.ndarray]:
        """Copies of the occupied cells' data, in cell order."""
        idx = np.flatnonzero(self.occupied)
        return {"index": idx, "solution": self.solutions[idx].copy(), "objective": self.objectives[idx].copy(),
                "measures": self.measures[idx].copy(), "threshold": self.thresholds[idx].copy()}

    def sample_elites(self, n: int) -> np.ndarray:
        """``n`` elite solutions drawn uniformly (with replacement) from the occupied cells."""
        idx = np.flatnonzero(self.occupied)
        if idx.size == 0:
            raise ValueError("cannot sample from an empty archive")
        return self.solutions[self._rng.choice(idx, size=n)].copy()

    def empty_cell_centers(self, n: int) -> np.ndarray:
        """Centres of up to ``n`` distinct unoccupied cells, drawn uniformly (DMS's empty points)."""
        empty = np.flatnonzero(~self.occupied)
        pick = self._rng.choice(empty, size=min(n, empty.size), replace=False)
        return self.cell_centers(pick)

    # ---- insertion --------------------------------------------------------------------------
    def add(self, solution: np.ndarray, objective: np.ndarray, measures: np.ndarray) -> dict[str, np.ndarray]:
        """Insert a batch; return ``status`` (0 not added, 1 improved, 2 new cell) and ``value``.

        Values and statuses are all computed against the archive *before* the batch, so the
        order of solutions inside a batch does not matter.
        """
        solution = np.asarray(solution, dtype=np.float64).reshape(-1, self.solution_dim)
        objective = np.asarray(objective, dtype=np.float64).reshape(-1)
        measures = np.asarray(measures, dtype=np.float64).reshape(-1, self.measure_dim)
        if not (len(solution) == len(objective) == len(measures)):
            raise ValueError("solution, objective and measures must have the same length")
        if not (np.all(np.isfinite(objective)) and np.all(np.isfinite(measures))):
            raise ValueError("objective and measures must be finite")
        idx = self.index_of(measures)
        was_occupied = self.occupied[idx]
        threshold = np.where(was_occupied, self.thresholds[idx], self.threshold_min)
        can_insert = objective > threshold
        status = np.where(can_insert, np.where(was_occupied, 1, 2), 0).astype(np.int32)
        # CMA-ME values a new cell by f itself (threshold 0); CMA-MAE by f - threshold_min.
        base = np.where(was_occupied, threshold, 0.0 if self.threshold_min == -math.inf else self.threshold_min)
        value = objective - base
        if can_insert.any():
            self._insert(idx[can_insert], solution[can_insert], objective[can_insert],
                         measures[can_insert], threshold[can_insert])
        return {"status": status, "value": value}

    def _insert(self, idx: np.ndarray, sol: np.ndarray, obj: np.ndarray, meas: np.ndarray,
                threshold: np.ndarray) -> None:
        # Group the insertable solutions by cell: best first inside each cell (stable, so
        # the first of equal objectives wins).
        order = np.lexsort((-obj, idx))
        idx, sol, obj, meas, threshold = idx[order], sol[order], obj[order], meas[order], threshold[order]
        first = np.ones(len(idx), dtype=bool)
        first[1:] = idx[1:] != idx[:-1]
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(idx)))
        cells = idx[starts]
        if self.learning_rate == 1.0:
            new_threshold = obj[starts]  # the max: sequential insertion in increasing order
        else:
            mean_f = np.add.reduceat(obj, starts) / counts
            ratio = (1.0 - self.learning_rate) ** counts
            new_threshold = ratio * threshold[starts] + (1.0 - ratio) * mean_f
        self.occupied[cells] = True
        self.solutions[cells] = sol[starts]
        self.objectives[cells] = obj[starts]
        self.measures[cells] = meas[starts]
        self.thresholds[cells] = new_threshold


class GridArchive(Archive):
    """A regular grid of ``dims[0] x dims[1] x ...`` cells over ``ranges``.

    Cell ``i`` along a dimension covers ``[lo + i w, lo + (i + 1) w)`` with
    ``w = (hi - lo) / dims``; measures outside the ranges go to the border cells.
    """

    def __init__(self, *, solution_dim: int, dims, ranges, **kwargs) -> None:
        self.dims = np.asarray(dims, dtype=np.int64)
        bounds = np.asarray(ranges, dtype=np.float64)
        if bounds.shape != (len(self.dims), 2) or np.any(bounds[:, 1] <= bounds[:, 0]):
            raise ValueError("ranges must be one (low, high) pair with low < high per dimension")
        self.lower_bounds, self.upper_bounds = bounds[:, 0], bounds[:, 1]
        self.interval_size = self.upper_bounds - self.lower_bounds
        super().__init__(solution_dim=solution_dim, cells=int(np.prod(self.dims)),
                         measure_dim=len(self.dims), **kwargs)

    def grid_index_of(self, measures: np.ndarray) -> np.ndarray:
        m = np.asarray(measures, dtype=np.float64).reshape(-1, self.measure_dim)
        frac = (m - self.lower_bounds) / self.interval_size
        return np.clip(np.floor(frac * self.dims), 0, self.dims - 1).astype(np.int64)

    def index_of(self, measures: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(self.grid_index_of(measures).T, self.dims)

    def cell_centers(self, indices: np.ndarray) -> np.ndarray:
        grid = np.stack(np.unravel_index(np.asarray(indices, dtype=np.int64), self.dims), axis=1)
        return self.lower_bounds + (grid + 0.5) / self.dims * self.interval_size


class CVTArchive(Archive):
    """A centroidal Voronoi tessellation: a measure belongs to its nearest centroid."""

    def __init__(self, *, solution_dim: int, centroids: np.ndarray, **kwargs) -> None:
        self.centroids = np.asarray(centroids, dtype=np.float64)
        if self.centroids.ndim != 2:
            raise ValueError("centroids must be a (cells, measure_dim) array")
        self._prepared = _prepare(self.centroids)
        super().__init__(solution_dim=solution_dim, cells=len(self.centroids),
                         measure_dim=self.centroids.shape[1], **kwargs)

    def index_of(self, measures: np.ndarray) -> np.ndarray:
        return nearest_centroid(np.asarray(measures, dtype=np.float64).reshape(-1, self.measure_dim),
                                self.centroids, _prepared=self._prepared)

    def cell_centers(self, indices: np.ndarray) -> np.ndarray:
        return self.centroids[np.asarray(indices, dtype=np.int64)]


def nearest_centroid(points: np.ndarray, centroids: np.ndarray, chunk: int = 32,
                     _prepared: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Index of the nearest centroid of every point, by brute force.

    ``||m - c||^2 / 2 = ||m||^2 / 2 + (||c||^2 / 2 - m . c)`` and the first term is constant per
    point, so one matrix product per chunk of points decides. Chunks of 32 points keep the
    (chunk x cells) block in cache, which is several times faster than one big product.
    """
    cent_t, half_sq = _prepared if _prepared is not None else _prepare(centroids)
    points = np.asarray(points, dtype=np.float64)
    out = np.empty(len(points), dtype=np.int64)
    for s in range(0, len(points), chunk):
        block = points[s:s + chunk] @ cent_t
        np.subtract(half_sq, block, out=block)
        out[s:s + chunk] = block.argmin(axis=1)
    return out


def _prepare(centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(centroids, dtype=np.float64)
    return np.ascontiguousarray(c.T), 0.5 * np.sum(c * c, axis=1)


def cvt_centroids(cells: int, ranges, *, samples: int = 100_000, iterations: int = 20,
                  seed: int | None = None) -> np.ndarray:
    """Approximate CVT centroids (Vassiliades et al. 2018): Lloyd's k-means on uniform samples.

    Starts from ``cells`` of the samples drawn at random (the paper's centroids come from
    pyribs's ``k_means_centroids``, i.e. random init and Lloyd iterations); an empty cluster
    keeps its previous centroid.
    """
    rng = np.random.default_rng(seed)
    bounds = np.asarray(ranges, dtype=np.float64)
    pts = rng.uniform(bounds[:, 0], bounds[:, 1], size=(samples, len(bounds)))
    cent = pts[rng.choice(samples, size=cells, replace=False)].copy()
    with single_thread_blas():
        for _ in range(iterations):
            cent = _lloyd_step(pts, cent, cells)
    return cent


def _lloyd_step(pts: np.ndarray, cent: np.ndarray, cells: int) -> np.ndarray:
    """Assign every sample to its nearest centroid, move each centroid to its samples' mean."""
    assign = nearest_centroid(pts, cent, chunk=256)
    counts = np.bincount(assign, minlength=cells)
    sums = np.stack([np.bincount(assign, weights=pts[:, d], minlength=cells) for d in range(pts.shape[1])], axis=1)
    nonempty = counts > 0
    cent[nonempty] = sums[nonempty] / counts[nonempty, None]
    return cent

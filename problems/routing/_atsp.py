"""Asymmetric TSP instances: MatNet's "tmat" generator and triangle-inequality checks.

MatNet (Kwon et al., NeurIPS 2021, ``ATSP/ATSProblemDef.py``) and RADAR (Yi et al., ICLR
2026, ``ATSProblemDef.py``) train and test on "tmat" matrices (Cook et al.'s generator class):

1. draw an ``n x n`` matrix of integers uniformly from ``[int_min, int_max)``
   (``int_min = 0``, ``int_max = 10**6``);
2. set the diagonal to 0;
3. replace every entry by the shortest-path distance between its endpoints, so the triangle
   inequality holds (MatNet repeats a min-plus product until nothing changes; the fixed
   point is the all-pairs shortest-path matrix, computed here by Floyd-Warshall, which
   gives the same matrix in one pass);
4. divide by ``scaler = 10**6`` so distances lie in ``[0, 1)``.

The integers are kept exact: ``distance = integer / scale`` round-trips through
``np.rint(distance * scale)``, which is what :func:`hifo.problems.routing.lkh_tour` needs.
"""

from __future__ import annotations

import numpy as np

from ._instance import TSPInstance

TMAT_INT_MAX = 1_000_000
TMAT_SCALE = 1_000_000


def shortest_path_closure(matrix: np.ndarray) -> np.ndarray:
    """All-pairs shortest-path lengths of a directed complete graph (Floyd-Warshall).

    Works on integer or float matrices; the diagonal of the result is 0 when the input's
    is non-negative. O(n^3) with one vectorised ``n x n`` update per intermediate node.
    """
    d = np.array(matrix, copy=True)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError("the matrix must be square")
    for k in range(d.shape[0]):
        # a path i -> k -> j replaces i -> j when shorter
        np.minimum(d, d[:, k:k + 1] + d[k:k + 1, :], out=d)
    return d


def min_plus_closure(matrix: np.ndarray) -> np.ndarray:
    """MatNet's own loop: ``d[i, j] <- min_k d[i, k] + d[k, j]`` until a fixed point.

    Kept as the reference the Floyd-Warshall version is tested against; O(n^3 log n).
    """
    d = np.array(matrix, copy=True)
    while True:
        new = (d[:, :, None] + d[None, :, :]).min(axis=1)
        if np.array_equal(new, d):
            return d
        d = new


def tmat_matrix(n: int, rng: np.random.Generator, int_max: int = TMAT_INT_MAX,
                int_min: int = 0) -> np.ndarray:
    """An ``n x n`` int64 tmat matrix (steps 1-3 above, before scaling)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    raw = rng.integers(int_min, int_max, size=(n, n), dtype=np.int64)
    np.fill_diagonal(raw, 0)
    return shortest_path_closure(raw)


def random_tmat_instance(n: int, seed: int, name: str | None = None,
                         scale: int = TMAT_SCALE) -> TSPInstance:
    """A seeded tmat ATSP instance with distances ``integer / scale`` in ``[0, 1)``.

    The integers come from ``numpy.random.default_rng(seed)`` (PCG64, stable across NumPy
    versions), so instance ``(n, seed)`` is the same everywhere.
    """
    ints = tmat_matrix(n, np.random.default_rng(seed))
    return TSPInstance(name or f"tmat{n}_seed{seed}", ints.astype(np.float64) / scale)


def triangle_violation(d: np.ndarray) -> float:
    """``max_{i,j,k} d[i, j] - (d[i, k] + d[k, j])``: positive iff the triangle inequality
    fails somewhere (0 for a matrix closed under shortest paths with a zero diagonal)."""
    m = np.asarray(d, dtype=np.float64)
    via = (m[:, :, None] + m[None, :, :]).min(axis=1)
    return float((m - via).max())


def asymmetry(d: np.ndarray) -> float:
    """``||D - D^T||_F / ||D + D^T||_F``: 0 for a symmetric matrix, at most 1."""
    m = np.asarray(d, dtype=np.float64)
    den = np.linalg.norm(m + m.T)
    return float(np.linalg.norm(m - m.T) / den) if den > 0 else 0.0

"""Optional reference solver: LKH-3 through the ``elkai`` bindings (imported lazily)."""

from __future__ import annotations

import numpy as np

DEFAULT_SCALE = 1_000_000


def lkh_tour(distance_matrix: np.ndarray, runs: int = 10, scale: float = DEFAULT_SCALE) -> np.ndarray:
    """An LKH-3 tour (open, starting at node 0) for a symmetric or asymmetric matrix.

    LKH works on integer weights: the matrix is multiplied by ``scale`` and rounded first
    (giving elkai floats produces wrong tours). Use ``scale=1`` for integral TSPLIB data.
    Needs ``pip install elkai``; LKH's own seed is fixed, so results are reproducible.
    """
    try:
        import elkai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("lkh_tour needs the optional 'elkai' package: pip install elkai") from exc
    d = np.asarray(distance_matrix, dtype=np.float64)
    n = d.shape[0]
    if n < 3:
        return np.arange(n, dtype=np.int64)
    weights = np.rint(d * scale).astype(np.int64)
    np.fill_diagonal(weights, 0)
    tour = elkai.DistanceMatrix(weights.tolist()).solve_tsp(runs=runs)
    tour = np.asarray(tour[:-1] if len(tour) == n + 1 else tour, dtype=np.int64)
    k = int(np.flatnonzero(tour == 0)[0])
    return np.roll(tour, -k)

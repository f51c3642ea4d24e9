"""TSP instances: coordinates, distance matrices and seeded random generation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class TSPInstance:
    """A TSP instance, symmetric or asymmetric (``distance_matrix[i, j]`` is the cost of i -> j).

    ``distance_matrix`` is an ``n x n`` float64 array (TSPLIB's rounded integers are stored
    as exact floats). ``best_known`` is the tour length to compare against, when one is known,
    and ``best_known_source`` says what it is (``"optimal"``, ``"lkh3"``, ...).
    """

    name: str
    distance_matrix: np.ndarray
    coords: np.ndarray | None = None
    best_known: float | None = None
    best_known_source: str | None = None

    def __post_init__(self) -> None:
        d = self.distance_matrix
        if not isinstance(d, np.ndarray) or d.ndim != 2 or d.shape[0] != d.shape[1]:
            raise ValueError(f"{self.name}: the distance matrix must be a square 2-D array")
        if d.shape[0] < 1:
            raise ValueError(f"{self.name}: an instance needs at least one node")

    @property
    def n(self) -> int:
        return int(self.distance_matrix.shape[0])


def euclidean_matrix(coords: np.ndarray) -> np.ndarray:
    """Plain Euclidean distances between the rows of ``coords`` (``n x 2``), as float64."""
    pts = np.asarray(coords, dtype=np.float64)
    diff = pts[:, None, :] - pts[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))


def euc2d_matrix(coords: np.ndarray) -> np.ndarray:
    """TSPLIB ``EUC_2D`` distances, ``int(sqrt(dx^2 + dy^2) + 0.5)``, stored as float64."""
    return np.floor(euclidean_matrix(coords) + 0.5)


def random_uniform_instance(n: int, seed: int, name: str | None = None) -> TSPInstance:
    """``n`` cities uniform in the unit square, from ``numpy.random.default_rng(seed)``.

    Coordinates are ``rng.random((n, 2))`` (PCG64, stable across NumPy versions); distances
    are plain Euclidean floats, as in EoH's TSP construction task.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    coords = np.random.default_rng(seed).random((n, 2))
    return TSPInstance(name or f"uniform{n}_seed{seed}", euclidean_matrix(coords), coords)


def array_digest(array: np.ndarray) -> str:
    """sha256 of an array's values as little-endian float64 (to check that a generator still
    reproduces the instance a stored reference value was computed for)."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array, dtype="<f8").tobytes()).hexdigest()

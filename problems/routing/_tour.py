"""Checking a tour and measuring it."""

from __future__ import annotations

from typing import Any

import numpy as np


class InvalidTour(ValueError):
    """A tour that is not a permutation of all the nodes."""


def validate_tour(tour: Any, n: int) -> np.ndarray:
    """Return ``tour`` as an int64 array after checking it visits each of ``0..n-1`` once.

    The tour is open (the return to its first node is implied): exactly ``n`` entries.
    Raises :class:`InvalidTour` with a readable reason otherwise.
    """
    if isinstance(tour, (str, bytes)) or not hasattr(tour, "__len__"):
        raise InvalidTour(f"a tour must be a sequence of node indices, got {type(tour).__name__}")
    try:
        arr = np.asarray(tour)
    except Exception as exc:
        raise InvalidTour(f"the tour is not a sequence of node indices ({exc})") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidTour(f"a tour must list all {n} nodes once; got shape {arr.shape}")
    if n and arr.dtype.kind not in "iu":
        raise InvalidTour(f"node indices must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        raise InvalidTour(f"position {int(bad[0])} holds node {int(arr[bad[0]])}, outside 0..{n - 1}")
    counts = np.bincount(arr, minlength=n)
    if (counts != 1).any():
        dup = np.flatnonzero(counts > 1)
        missing = np.flatnonzero(counts == 0)
        raise InvalidTour(f"not a permutation: node {int(dup[0])} appears {int(counts[dup[0]])} times, "
                          f"{missing.size} node(s) missing (first: {int(missing[0])})")
    return arr


def tour_length(tour: Any, distance_matrix: np.ndarray) -> float:
    """Length of the closed tour (validated first) under ``distance_matrix``."""
    d = np.asarray(distance_matrix)
    arr = validate_tour(tour, d.shape[0])
    if arr.size < 2:
        return 0.0
    return float(d[arr, np.roll(arr, -1)].sum())


def gap_percent(length: float, reference: float) -> float:
    """``(length - reference) / reference * 100``."""
    if reference <= 0:
        raise ValueError(f"the reference length must be positive, got {reference}")
    return (float(length) - float(reference)) / float(reference) * 100.0

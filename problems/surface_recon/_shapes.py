"""Synthetic genus-0 shapes and noisy point clouds sampled from them.

Every shape is star-shaped about the origin and given by its radius along a unit direction,
``r(u)``; a point of the surface is ``r(u) u``. Samples are ``r(u) u`` for directions ``u`` drawn
uniformly on the sphere (uniform in direction, *not* in area: flatter or more stretched parts get
slightly fewer samples per unit area). Noise is isotropic Gaussian with standard deviation
``noise`` times the shape's mean radius.
"""

from __future__ import annotations

import numpy as np

from hifo.problems._repro import COORD_BITS, quantize


def _sphere(u: np.ndarray) -> np.ndarray:
    return np.ones(len(u))


def _ellipsoid(u: np.ndarray) -> np.ndarray:
    a = np.array([1.3, 0.9, 0.7])
    return 1.0 / np.sqrt(((u / a) ** 2).sum(axis=1))


def _bumpy(u: np.ndarray) -> np.ndarray:
    # A star-shaped sphere with smooth bumps (low-order spherical-harmonic-like terms).
    x, y, z = u.T
    return 1.0 + 0.18 * np.sin(3 * x) * np.cos(2 * y) + 0.12 * (3 * z * z - 1) + 0.08 * x * y * 4


def _superquadric(u: np.ndarray, p: float = 6.0) -> np.ndarray:
    # The cube-like superquadric |x|^p + |y|^p + |z|^p = 1 (p = 6: rounded cube).
    return (np.abs(u) ** p).sum(axis=1) ** (-1.0 / p)


def _dented(u: np.ndarray) -> np.ndarray:
    # A sphere with six deep dents along the axes: strongly non-convex, still star-shaped.
    axes = np.concatenate([np.eye(3), -np.eye(3)])
    return 1.0 - 0.4 * np.exp(-((1.0 - u @ axes.T) / 0.08)).sum(axis=1)


SHAPES = {"sphere": _sphere, "ellipsoid": _ellipsoid, "bumpy": _bumpy, "superquadric": _superquadric,
          "dented": _dented}


def directions(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def fibonacci_directions(n: int) -> np.ndarray:
    """Deterministic, nearly uniform unit directions (the dense 'true surface' samples)."""
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    phi = np.pi * (1 + 5 ** 0.5) * i
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def surface_points(shape: str, u: np.ndarray) -> np.ndarray:
    if shape not in SHAPES:
        raise KeyError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    return SHAPES[shape](u)[:, None] * u


def sample(shape: str, n: int, noise: float, seed: int) -> np.ndarray:
    """``n`` noisy points on ``shape`` (noise: std as a fraction of the mean radius)."""
    rng = np.random.default_rng(seed)
    pts = surface_points(shape, directions(n, rng))
    scale = float(np.linalg.norm(pts, axis=1).mean())
    if noise == 0:  # exact surface points (tests only; snapping them would perturb a degenerate Delaunay)
        return pts
    # on a grid: numpy's sin/exp/power kernels differ in the last bits between CPUs (see _repro)
    return quantize(pts + rng.normal(scale=noise * scale, size=pts.shape), COORD_BITS)


def truth(shape: str, n: int = 20000) -> np.ndarray:
    """Dense noise-free samples of the true surface (for the Chamfer distance)."""
    return quantize(surface_points(shape, fibonacci_directions(n)), COORD_BITS)

"""Synthetic genus-0 shapes and noisy point clouds sampled from them.

Two kinds of shape, each able to say which points are inside (:func:`inside`, for the oracle and the
tests) and to give dense noise-free samples of its surface (:func:`truth`, for the Chamfer distance):

* *star-shaped* shapes, given by their radius along a unit direction ``r(u)`` (a surface point is
  ``r(u) u``). Samples are ``r(u) u`` for directions ``u`` uniform on the sphere (uniform in direction,
  *not* in area). Convex or nearly so: ``sphere``, ``ellipsoid``, ``superquadric`` (a rounded cube);
  non-convex: ``bumpy``, ``dented`` (six deep dents), ``peanut`` and ``dumbbell`` (a waist),
  ``lobes6`` and ``lobes4`` (six / four arms).
* *bent tubes*: the points at distance ``rho`` from a circular arc of radius ``R`` spanning ``span``
  radians in the xy-plane (a tube closed at both ends by hemispherical caps; a ball's boundary, genus 0).
  ``c_tube`` (270 degrees: a "C"), ``u_tube`` (190 degrees: a "U"). Samples are uniform in area
  (rejection on the tube's area element ``rho (R + rho cos(phi))``). The convex hull fills the hole of
  the C / U, so it is a poor answer there.

Noise is isotropic Gaussian with standard deviation ``noise`` times the mean distance of the clean
samples from the origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

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


def _bumps(u: np.ndarray, axes: np.ndarray, depth: float, width: float, base: float = 1.0) -> np.ndarray:
    return base + depth * np.exp(-((1.0 - u @ axes.T) / width)).sum(axis=1)


_AXES6 = np.concatenate([np.eye(3), -np.eye(3)])
_AXES4 = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]) / np.sqrt(3.0)


def _dented(u: np.ndarray) -> np.ndarray:
    # A sphere with six deep dents along the axes: strongly non-convex, still star-shaped.
    return _bumps(u, _AXES6, -0.4, 0.08)


def _lobes6(u: np.ndarray) -> np.ndarray:
    # Six arms along the axes: the hull spans the hollows between them.
    return _bumps(u, _AXES6, 0.75, 0.12, base=0.55)


def _lobes4(u: np.ndarray) -> np.ndarray:
    # Four arms along the tetrahedron's directions (held-out shape).
    return _bumps(u, _AXES4, 0.7, 0.15, base=0.55)


def _peanut(u: np.ndarray) -> np.ndarray:
    # Two lobes along x joined by a waist (radius 0.45 against 1.05 at the tips).
    return 0.45 + 0.6 * u[:, 0] ** 2


def _dumbbell(u: np.ndarray) -> np.ndarray:
    # A sharper waist along y (held-out shape).
    return 0.4 + 0.75 * np.abs(u[:, 1]) ** 3


@dataclass(frozen=True)
class Tube:
    """The boundary of the set of points within ``rho`` of the arc ``R (cos t, sin t, 0)``, t in [0, span]."""

    R: float
    span: float
    rho: float

    def distance_to_arc(self, x: np.ndarray) -> np.ndarray:
        theta = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi)
        on_arc = np.sqrt((np.hypot(x[:, 0], x[:, 1]) - self.R) ** 2 + x[:, 2] ** 2)
        ends = [np.linalg.norm(x - self.R * np.array([np.cos(t), np.sin(t), 0.0]), axis=1) for t in (0.0, self.span)]
        return np.where(theta <= self.span, on_arc, np.minimum(*ends))

    def surface(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points uniform in area on the tube and its two hemispherical caps."""
        tube_area = 2 * np.pi * self.rho * self.R * self.span
        cap_area = 2 * np.pi * self.rho ** 2
        which = rng.choice(3, size=n, p=np.array([tube_area, cap_area, cap_area]) / (tube_area + 2 * cap_area))
        out = np.zeros((n, 3))
        k = int((which == 0).sum())
        got: list[np.ndarray] = []
        while sum(len(g) for g in got) < k:  # rejection on the area element rho (R + rho cos(phi))
            t, phi, acc = rng.uniform(0, self.span, 2 * k + 8), rng.uniform(0, 2 * np.pi, 2 * k + 8), rng.random(2 * k + 8)
            keep = acc < (self.R + self.rho * np.cos(phi)) / (self.R + self.rho)
            t, phi = t[keep], phi[keep]
            er = np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], axis=1)
            ez = np.array([0.0, 0.0, 1.0])
            got.append(self.R * er + self.rho * (np.cos(phi)[:, None] * er + np.sin(phi)[:, None] * ez))
        out[which == 0] = np.concatenate(got)[:k]
        for end, t_end in ((1, 0.0), (2, self.span)):
            m = int((which == end).sum())
            v = rng.normal(size=(m, 3))
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            tangent = np.array([-np.sin(t_end), np.cos(t_end), 0.0]) * (-1.0 if end == 1 else 1.0)  # pointing away
            side = v @ tangent
            v = np.where(side[:, None] < 0, v - 2 * side[:, None] * tangent, v)  # fold onto the outer half
            out[which == end] = self.R * np.array([np.cos(t_end), np.sin(t_end), 0.0]) + self.rho * v
        return out


_RADIAL: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sphere": _sphere, "ellipsoid": _ellipsoid, "bumpy": _bumpy, "superquadric": _superquadric, "dented": _dented,
    "peanut": _peanut, "dumbbell": _dumbbell, "lobes6": _lobes6, "lobes4": _lobes4,
}
_TUBES = {"c_tube": Tube(R=0.8, span=1.5 * np.pi, rho=0.25), "u_tube": Tube(R=0.7, span=190 / 180 * np.pi, rho=0.3)}
SHAPES: tuple[str, ...] = tuple(_RADIAL) + tuple(_TUBES)
CONVEX = ("sphere", "ellipsoid", "superquadric")  # the hull is (nearly) the right answer only on these


def _check(shape: str) -> None:
    if shape not in SHAPES:
        raise KeyError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


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
    """Points of a star-shaped ``shape`` along the unit directions ``u``."""
    _check(shape)
    if shape not in _RADIAL:
        raise KeyError(f"{shape!r} is not star-shaped")
    return _RADIAL[shape](u)[:, None] * u


def _clean(shape: str, n: int, rng: np.random.Generator) -> np.ndarray:
    _check(shape)
    if shape in _TUBES:
        return _TUBES[shape].surface(n, rng)
    return surface_points(shape, directions(n, rng))


def inside(shape: str, x: np.ndarray) -> np.ndarray:
    """Whether each point of ``x`` (k, 3) lies inside ``shape``."""
    _check(shape)
    x = np.asarray(x, dtype=float)
    if shape in _TUBES:
        tube = _TUBES[shape]
        return tube.distance_to_arc(x) < tube.rho
    r = np.linalg.norm(x, axis=1)
    return r < _RADIAL[shape](x / np.maximum(r, 1e-12)[:, None])


def sample(shape: str, n: int, noise: float, seed: int) -> np.ndarray:
    """``n`` noisy points on ``shape`` (noise: std as a fraction of the mean distance from the origin)."""
    rng = np.random.default_rng(seed)
    pts = _clean(shape, n, rng)
    scale = float(np.linalg.norm(pts, axis=1).mean())
    if noise == 0:  # exact surface points (tests only; snapping them would perturb a degenerate Delaunay)
        return pts
    # on a grid: numpy's sin/exp/power kernels differ in the last bits between CPUs (see _repro)
    return quantize(pts + rng.normal(scale=noise * scale, size=pts.shape), COORD_BITS)


def truth(shape: str, n: int = 20000) -> np.ndarray:
    """Dense noise-free samples of the true surface (for the Chamfer distance): Fibonacci directions for a
    star-shaped shape, a fixed-seed uniform-in-area sample for a tube."""
    _check(shape)
    pts = _TUBES[shape].surface(n, np.random.default_rng(20261206)) if shape in _TUBES else \
        surface_points(shape, fibonacci_directions(n))
    return quantize(pts, COORD_BITS)

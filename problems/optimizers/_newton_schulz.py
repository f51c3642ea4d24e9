"""Orthogonalisation of an update matrix: Newton–Schulz polynomial iterations and the exact
polar factor.

Muon (Jordan et al., 2024, https://kellerjordan.github.io/posts/muon/, reference code
``KellerJordan/Muon``) replaces a 2-D update ``G = U S V^T`` by (an approximation of) its polar
factor ``U V^T``. The approximation is ``q`` steps of an odd matrix polynomial

    X_0 = G / ||G||_F,        X_{k+1} = c_0 X_k + c_1 (X_k X_k^T) X_k + c_2 (X_k X_k^T)^2 X_k + ...

which maps every singular value through the scalar polynomial
``phi(s) = c_0 s + c_1 s^3 + c_2 s^5 + ...`` and leaves the singular vectors alone (the step is a
polynomial in ``X X^T`` times ``X``). Dividing by the Frobenius norm puts all singular values in
``(0, 1]``. Two polynomial families are provided:

* :data:`MUON_QUINTIC` ``(3.4445, -4.7750, 2.0315)`` — the tuned quintic used in practice. It
  maximises the slope at zero, so small singular values grow fast, at the price of not converging
  to 1: after a few steps the singular values oscillate in a band around 1 (roughly 0.7–1.2).
* :func:`taylor_coefficients` ``(kappa)`` — the classic Newton–Schulz iteration of degree
  ``2 kappa + 1`` (Kovarik 1970; Björck & Bowie 1971; Higham, *Functions of Matrices*, §8.3):
  ``phi(s) = s * sum_{i<=kappa} binom(2i, i) / 4^i * (1 - s^2)^i``, the Taylor truncation of
  ``s (1 - (1 - s^2))^{-1/2}``. ``kappa = 1`` is the cubic ``(1.5, -0.5)`` (:data:`CUBIC`). For
  ``s`` in ``(0, 1]`` it satisfies ``0 <= 1 - phi(s)^2 <= (1 - s^2)^(kappa + 1)``, so after ``q``
  steps the error factor obeys ``max_i (1 - s_i^2) <= delta^((kappa + 1)^q)`` with
  ``delta = 1 - s_min^2``: doubly exponential in ``q`` and better with larger ``kappa``. This is
  the factor analysed in Kim & Oh, "Convergence of Muon with Newton–Schulz" (arXiv 2601.19156);
  :func:`ns_error_bound` evaluates it.

A *schedule* is either one coefficient tuple used for every step (with ``steps``) or a list of
tuples, one per step (the per-step form used by Polar Express-style methods, and the slot the
``newton_schulz`` evaluator evolves). Each step costs ``len(coefficients)`` matrix products
(``A = X X^T``, ``len - 2`` Horner products in ``A``, one product with ``X``); a 1-tuple is a
plain rescaling.

Deviation from the reference code: it runs the iteration in bfloat16 on the GPU; here the working
dtype defaults to float32 (bfloat16 matmuls are slow on CPU) and can be set with ``dtype``.
"""

from __future__ import annotations

from math import comb
from typing import Sequence

import numpy as np
import torch

MUON_QUINTIC: tuple[float, float, float] = (3.4445, -4.7750, 2.0315)
CUBIC: tuple[float, float] = (1.5, -0.5)

Coefficients = Sequence[float]
Schedule = Sequence[Coefficients]


def taylor_coefficients(kappa: int) -> tuple[float, ...]:
    """Odd-polynomial coefficients ``(c_0, ..., c_kappa)`` of the classic degree-``2 kappa + 1``
    Newton–Schulz step ``phi(s) = s * sum_i binom(2i, i) 4^-i (1 - s^2)^i`` (module docstring)."""
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1, got {kappa}")
    coeffs = np.zeros(kappa + 1)
    for i in range(kappa + 1):
        weight = comb(2 * i, i) / 4.0**i  # Taylor coefficient of (1 - x)^(-1/2)
        for j in range(i + 1):  # expand (1 - s^2)^i in powers of s^2
            coeffs[j] += weight * comb(i, j) * (-1.0) ** j
    return tuple(float(c) for c in coeffs)


def as_schedule(coefficients: Coefficients | Schedule = MUON_QUINTIC,
                steps: int | None = None) -> list[tuple[float, ...]]:
    """Normalise ``coefficients`` (one tuple, or one tuple per step) into a list of tuples."""
    if len(coefficients) == 0:
        raise ValueError("empty coefficients")
    if isinstance(coefficients[0], (int, float, np.floating, np.integer)):
        if steps is None:
            raise ValueError("a single coefficient tuple needs a step count")
        return [tuple(float(c) for c in coefficients)] * int(steps)  # type: ignore[union-attr,arg-type]
    schedule = [tuple(float(c) for c in step) for step in coefficients]  # type: ignore[union-attr]
    if steps is not None and steps != len(schedule):
        raise ValueError(f"steps={steps} but the schedule has {len(schedule)} steps")
    if any(len(step) == 0 for step in schedule):
        raise ValueError("a schedule step has no coefficients")
    return schedule


def matmul_count(schedule: Schedule) -> int:
    """Matrix products one orthogonalisation costs (the ``newton_schulz`` evaluator's time proxy)."""
    return int(sum(len(step) if len(step) >= 2 else 0 for step in schedule))


def matmul_flops(schedule: Schedule, m: int, n: int) -> float:
    """Multiply-add FLOPs (2 per MAC) of one orthogonalisation of an ``m x n`` matrix."""
    small, large = min(m, n), max(m, n)
    total = 0.0
    for step in schedule:
        k = len(step)
        if k < 2:
            continue
        # X X^T and (poly) X are small x large x small; the Horner products are small^3.
        total += 2 * (2 * small * small * large) + (k - 2) * 2 * small**3
    return total


def _apply_polynomial(X: torch.Tensor, coeffs: tuple[float, ...]) -> torch.Tensor:
    """One step ``X <- c_0 X + (c_1 A + c_2 A^2 + ...) X`` with ``A = X X^T`` (Horner in ``A``)."""
    if len(coeffs) == 1:
        return coeffs[0] * X
    A = X @ X.mT
    B = coeffs[-1] * A
    for c in reversed(coeffs[1:-1]):  # B_j = c_j A + B_{j+1} A: no identity matrix needed
        B = c * A + B @ A
    return coeffs[0] * X + B @ X


def newton_schulz(
    G: torch.Tensor,
    steps: int | None = 5,
    coefficients: Coefficients | Schedule = MUON_QUINTIC,
    *,
    eps: float = 1e-7,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Approximate polar factor of ``G`` (``..., m, n``; batched over leading dims).

    Pass one coefficient tuple and ``steps`` (Muon: ``MUON_QUINTIC``, 5), or a per-step list of
    tuples with ``steps=None``. The wide orientation is used internally so ``X X^T`` is the
    smaller Gram matrix, as in the reference code. Returns a tensor of ``G``'s dtype.
    """
    if G.ndim < 2:
        raise ValueError(f"newton_schulz needs a matrix, got shape {tuple(G.shape)}")
    schedule = as_schedule(coefficients, steps)
    X = G.to(dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + eps)  # all singular values now in (0, 1]
    for coeffs in schedule:
        X = _apply_polynomial(X, coeffs)
    if tall:
        X = X.mT
    return X.to(G.dtype)


def polar_svd(G: torch.Tensor) -> torch.Tensor:
    """Exact polar factor ``U V^T`` of ``G`` (thin SVD, computed in float64 for exactness)."""
    U, _, Vh = torch.linalg.svd(G.to(torch.float64), full_matrices=False)
    return (U @ Vh).to(G.dtype)


def singular_value_map(s: np.ndarray, schedule: Schedule) -> np.ndarray:
    """What a schedule does to (already normalised) singular values: the scalar iteration."""
    s = np.asarray(s, dtype=np.float64)
    for coeffs in schedule:
        s = np.asarray(sum(c * s ** (2 * j + 1) for j, c in enumerate(coeffs)), dtype=np.float64)
    return s


def ns_error_bound(delta: float, kappa: int, q: int) -> float:
    """Bound ``delta^((kappa + 1)^q)`` on ``max_i (1 - s_i^2)`` after ``q`` classic NS steps of
    degree ``2 kappa + 1`` started from singular values with ``1 - s_min^2 = delta``."""
    return float(delta ** ((kappa + 1) ** q))


def _float64(a: torch.Tensor | np.ndarray) -> np.ndarray:
    return np.asarray(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a, dtype=np.float64)


def orthogonality_error(X: torch.Tensor | np.ndarray) -> float:
    """RMS deviation of the singular values of ``X`` from 1: ``||X - polar(X)||_F / sqrt(r)``.

    Zero exactly when ``X`` has orthonormal rows or columns. Non-finite input gives ``inf``.
    """
    A = _float64(X)
    if not np.all(np.isfinite(A)):
        return float("inf")
    s = np.linalg.svd(A, compute_uv=False)
    return float(np.sqrt(np.mean((s - 1.0) ** 2)))


def polar_error(X: torch.Tensor | np.ndarray, G: torch.Tensor | np.ndarray, rtol: float = 1e-5) -> float:
    """``||U_r^T X V_r - I_r||_F / sqrt(r)``: distance of ``X`` from the exact polar factor of
    ``G`` on ``G``'s numerical range (the ``r`` singular values above ``rtol * s_max``).

    For ``X = NS(G)`` the diagonal of ``U_r^T X V_r`` is ``phi(s_i)`` (the scalar map), so this
    is the RMS of ``phi(s_i) - 1`` over the directions ``G`` actually has; the null space, which
    no polynomial can lift (``phi(0) = 0``), is left out. Non-finite ``X`` gives ``inf``.
    """
    Xd, Gd = _float64(X), _float64(G)
    if not np.all(np.isfinite(Xd)):
        return float("inf")
    U, s, Vh = np.linalg.svd(Gd, full_matrices=False)
    r = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
    if r == 0:
        return 0.0
    D = U[:, :r].T @ Xd @ Vh[:r].T
    return float(np.linalg.norm(D - np.eye(r)) / np.sqrt(r))


def singular_value_band(X: torch.Tensor | np.ndarray) -> tuple[float, float]:
    """Smallest and largest singular value of ``X``."""
    A = _float64(X)
    s = np.linalg.svd(A, compute_uv=False)
    return float(s.min()), float(s.max())

"""ℓp regression ``min ||x||_p s.t. Ax = b`` by IRLS: our damped IRLS, Adil–Peng–Sachdeva's
p-IRLS, and a scipy reference optimum.

Every method counts its linear-system solves (the cost measure of both papers).

**Damped IRLS** (:func:`damped_irls`; ours — named "primal-dual IRLS" before issue 29). One solve per
iteration: for positive weights ``r``, ``x(r) = argmin sum r_i x_i^2 s.t. Ax = b = R^-1 A^T y``
with ``y = (A R^-1 A^T)^-1 b``, and
``E(r) = b^T y = sum r_i x_i^2``. The dual variables are the weights, kept on a norm ball:

* ``p > 2``: ``||r||_s <= 1`` with ``s = p/(p-2)``. By Hölder ``E(r) <= sum r_i x*_i^2 <=
  ||r||_s ||x*||_p^2``, so ``sqrt(E(r)) <= OPT`` — the **dual invariant**: every iterate's energy is
  a certified lower bound, and it meets ``||x(r)||_p`` at ``r ∝ |x*|^(p-2)``;
* ``1 < p < 2``: the weights are ``r = 1/w`` with ``||w||_t <= 1``, ``t = p/(2-p)``; Hölder gives
  ``||x||_p^2 <= sum x_i^2 / w_i``, so ``||x(r)||_p <= sqrt(E(r))`` — every energy is a certified
  upper bound, equal to OPT at ``w ∝ |x*|^(2-p)``.

The update rule (the evaluator's slot) maps the current ``(r, x)`` to new positive weights; the
algorithm then normalises them onto the ball (so the invariant holds for *any* positive rule)
and mixes in a uniform padding ``delta`` that keeps ``A R^-1 A^T`` well conditioned. The default
rule is the damped multiplicative update ``r <- r^(1-eta) (|x|^(p-2))^eta`` with
``eta = min(1, 1/(p-1))`` (``eta = 1`` is classic IRLS). Every iteration also yields the dual certificate ``b^T y /
||A^T y||_q <= OPT``.

**Not the paper's algorithm** (Ene, Nguyen & Vladu, "Improved ℓp regression via iteratively
reweighted least squares", arXiv 2510.01729): the paper's multiplicative rule, step sizes and
refinement loop could not be recovered from the sources we could read (abstract, introduction,
summaries), so this is a *damped classic IRLS* plus a projection of the weights onto the norm ball.
The Hölder bound above holds for **any** weights on that ball, so it certifies the projection, not
the update; at p = 1.5 the step is 1 and the method *is* classic IRLS.

**p-IRLS** (:func:`p_irls`), Adil, Peng & Sachdeva (NeurIPS 2019), following their released
MATLAB code (github.com/fast-algos/pIRLS, unconstrained branch) on the null-space form
``min_z ||N z + x0||_p``: padded resistances ``|res|^(p-2) + s``, a line search on the step, and
halving of the padding ``i`` when progress stalls. Defined for ``p >= 2`` only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.linalg
import scipy.optimize


@dataclass
class Trace:
    """Per-iteration record: solves so far, primal value ``||x||_p``, lower bound, wall time."""

    solves: list[int] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    weights: list[np.ndarray] = field(default_factory=list)

    def first_within(self, opt: float, eps: float) -> tuple[int | None, float | None]:
        for s, v, t in zip(self.solves, self.value, self.seconds):
            if v <= (1 + eps) * opt:
                return s, t
        return None, None


def lp_norm(x: np.ndarray, p: float) -> float:
    a = np.abs(x)
    m = a.max() if a.size else 0.0
    return 0.0 if m == 0 else float(m * ((a / m) ** p).sum() ** (1.0 / p))


def weighted_solve(A: np.ndarray, b: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x = R^-1 A^T y``, ``y = (A R^-1 A^T)^-1 b``: one linear-system solve (Cholesky)."""
    AR = A / r
    y = scipy.linalg.cho_solve(scipy.linalg.cho_factor(AR @ A.T), b)
    return AR.T @ y, y


def ball_exponent(p: float) -> float:
    """The norm ``s`` of the weights' ball: ``p/(p-2)`` on ``r`` for ``p > 2``, ``p/(2-p)`` on ``1/r`` for ``p < 2``."""
    if p == 2:
        raise ValueError("p = 2 is plain least squares")
    return p / (p - 2) if p > 2 else p / (2 - p)


def normalise(r: np.ndarray, p: float, delta: float) -> np.ndarray:
    """Project positive weights onto the dual ball and mix in the uniform padding ``delta``."""
    r = np.asarray(r, dtype=float)
    if not (r.shape and np.all(np.isfinite(r)) and np.all(r > 0)):
        raise ValueError("weights must be finite and positive")
    s, n = ball_exponent(p), len(r)
    v = r if p > 2 else 1.0 / r
    v = v / lp_norm(v, s)
    v = (1 - delta) * v + delta * n ** (-1.0 / s)  # a convex combination of unit vectors: norm <= 1
    return v if p > 2 else 1.0 / v


def dual_certificate(A: np.ndarray, b: np.ndarray, y: np.ndarray, p: float) -> float:
    q = p / (p - 1)
    den = lp_norm(A.T @ y, q)
    return float(b @ y / den) if den > 0 else 0.0


def damped_update(r: np.ndarray, x: np.ndarray, p: float, iteration: int, eta: float | None = None) -> np.ndarray:
    """The default rule: ``r^(1-eta) (|x|^(p-2))^eta``, ``eta = min(1, 1/(p-1))`` unless given
    (eta = 1 is classic IRLS, which oscillates for p >= 3 on our instances)."""
    eta = min(1.0, 1.0 / (p - 1)) if eta is None else eta
    target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)
    return r ** (1 - eta) * target ** eta


def damped_irls(A: np.ndarray, b: np.ndarray, p: float, rule: Callable[..., Any] = damped_update,
                     iterations: int = 60, delta: float = 1e-6, check: Callable[..., None] | None = None) -> Trace:
    """Run ``iterations`` weighted solves; ``rule(r, x, p, iteration)`` proposes the next weights.
    ``check(r, x, energy)`` (tests) is called after every solve."""
    n = A.shape[1]
    trace, t0 = Trace(), time.perf_counter()
    r = normalise(np.ones(n), p, delta)
    for it in range(iterations):
        x, y = weighted_solve(A, b, r)
        energy = float(b @ y)
        if check is not None:
            check(r, x, energy)
        lower = dual_certificate(A, b, y, p)
        if p > 2:
            lower = max(lower, np.sqrt(max(energy, 0.0)))
        trace.solves.append(it + 1)
        trace.value.append(lp_norm(x, p))
        trace.lower.append(lower)
        trace.seconds.append(time.perf_counter() - t0)
        trace.weights.append(r.copy())
        r = normalise(rule(r.copy(), x.copy(), p, it), p, delta)
    return trace


# ---- Adil–Peng–Sachdeva p-IRLS ------------------------------------------------------------
def null_space_form(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``N`` (orthonormal null-space basis of A) and ``x0`` (least-norm solution), so that
    ``{x : Ax = b} = {x0 + N z}``."""
    x0 = np.linalg.lstsq(A, b, rcond=None)[0]
    return scipy.linalg.null_space(A), x0


def p_irls(A: np.ndarray, b: np.ndarray, p: float, eps: float = 1e-8, max_iter: int = 200) -> Trace:
    """APS p-IRLS on ``min_z ||B z - c||_p`` with ``B = N``, ``c = -x0``; solves counted as in their
    code (the initial least-squares solve plus one per iteration)."""
    if p < 2:
        raise ValueError("p-IRLS (Adil-Peng-Sachdeva 2019) is defined for p >= 2")
    N, x0 = null_space_form(A, b)
    B, c = N, -x0
    m = len(c)
    trace, t0 = Trace(), time.perf_counter()
    solves = 0

    def solve(w: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        nonlocal solves
        solves += 1
        return np.linalg.solve(B.T @ (w[:, None] * B), rhs)

    z = solve(np.ones(m), B.T @ c)
    res = B @ z - c
    current = lp_norm(res, p)
    lb = np.linalg.norm(res) / m ** (0.5 - 1.0 / p)
    i_pad = (current ** p - lb ** p) / (16 * p)

    def record() -> None:
        trace.solves.append(solves)
        trace.value.append(current)
        trace.lower.append(float("nan"))
        trace.seconds.append(time.perf_counter() - t0)

    record()
    it = 0
    while i_pad > 2 * eps * current ** p / (16 * p * (1 + eps)) and it < max_iter:
        it += 1
        s = 0.5 * i_pad ** ((p - 2) / p) / m ** ((p - 2) / p)
        rr = np.abs(res) ** (p - 2)
        g = p * rr * res
        inv = solve(rr + s, B.T @ g)
        delta = i_pad * inv / (2 * float(g @ (B @ inv)))
        alpha = _line_search(res, B @ delta, p)
        reduce = _reduce_i(res, B @ delta, p, i_pad, s)
        new = lp_norm(B @ (z - alpha * delta) - c, p)
        if new < current:
            z = z - alpha * delta
            res = B @ z - c
            current = new
        else:
            reduce = True
        if reduce:
            i_pad /= 2
        i_pad = min(i_pad, (current ** p - lb ** p) / (16 * p))
        record()
    return trace


def _grad_scaled(scale: float, p: float, zr: np.ndarray, w: np.ndarray) -> float:
    v = zr - scale * w
    return float(-(w @ (v * np.abs(v) ** (p - 2))))


def _line_search(zr: np.ndarray, w: np.ndarray, p: float) -> float:
    lo, hi = -3.0, 3.0
    while _grad_scaled(hi, p, zr, w) < 0:
        lo, hi = hi, 2 * hi
    while _grad_scaled(lo, p, zr, w) > 0:
        hi, lo = lo, 2 * lo
    while abs(hi - lo) > 1e-1:
        mid = (lo + hi) / 2
        if _grad_scaled(mid, p, zr, w) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def _reduce_i(zr: np.ndarray, Ad: np.ndarray, p: float, i_pad: float, s: float) -> bool:
    R = np.abs(zr) ** (p - 2)
    sq = float(Ad @ ((R + s) * Ad))
    nd = lp_norm(Ad, p)
    k = p * nd * (nd / (2 * p * sq)) ** (1 / (p - 1))
    lam = 16 * p
    a0 = min(1 / (16 * lam), 1 / ((16 * lam) ** (1 / (p - 1)) * k))
    g = p * R * zr
    d = a0 * Ad
    gamma = g @ d - 2 * p * p * (d @ (R * d)) - (p * lp_norm(d, p)) ** p
    return bool(gamma < 0.25 * a0 * i_pad or sq >= lam * i_pad)


# ---- reference optimum --------------------------------------------------------------------
def reference_optimum(A: np.ndarray, b: np.ndarray, p: float) -> tuple[float, np.ndarray]:
    """``OPT`` by scipy (L-BFGS on the smooth convex ``||N z + x0||_p^p``, tight tolerances)."""
    N, x0 = null_space_form(A, b)
    scale = lp_norm(x0, p)

    def f(z: np.ndarray) -> tuple[float, np.ndarray]:
        v = (x0 + N @ z) / scale
        a = np.abs(v)
        return float((a ** p).sum()), N.T @ (p * a ** (p - 1) * np.sign(v)) / scale

    out = scipy.optimize.minimize(f, np.zeros(N.shape[1]), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-12, "maxcor": 30})
    x = x0 + N @ out.x
    return lp_norm(x, p), x


def random_instance(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian ``A`` (d x n) and ``b = A x_true`` with a heavy-tailed ``x_true``."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, n))
    return A, A @ rng.standard_t(3, n)

"""Optimistic baselines for the ridge bandit on the unit sphere: OFUL / LinUCB (Abbasi-Yadkori, Pal &
Szepesvari 2011) for ``f = x`` and GLM-UCB (Filippi, Cappe, Garivier & Szepesvari 2010) for any link.

Both keep ``V = lam I + sum_s a_s a_s^T`` and play the maximiser over the unit sphere of an optimistic index,
``<theta^, a> + beta_t ||a||_{V^-1}`` (OFUL; ``theta^`` the ridge estimate) or
``f(<theta^, a>) + beta_t ||a||_{V^-1}`` (GLM-UCB; ``theta^`` the regularised least-squares fit of the link,
which for Gaussian noise is the maximum-likelihood estimate), with OFUL's radius
``beta_t = sigma sqrt(2 log(1/delta) + d log(1 + t / (lam d))) + sqrt(lam)`` (``||theta*|| = 1``).

Departures, each for a reason: the sphere is not a finite action set, so the index is maximised by the ascent
``a <- normalise(grad index(a))`` from the previous action and from ``theta^`` (for OFUL's index, convex in
``a``, each step cannot decrease it; the result is a stationary point, not a certified maximum). GLM-UCB's
theory radius carries ``1 / inf f'``, which is infinite for ``x|x|`` and ``x^3`` (``f'(0) = 0``: the very
reason these links have a burn-in), so OFUL's radius is used as is — the usual practical choice. The GLM fit is
refreshed on a geometric schedule (whenever ``t`` has grown by half since the last fit; three Gauss-Newton steps
started from the previous fit, or, at first, from the normalised ridge estimate) to keep the cost near linear in T.
"""

from __future__ import annotations

import numpy as np

from ._core import LINKS, Trace

_DERIVATIVE = {"linear": lambda x: np.ones_like(x), "quadratic": lambda x: 2.0 * np.abs(x),
               "cubic": lambda x: 3.0 * x * x}


def _radius(t: int, d: int, sigma: float, lam: float, delta: float) -> float:
    return sigma * np.sqrt(2.0 * np.log(1.0 / delta) + d * np.log(1.0 + t / (lam * d))) + np.sqrt(lam)


def _optimistic_action(theta: np.ndarray, vinv: np.ndarray, beta: float, link: str, start: np.ndarray,
                       steps: int = 6) -> np.ndarray:
    """Ascent of f(<theta, a>) + beta ||a||_{V^-1} on the unit sphere, batched over replicas (R, d)."""
    fprime = _DERIVATIVE[link]
    best, best_value = None, None
    for a in (start, theta / np.maximum(np.linalg.norm(theta, axis=1, keepdims=True), 1e-12)):
        a = a.copy()
        for _ in range(steps):
            ma = np.einsum("rij,rj->ri", vinv, a)
            width = np.sqrt(np.maximum(np.einsum("ri,ri->r", a, ma), 1e-300))
            grad = fprime(np.einsum("ri,ri->r", a, theta))[:, None] * theta + beta * ma / width[:, None]
            a = grad / np.maximum(np.linalg.norm(grad, axis=1, keepdims=True), 1e-300)
        value = LINKS[link](np.einsum("ri,ri->r", a, theta)) + beta * np.sqrt(
            np.maximum(np.einsum("ri,rij,rj->r", a, vinv, a), 0.0))
        if best is None:
            best, best_value = a, value
        else:
            better = value > best_value
            best = np.where(better[:, None], a, best)
            best_value = np.where(better, value, best_value)
    assert best is not None
    return best


def _gauss_newton(actions: np.ndarray, y: np.ndarray, theta: np.ndarray, link: str, lam: float,
                  steps: int = 3) -> np.ndarray:
    """Regularised least squares of y ~ f(<theta, a>) for each replica: (R, t, d), (R, t), (R, d)."""
    f, fprime = LINKS[link], _DERIVATIVE[link]
    d = theta.shape[1]
    for _ in range(steps):
        z = np.einsum("rtd,rd->rt", actions, theta)
        jac = fprime(z)[:, :, None] * actions
        resid = y - f(z)
        lhs = np.einsum("rti,rtj->rij", jac, jac) + lam * np.eye(d)
        rhs = np.einsum("rti,rt->ri", jac, resid) - lam * theta
        theta = theta + np.linalg.solve(lhs, rhs[:, :, None])[:, :, 0]
    return theta


def run_ucb(theta_star: np.ndarray, link: str, T: int, sigma: float, seed: int, glm: bool | None = None,
            lam: float = 1.0, delta: float | None = None) -> Trace:
    """OFUL (``glm=False``; the default for ``link == "linear"``) or GLM-UCB (``glm=True``; the default
    otherwise) for T rounds on ``theta_star`` ``(R, d)``; ``delta`` defaults to 1/T. The trace's overlap is
    ``<theta^/||theta^||, theta*>``."""
    glm = (link != "linear") if glm is None else glm
    delta = 1.0 / T if delta is None else delta
    f = LINKS[link]
    ts = np.atleast_2d(theta_star).astype(float)
    R, d = ts.shape
    rng = np.random.default_rng(seed)
    vinv = np.repeat(np.eye(d)[None] / lam, R, axis=0)
    b = np.zeros((R, d))
    theta = np.zeros((R, d))
    a = rng.normal(size=(R, d))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    actions, ys = np.empty((R, T, d)), np.empty((R, T))
    regret, overlap = np.empty((R, T)), np.empty((R, T))
    next_fit = 2 * d
    for t in range(T):
        overlap[:, t] = np.einsum("rd,rd->r", theta, ts) / np.maximum(np.linalg.norm(theta, axis=1), 1e-12)
        if t > 0:
            a = _optimistic_action(theta, vinv, _radius(t, d, sigma, lam, delta), link if glm else "linear", a)
        fs = f(np.einsum("rd,rd->r", a, ts))
        regret[:, t] = 1.0 - fs
        y = fs + sigma * rng.normal(size=R)
        actions[:, t], ys[:, t] = a, y
        va = np.einsum("rij,rj->ri", vinv, a)  # Sherman-Morrison update of V^-1
        vinv -= np.einsum("ri,rj->rij", va, va) / (1.0 + np.einsum("ri,ri->r", a, va))[:, None, None]
        b += y[:, None] * a
        ridge = np.einsum("rij,rj->ri", vinv, b)
        if not glm:
            theta = ridge
        elif t + 1 >= next_fit:
            start = theta if np.any(theta) else ridge / np.maximum(np.linalg.norm(ridge, axis=1, keepdims=True), 1e-12)
            theta = _gauss_newton(actions[:, : t + 1], ys[:, : t + 1], start, link, lam)
            next_fit = int(1.5 * (t + 1)) + 1
    single = theta_star.ndim == 1
    return Trace(regret[0], overlap[0]) if single else Trace(regret, overlap)

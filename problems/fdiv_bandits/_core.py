"""Offline f-divergence-regularised contextual bandits, tabular (Zhao, Ji, Zhao, Zhang & Gu, ICLR 2026,
arXiv:2502.06051).

Objective of a policy ``pi`` (``S x A`` row-stochastic) on a bandit with context law ``rho``, mean
rewards ``r`` in [0, 1] and reference policy ``pi_ref``::

    J(pi) = sum_x rho(x) [ <pi(.|x), r(x, .)> - (1/eta) D_f(pi(.|x) || pi_ref(.|x)) ]

with ``D_f`` the reverse KL (``f(t) = t log t``) or the chi-square divergence (``f(t) = (t - 1)^2 / 2``,
strongly convex). Learners see ``n`` logged triples ``(x, a, y)``, ``x ~ rho``, ``a ~ mu(.|x)``,
``y ~ Bernoulli(r(x, a))``, collected by a behaviour policy ``mu`` whose single-policy
concentrability ``C* = max pi*(a|x) / mu(a|x)`` is set by ``kappa``, in one of two coverages
(:data:`COVERAGES`):

* ``covered``: ``mu = pi*/kappa + (1 - 1/kappa) nu`` with ``nu ∝ max_a pi* - pi* + 1e-3`` — the spare mass
  goes to the actions the optimum plays least, so every action is seen often and ``C*`` is close to ``kappa``;
* ``starved``: ``mu = pi*/kappa`` on every action but the optimum's mode, which gets the rest — the same
  ``C* = kappa`` (reached on the off-mode actions), but the actions off the mode are seen only as often as
  the concentrability forces. This is the regime of the paper's reverse-KL result: under single-policy
  concentrability alone the plug-in learner's rare, noisy over-estimates are amplified by ``exp(eta r^)``,
  and pessimism is what buys the ``1/n`` rate; for strongly convex ``f`` the plug-in needs no pessimism.

* :func:`kl_pcb` — the paper's pessimistic learner for reverse KL: ``r~ = clip(r^ - b, 0, 1)``
  (0 where a pair was never seen), ``pi ∝ pi_ref exp(eta r~)``; ``b`` defaults to the Hoeffding
  bonus :func:`hoeffding_bonus`.
* :func:`plugin_policy` — the regularised maximiser of the plug-in estimate, no pessimism (the
  paper's algorithm for strongly convex ``f``; for KL it is the naive baseline).
* :func:`greedy_policy` — argmax of ``r^`` (what one picks ignoring the regulariser).
* :func:`lcb_greedy_policy` — argmax of the lower confidence bound ``r^ - b`` (the unregularised
  pessimistic learner of offline bandits, e.g. Rashidinejad et al. 2021), judged on the regularised objective.
* :func:`pessimistic_policy` — the regularised maximiser of ``r^ - b`` for either divergence (KL-PCB for KL;
  for chi-square it shows what pessimism costs where the paper says it is not needed).

The tabular least-squares estimate is the empirical mean per ``(x, a)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

DIVERGENCES = ("kl", "chi2")
COVERAGES = ("covered", "starved")


@dataclass(frozen=True)
class Bandit:
    rho: np.ndarray     # (S,) context law
    r: np.ndarray       # (S, A) mean rewards in [0, 1]
    pi_ref: np.ndarray  # (S, A) reference policy
    mu: np.ndarray      # (S, A) behaviour (data) policy
    eta: float
    divergence: str


def regularised_optimum(r: np.ndarray, pi_ref: np.ndarray, eta: float, divergence: str) -> np.ndarray:
    """argmax_pi <pi, r> - (1/eta) D_f(pi || pi_ref), row by row (closed form for KL; for chi-square
    ``pi = pi_ref max(0, 1 + eta (r - lam))`` with ``lam`` found by bisection so rows sum to 1)."""
    if divergence == "kl":
        z = eta * r + np.log(pi_ref)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)
    if divergence != "chi2":
        raise ValueError(f"unknown divergence {divergence!r}; known: {DIVERGENCES}")
    lo = r.min(axis=1, keepdims=True) - 1.0 / eta - 1.0
    hi = r.max(axis=1, keepdims=True)
    for _ in range(100):  # sum_a pi_ref max(0, 1 + eta (r - lam)) is decreasing in lam
        lam = 0.5 * (lo + hi)
        mass = (pi_ref * np.maximum(0.0, 1.0 + eta * (r - lam))).sum(axis=1, keepdims=True)
        lo, hi = np.where(mass > 1.0, lam, lo), np.where(mass > 1.0, hi, lam)
    p = pi_ref * np.maximum(0.0, 1.0 + eta * (r - 0.5 * (lo + hi)))
    return p / p.sum(axis=1, keepdims=True)


def divergence_value(pi: np.ndarray, pi_ref: np.ndarray, divergence: str) -> np.ndarray:
    """D_f(pi(.|x) || pi_ref(.|x)) per context."""
    t = pi / pi_ref
    if divergence == "kl":
        return (pi * np.log(np.where(pi > 0, t, 1.0))).sum(axis=1)
    return (pi_ref * 0.5 * (t - 1.0) ** 2).sum(axis=1)


def objective(b: Bandit, pi: np.ndarray) -> float:
    per = (pi * b.r).sum(axis=1) - divergence_value(pi, b.pi_ref, b.divergence) / b.eta
    return float(b.rho @ per)


def suboptimality(b: Bandit, pi: np.ndarray) -> float:
    """J(pi*) - J(pi) >= 0 for the bandit's own regularised objective."""
    return objective(b, regularised_optimum(b.r, b.pi_ref, b.eta, b.divergence)) - objective(b, pi)


def concentrability(b: Bandit) -> float:
    """Single-policy concentrability max_{x,a} pi*(a|x) / mu(a|x) of the regularised optimum."""
    star = regularised_optimum(b.r, b.pi_ref, b.eta, b.divergence)
    return float(np.divide(star, b.mu, out=np.zeros_like(star), where=star > 0).max())


def make_bandit(n_contexts: int, n_actions: int, eta: float, kappa: float, seed: int,
                divergence: str = "kl", coverage: str = "covered") -> Bandit:
    """A random bandit: uniform rho, r ~ U[0, 1], pi_ref = softmax(N(0, 1)), and a behaviour policy with
    single-policy concentrability ~kappa (kappa >= 1) in the given coverage (module docstring): ``covered``
    spreads the spare mass away from the optimum's mode; ``starved`` gives every off-mode action exactly
    pi*/kappa (so C* = kappa) and the mode the rest. The same seed gives the same r and pi_ref in both."""
    if kappa < 1:
        raise ValueError("kappa must be >= 1")
    if coverage not in COVERAGES:
        raise ValueError(f"unknown coverage {coverage!r}; known: {COVERAGES}")
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.0, 1.0, (n_contexts, n_actions))
    logits = rng.normal(0.0, 1.0, (n_contexts, n_actions))
    pi_ref = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    star = regularised_optimum(r, pi_ref, eta, divergence)
    if coverage == "covered":
        nu = star.max(axis=1, keepdims=True) - star + 1e-3
        mu = star / kappa + (1.0 - 1.0 / kappa) * nu / nu.sum(axis=1, keepdims=True)
    else:
        rows, mode = np.arange(n_contexts), star.argmax(axis=1)
        mu = star / kappa
        mu[rows, mode] = 0.0
        mu[rows, mode] = 1.0 - mu.sum(axis=1)
    return Bandit(np.full(n_contexts, 1.0 / n_contexts), r, pi_ref, mu, float(eta), divergence)


def sample(b: Bandit, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n logged triples (x, a, y) from rho, mu and Bernoulli(r)."""
    rng = np.random.default_rng(seed)
    S, A = b.r.shape
    x = rng.choice(S, size=n, p=b.rho)
    cum = np.cumsum(b.mu[x], axis=1)
    a = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), A - 1)
    y = (rng.random(n) < b.r[x, a]).astype(float)
    return x, a, y


def statistics(shape: tuple[int, int], x: np.ndarray, a: np.ndarray, y: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Counts N(x, a) and empirical means (0 where N = 0)."""
    counts = np.zeros(shape)
    sums = np.zeros(shape)
    np.add.at(counts, (x, a), 1.0)
    np.add.at(sums, (x, a), y)
    return counts, np.divide(sums, counts, out=np.zeros(shape), where=counts > 0)


def hoeffding_bonus(counts: np.ndarray, delta: float = 0.1) -> np.ndarray:
    """sqrt(log(2 S A / delta) / (2 N)), N clipped at 1 (the tabular bonus of a Bernoulli reward)."""
    return np.sqrt(np.log(2 * counts.size / delta) / (2 * np.maximum(counts, 1.0)))


def pessimistic_reward(counts: np.ndarray, means: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """clip(r^ - b, 0, 1), and 0 (the lower end of the reward range) where a pair was never seen."""
    return np.where(counts > 0, np.clip(means - bonus, 0.0, 1.0), 0.0)


def kl_pcb(counts: np.ndarray, means: np.ndarray, pi_ref: np.ndarray, eta: float,
           bonus: np.ndarray | Callable[[np.ndarray], np.ndarray] = hoeffding_bonus) -> np.ndarray:
    """The pessimistic reverse-KL policy pi ∝ pi_ref exp(eta (r^ - b))."""
    b = bonus(counts) if callable(bonus) else np.asarray(bonus, dtype=float)
    return regularised_optimum(pessimistic_reward(counts, means, b), pi_ref, eta, "kl")


def pessimistic_policy(counts: np.ndarray, means: np.ndarray, pi_ref: np.ndarray, eta: float, divergence: str,
                       bonus: Callable[[np.ndarray], np.ndarray] = hoeffding_bonus) -> np.ndarray:
    """Regularised optimum of the pessimistic estimate ``clip(r^ - b, 0, 1)`` (KL-PCB when ``divergence`` is KL)."""
    return regularised_optimum(pessimistic_reward(counts, means, bonus(counts)), pi_ref, eta, divergence)


def plugin_policy(counts: np.ndarray, means: np.ndarray, pi_ref: np.ndarray, eta: float,
                  divergence: str) -> np.ndarray:
    """Regularised optimum of the plug-in estimate (no pessimism; unseen pairs count as reward 0)."""
    return regularised_optimum(np.where(counts > 0, means, 0.0), pi_ref, eta, divergence)


def greedy_policy(counts: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Deterministic argmax of the plug-in estimate (ignores the regulariser)."""
    est = np.where(counts > 0, means, 0.0)
    pi = np.zeros_like(est)
    pi[np.arange(est.shape[0]), est.argmax(axis=1)] = 1.0
    return pi


def lcb_greedy_policy(counts: np.ndarray, means: np.ndarray,
                      bonus: Callable[[np.ndarray], np.ndarray] = hoeffding_bonus) -> np.ndarray:
    """Deterministic argmax of the lower confidence bound ``clip(r^ - b, 0, 1)`` (unseen pairs 0): pessimism
    without the regulariser."""
    est = pessimistic_reward(counts, means, bonus(counts))
    pi = np.zeros_like(est)
    pi[np.arange(est.shape[0]), est.argmax(axis=1)] = 1.0
    return pi


def log_log_slope(ns: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of log(values) against log(ns)."""
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])

"""hifo.problems.fdiv_bandits: the optimum is optimal, and the 1/n (eps^-1) rate of the paper on a small instance."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.fdiv_bandits import (concentrability, divergence_value, hoeffding_bonus, kl_pcb, log_log_slope,
                                        make_bandit, objective, plugin_policy, regularised_optimum, sample,
                                        statistics, suboptimality)

NS = np.array([500, 1000, 2000, 4000, 8000, 16000])
SEEDS = range(40)


def _mean_subopt(learner, divergence: str, kappa: float = 4.0) -> np.ndarray:
    out = []
    for n in NS:
        gaps = []
        for s in SEEDS:
            b = make_bandit(4, 5, 4.0, kappa, s, divergence)
            c, m = statistics(b.r.shape, *sample(b, int(n), 1000 + s))
            gaps.append(suboptimality(b, learner(b, c, m)))
        out.append(np.mean(gaps))
    return np.array(out)


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_regularised_optimum_beats_random_policies(divergence):
    b = make_bandit(3, 6, 2.0, 4.0, 7, divergence)
    best = objective(b, regularised_optimum(b.r, b.pi_ref, b.eta, divergence))
    rng = np.random.default_rng(0)
    for _ in range(200):
        pi = rng.dirichlet(np.ones(6), size=3)
        assert objective(b, pi) <= best + 1e-12
    assert suboptimality(b, b.pi_ref) > 0
    assert np.allclose(divergence_value(b.pi_ref, b.pi_ref, divergence), 0.0)


def test_kl_optimum_is_the_gibbs_policy_and_subopt_is_kl_over_eta():
    b = make_bandit(3, 4, 3.0, 2.0, 1)
    star = regularised_optimum(b.r, b.pi_ref, b.eta, "kl")
    gibbs = b.pi_ref * np.exp(b.eta * b.r)
    assert np.allclose(star, gibbs / gibbs.sum(axis=1, keepdims=True))
    pi = np.full((3, 4), 0.25)
    # J(pi*) - J(pi) = E_x KL(pi || pi*) / eta for the Gibbs optimum
    assert np.isclose(suboptimality(b, pi), b.rho @ divergence_value(pi, star, "kl") / b.eta)


def test_concentrability_is_controlled_by_kappa():
    for kappa in (1.0, 4.0, 16.0):
        c = concentrability(make_bandit(4, 5, 4.0, kappa, 0))
        assert kappa * 0.9 <= c <= kappa + 1e-9


def test_kl_pcb_has_the_one_over_n_rate():
    """Theorem (reverse KL, single-policy concentrability): suboptimality O~(eta C / n)."""
    gaps = _mean_subopt(lambda b, c, m: kl_pcb(c, m, b.pi_ref, b.eta, hoeffding_bonus), "kl")
    assert np.all(np.diff(gaps) < 0)
    assert -1.25 <= log_log_slope(NS, gaps) <= -0.8


def test_strongly_convex_f_plugin_has_the_one_over_n_rate():
    """Theorem (strongly convex f, here chi-square): O~(1/n) without pessimism."""
    gaps = _mean_subopt(lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, "chi2"), "chi2")
    assert -1.25 <= log_log_slope(NS, gaps) <= -0.8


def test_a_bonus_that_does_not_shrink_breaks_the_rate():
    """The rate test can fail: a bonus floored at 0.2 on every other action leaves a bias that never vanishes."""
    floor = lambda c: np.maximum(hoeffding_bonus(c), np.where(np.arange(c.shape[1]) % 2 == 0, 0.2, 0.0))  # noqa: E731
    gaps = _mean_subopt(lambda b, c, m: kl_pcb(c, m, b.pi_ref, b.eta, floor), "kl")
    assert log_log_slope(NS[3:], gaps[3:]) > -0.5

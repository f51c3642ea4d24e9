"""hifo.problems.fdiv_bandits: the optimum is optimal, and the 1/n (eps^-1) rate of the paper on a small instance."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.fdiv_bandits import (concentrability, divergence_value, hoeffding_bonus, kl_pcb, lcb_greedy_policy,
                                        log_log_slope, make_bandit, objective, pessimistic_policy, plugin_policy,
                                        regularised_optimum, sample, statistics, suboptimality)

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


@pytest.mark.parametrize("divergence", ["kl", "chi2"])
def test_starved_coverage_has_the_same_concentrability_and_starves_the_off_mode_actions(divergence):
    for kappa in (4.0, 16.0):
        covered = make_bandit(4, 5, 10.0, kappa, 3, divergence)
        starved = make_bandit(4, 5, 10.0, kappa, 3, divergence, coverage="starved")
        assert np.array_equal(covered.r, starved.r) and np.array_equal(covered.pi_ref, starved.pi_ref)
        assert np.isclose(concentrability(starved), kappa) and concentrability(covered) <= kappa + 1e-9
        assert np.allclose(starved.mu.sum(axis=1), 1.0) and np.all(starved.mu >= 0)
        star = regularised_optimum(starved.r, starved.pi_ref, 10.0, divergence)
        off = np.ones_like(star, dtype=bool)
        off[np.arange(4), star.argmax(axis=1)] = False
        assert np.allclose(starved.mu[off], star[off] / kappa)
        assert starved.mu[off].sum() < covered.mu[off].sum()  # the spare mass no longer goes off the mode


def _n_subopt(learner, divergence: str, n: int, seeds=range(40)) -> np.ndarray:
    out = []
    for s in seeds:
        b = make_bandit(4, 5, 10.0, 4.0, s, divergence, coverage="starved")
        c, m = statistics(b.r.shape, *sample(b, n, 1000 + s))
        out.append(n * suboptimality(b, learner(b, c, m)))
    return np.array(out)


def test_pessimism_is_needed_for_reverse_kl_but_not_for_strongly_convex_f():
    """The paper's separation, on starved data at C* = 4, eta = 10, n = 8000 (40 bandits): for reverse KL the
    pessimistic learner's 90th percentile of n * subopt is far below the plug-in learner's; for chi-square
    (strongly convex f) the plug-in learner needs no pessimism and beats the pessimistic one."""
    def q90(learner, divergence):
        return np.quantile(_n_subopt(learner, divergence, 8000), 0.9)

    pes = lambda div: lambda b, c, m: pessimistic_policy(c, m, b.pi_ref, b.eta, div)  # noqa: E731
    plug = lambda div: lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, div)  # noqa: E731
    assert q90(pes("kl"), "kl") < 0.5 * q90(plug("kl"), "kl")
    assert q90(plug("chi2"), "chi2") < q90(pes("chi2"), "chi2")


def test_pessimistic_policy_is_kl_pcb_for_kl_and_lcb_greedy_is_deterministic():
    b = make_bandit(4, 5, 10.0, 4.0, 0, coverage="starved")
    c, m = statistics(b.r.shape, *sample(b, 500, 1))
    assert np.allclose(pessimistic_policy(c, m, b.pi_ref, b.eta, "kl"), kl_pcb(c, m, b.pi_ref, b.eta))
    pi = lcb_greedy_policy(c, m)
    assert np.all(pi.sum(axis=1) == 1) and set(np.unique(pi)) <= {0.0, 1.0}

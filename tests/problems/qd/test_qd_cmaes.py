"""CMA-ES (Hansen's tutorial) and the emitters' rankings."""

import numpy as np

from hifo.problems.qd import CMAEvolutionStrategy, rank_improvement, rank_two_stage_improvement


def _minimise(n, seed, gens):
    es = CMAEvolutionStrategy(n, sigma0=1.0, seed=seed)
    es.reset(np.full(n, 3.0))
    for _ in range(gens):
        x = es.ask()
        f = np.sum(x**2, axis=1)
        es.tell(np.argsort(f), es.batch_size // 2)
    return es


def test_cmaes_converges_on_the_sphere_and_is_seeded():
    es = _minimise(10, seed=0, gens=250)
    assert np.linalg.norm(es.mean) < 1e-6  # linear convergence on the sphere
    assert es.condition_number < 10  # C stays close to isotropic on an isotropic function
    es2 = _minimise(10, seed=0, gens=250)
    np.testing.assert_array_equal(es.mean, es2.mean)


def test_cmaes_learns_the_inverse_hessian_of_an_ellipsoid():
    n = 6
    scales = 10.0 ** np.arange(n)  # Hessian diag(1 .. 1e5): condition number 1e5
    es = CMAEvolutionStrategy(n, sigma0=1.0, seed=1)
    es.reset(np.ones(n))
    for _ in range(400):
        x = es.ask()
        es.tell(np.argsort(np.sum(scales * x**2, axis=1)), es.batch_size // 2)
    assert np.sum(scales * es.mean**2) < 1e-12
    # C approaches a multiple of the inverse Hessian (the tutorial's central claim):
    # its condition number is ~1e5 and log10 diag(C) falls by ~1 per coordinate.
    assert 1e4 < es.condition_number < 1e6
    slope = np.polyfit(np.arange(n), np.log10(np.diag(es.cov)), 1)[0]
    assert -1.2 < slope < -0.8


def test_rankings():
    status = np.array([0, 2, 1, 2, 0, 1])
    value = np.array([-0.1, 0.3, 0.9, 0.5, 0.2, 0.4])
    assert rank_improvement(status, value).tolist() == [2, 3, 5, 1, 4, 0]
    # CMA-ME: new cells first (by value), then improvements, then the rest
    assert rank_two_stage_improvement(status, value).tolist() == [3, 1, 2, 5, 4, 0]

"""hifo.problems.qd: the pyribs-compatible CMA-ES update matches pyribs 0.12 step by step."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.qd import CMAEvolutionStrategy


def _drive(ours, theirs, n, steps, rng):
    """Feed both optimizers the same batches and rankings; yield after every tell."""
    for _ in range(steps):
        ours._update_eigensystem()
        theirs.cov.update_eigensystem(theirs.current_eval, theirs.lazy_gap_evals)
        # the same batch for both, drawn around the (shared) current mean
        X = ours.mean + ours.sigma * rng.standard_normal((ours.batch_size, n))
        ours._solutions, theirs._solutions = X.copy(), X.copy()
        ranking = np.argsort(np.sum(X**2, axis=1))
        parents = int(rng.integers(1, ours.batch_size // 2 + 1))
        ours.tell(ranking, parents)
        theirs.tell(ranking, np.sum(X**2, axis=1)[ranking], parents)
        yield


def test_pyribs_mode_matches_pyribs_and_hansen_mode_does_not():
    import ribs.emitters.opt as opt  # in the test extra: CI runs this check
    n, lam = 6, 12
    rng = np.random.default_rng(0)
    ours = CMAEvolutionStrategy(n, sigma0=0.5, batch_size=lam, seed=1, update="pyribs")
    theirs = opt.CMAEvolutionStrategy(sigma0=0.5, solution_dim=n, batch_size=lam, seed=1,
                                      dtype=np.float64)  # pyribs 0.12's signature
    x0 = rng.standard_normal(n)
    ours.reset(x0)
    theirs.reset(x0)
    for _ in _drive(ours, theirs, n, 40, rng):
        np.testing.assert_allclose(ours.mean, theirs.mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.pc, theirs.pc, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(ours.cov, theirs.cov.cov, rtol=1e-8, atol=1e-12)
        assert ours.sigma == pytest.approx(theirs.sigma, rel=1e-9)
    # Hansen's update (the default) is a different algorithm: it drifts away from pyribs's
    hansen = CMAEvolutionStrategy(n, sigma0=0.5, batch_size=lam, seed=1)
    theirs.reset(x0)
    hansen.reset(x0)
    rng = np.random.default_rng(0)
    for _ in _drive(hansen, theirs, n, 40, rng):
        pass
    assert not np.allclose(hansen.cov, theirs.cov.cov, rtol=1e-3)


def test_unknown_update_refused():
    with pytest.raises(ValueError):
        CMAEvolutionStrategy(3, sigma0=1.0, update="other")

"""The ask/tell loop: CMA-MAE(alpha=1) is CMA-ME, seeds reproduce runs, DMS explores further."""

import numpy as np
import pytest

from hifo.problems.qd import LinearProjection, PlanarArm, QDConfig, QDSearch, cvt_centroids, paper_config


def small(algorithm, **kw):
    return QDConfig(algorithm=algorithm, num_emitters=3, batch_size=12, grid_dims=(20, 20), **kw)


def test_cma_mae_with_learning_rate_one_is_cma_me():
    """CMA-MAE paper, Theorem 4.2: alpha = 1 and a very low threshold_min give CMA-ME (two-stage
    improvement ranking on a MAP-Elites archive) -- here step for step, in batch mode."""
    d = LinearProjection("sphere", solution_dim=20, measure_dim=2)
    me = QDSearch(d, small("cma_me", ranker="2imp", threshold_min=-np.inf), seed=3)
    mae = QDSearch(d, small("cma_mae", learning_rate=1.0, threshold_min=-1e6), seed=3)
    for _ in range(150):
        me.step()
        mae.step()
    np.testing.assert_array_equal(me.result_archive.occupied, mae.result_archive.occupied)
    np.testing.assert_array_equal(me.result_archive.objectives, mae.result_archive.objectives)
    np.testing.assert_array_equal(mae.archive.thresholds[mae.archive.occupied],
                                  mae.archive.objectives[mae.archive.occupied])
    for a, b in zip(me.emitters, mae.emitters):
        np.testing.assert_array_equal(a.opt.mean, b.opt.mean)
        assert a.opt.sigma == b.opt.sigma
    assert me.result_archive.coverage > 0.1


def test_cma_mae_with_small_learning_rate_differs_from_cma_me():
    d = LinearProjection("sphere", solution_dim=20, measure_dim=2)
    me = QDSearch(d, small("cma_me", ranker="2imp", threshold_min=-np.inf), seed=3)
    mae = QDSearch(d, small("cma_mae", learning_rate=0.01), seed=3)
    me.run(60)
    mae.run(60)
    assert not np.array_equal(me.result_archive.occupied, mae.result_archive.occupied)


@pytest.mark.parametrize("algorithm", ["cma_mae", "dms"])
def test_runs_reproduce_with_a_seed(algorithm):
    d = LinearProjection("rastrigin", solution_dim=30, measure_dim=2)
    runs = [QDSearch(d, small(algorithm), seed=s) for s in (7, 7, 8)]
    hist = [r.run(25, log_every=5) for r in runs]
    strip = [[{k: v for k, v in h.items() if k != "cpu_s"} for h in hs] for hs in hist]
    assert strip[0] == strip[1]
    np.testing.assert_array_equal(runs[0].result_archive.solutions, runs[1].result_archive.solutions)
    assert strip[0] != strip[2]


def test_result_archive_qd_score_never_decreases():
    d = PlanarArm(solution_dim=12)
    s = QDSearch(d, small("dms", learning_rate=0.001, sigma0=0.2), seed=0)
    hist = s.run(40, log_every=2)
    qd = [h["qd_score"] for h in hist]
    assert all(b >= a for a, b in zip(qd, qd[1:])) and qd[-1] > qd[0]


def test_paper_config():
    lp10 = LinearProjection("sphere", 100, 10)
    cfg = paper_config("dms", lp10, cvt_cells=200)
    assert (cfg.num_emitters, cfg.batch_size, cfg.alpha, cfg.restart_rule) == (15, 36, 0.1, 100)
    assert cfg.centroids.shape == (200, 10) and cfg.discount.hidden == (128, 128)
    mae2 = paper_config("cma_mae", LinearProjection("flat", 100, 2))
    assert (mae2.alpha, mae2.grid_dims, mae2.restart_rule, mae2.threshold_min) == (0.01, (100, 100), "basic", 0.0)
    assert paper_config("dms", PlanarArm()).alpha == 0.001


@pytest.mark.slow
def test_dms_explores_further_than_cma_mae_in_ten_dimensional_measures():
    """The paper's claim (Section 6): in a 10-D measure space CMA-MAE's histogram stalls while
    DMS keeps covering new cells. Small budget: 5 emitters x 36 x 80 iterations, 2,000 cells."""
    d = LinearProjection("sphere", solution_dim=100, measure_dim=10)
    lo, hi = d.measure_bounds
    cent = cvt_centroids(2000, np.stack([lo, hi], 1), samples=20000, iterations=10, seed=0)
    out = {}
    for alg in ("cma_mae", "dms"):
        s = QDSearch(d, QDConfig(algorithm=alg, num_emitters=5, centroids=cent, restart_rule=100), seed=0)
        out[alg] = s.run(80)[-1]
    assert out["dms"]["qd_score"] > 3 * out["cma_mae"]["qd_score"]
    assert out["dms"]["coverage"] > 3 * out["cma_mae"]["coverage"]

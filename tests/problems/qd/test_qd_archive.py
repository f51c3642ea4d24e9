"""Archives: cell lookup, MAP-Elites insertion and CMA-MAE threshold arithmetic by hand."""

import math

import numpy as np
import pytest

from hifo.problems.qd import CVTArchive, GridArchive, cvt_centroids, nearest_centroid


def grid(**kw):
    # 4 x 2 cells over [0, 4) x [-1, 1): cell (i, j) has index 2 i + j (row-major)
    return GridArchive(solution_dim=1, dims=(4, 2), ranges=[(0, 4), (-1, 1)], **kw)


def test_grid_index_hand_computed():
    a = grid()
    m = np.array([[0.5, -0.5], [3.99, 0.99], [4.0, 1.0], [-5.0, 0.0], [1.0, 0.0], [2.5, -1.0]])
    assert a.grid_index_of(m).tolist() == [[0, 0], [3, 1], [3, 1], [0, 1], [1, 1], [2, 0]]
    assert a.index_of(m).tolist() == [0, 7, 7, 1, 3, 4]
    np.testing.assert_allclose(a.cell_centers(np.array([0, 7, 3])), [[0.5, -0.5], [3.5, 0.5], [1.5, 0.5]])


def test_map_elites_insertion_status_and_value():
    a = grid()  # learning_rate 1, threshold_min -inf: MAP-Elites / CMA-ME
    info = a.add([[0.0]], [0.4], [[0.5, -0.5]])
    assert info["status"].tolist() == [2] and info["value"].tolist() == [0.4]  # new cell: value f
    info = a.add([[1.0], [2.0]], [0.7, 0.1], [[0.6, -0.6], [0.7, -0.7]])
    assert info["status"].tolist() == [1, 0]
    np.testing.assert_allclose(info["value"], [0.3, -0.3])  # against the elite before the batch
    assert a.objectives[0] == 0.7 and a.solutions[0, 0] == 1.0 and a.thresholds[0] == 0.7
    assert len(a) == 1 and a.coverage == 1 / 8 and a.qd_score == pytest.approx(0.7)


def test_cma_mae_threshold_arithmetic():
    a = grid(learning_rate=0.1, threshold_min=0.0)
    info = a.add([[0.0]], [0.5], [[0.5, -0.5]])
    assert info["status"].tolist() == [2] and info["value"][0] == pytest.approx(0.5)
    assert a.thresholds[0] == pytest.approx(0.9 * 0.0 + 0.1 * 0.5)  # 0.05
    # A worse solution above the threshold replaces the elite (annealing), value f - t.
    info = a.add([[1.0]], [0.3], [[0.5, -0.5]])
    assert info["status"].tolist() == [1] and info["value"][0] == pytest.approx(0.25)
    assert a.objectives[0] == 0.3 and a.thresholds[0] == pytest.approx(0.9 * 0.05 + 0.1 * 0.3)  # 0.075
    info = a.add([[2.0]], [0.06], [[0.5, -0.5]])
    assert info["status"].tolist() == [0] and info["value"][0] == pytest.approx(-0.015)
    assert a.objectives[0] == 0.3


def test_cma_mae_batch_threshold_rule():
    a = grid(learning_rate=0.1, threshold_min=0.0)
    a.add([[0.0]], [0.5], [[0.5, -0.5]])  # t = 0.05
    info = a.add([[1.0], [2.0], [3.0]], [0.4, 0.6, 0.01], [[0.5, -0.5]] * 3)
    np.testing.assert_allclose(info["value"], [0.35, 0.55, -0.04])
    # k = 2 solutions beat t: t <- 0.9^2 t + (1 - 0.9^2) mean(0.4, 0.6)
    assert a.thresholds[0] == pytest.approx(0.81 * 0.05 + 0.19 * 0.5)
    assert a.objectives[0] == 0.6 and a.solutions[0, 0] == 2.0  # the best of them is the elite


def test_learning_rate_one_equals_map_elites_on_random_batches():
    rng = np.random.default_rng(0)
    me, mae = grid(), grid(learning_rate=1.0, threshold_min=-1e6)
    for _ in range(30):
        x = rng.normal(size=(16, 1))
        f = rng.random(16)
        m = rng.uniform([0, -1], [4, 1], size=(16, 2))
        a, b = me.add(x, f, m), mae.add(x, f, m)
        np.testing.assert_array_equal(a["status"], b["status"])
    np.testing.assert_array_equal(me.occupied, mae.occupied)
    np.testing.assert_array_equal(me.objectives, mae.objectives)
    np.testing.assert_array_equal(mae.thresholds[mae.occupied], mae.objectives[mae.occupied])


def test_invalid_settings_and_inputs():
    with pytest.raises(ValueError):
        grid(learning_rate=0.5)  # annealing needs a finite threshold_min
    with pytest.raises(ValueError):
        grid().add([[0.0]], [math.nan], [[0.5, 0.5]])


def test_qd_score_offset_and_stats():
    a = grid(learning_rate=0.5, threshold_min=0.0, qd_score_offset=-1.0)
    a.add([[0.0], [0.0]], [0.25, 0.5], [[0.5, -0.5], [3.5, 0.5]])
    s = a.stats()
    assert s["qd_score"] == pytest.approx(0.25 + 1 + 0.5 + 1)
    assert s["coverage"] == 0.25 and s["obj_max"] == 0.5 and s["num_elites"] == 2


def test_cvt_lookup_matches_distances_and_empty_centres():
    rng = np.random.default_rng(1)
    cent = rng.uniform(-3, 3, size=(300, 5))
    pts = rng.uniform(-4, 4, size=(257, 5))
    expected = np.argmin(((pts[:, None] - cent[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(nearest_centroid(pts, cent), expected)
    a = CVTArchive(solution_dim=2, centroids=cent, seed=0)
    np.testing.assert_array_equal(a.index_of(pts), expected)
    a.add(np.zeros((257, 2)), np.ones(257), pts)
    empty = a.empty_cell_centers(50)
    assert len(empty) == 50 and len({tuple(r) for r in empty}) == 50
    assert not a.occupied[a.index_of(empty)].any()  # each centre lies in its own, empty cell


def test_cvt_centroids_reproducible_and_in_range():
    c1 = cvt_centroids(64, [(-1, 1), (0, 2)], samples=4000, iterations=10, seed=3)
    c2 = cvt_centroids(64, [(-1, 1), (0, 2)], samples=4000, iterations=10, seed=3)
    np.testing.assert_array_equal(c1, c2)
    assert c1.shape == (64, 2) and np.all(c1 >= [-1, 0]) and np.all(c1 <= [1, 2])
    # Lloyd iterations spread the centroids: nearest-neighbour spacing is fairly uniform
    d = np.sqrt(((c1[:, None] - c1[None]) ** 2).sum(-1)) + np.eye(64) * 9
    nn = d.min(1)
    assert nn.min() > 0.3 * nn.mean()

"""Benchmark domains: the normalisations and measures the paper defines, checked by hand."""

import numpy as np
import pytest

from hifo.problems.qd import LinearProjection, PlanarArm, TrianglesDigits
from hifo.problems.qd._images import render_triangles


@pytest.mark.parametrize("objective", ["sphere", "rastrigin"])
def test_lp_objective_normalised_to_unit_interval(objective):
    d = LinearProjection(objective, solution_dim=100, measure_dim=2)
    f, _ = d.evaluate(np.stack([np.full(100, 2.048), np.full(100, -5.12)]))
    np.testing.assert_allclose(f, [1.0, 0.0], atol=1e-12)  # optimum -> 1, corner -> 0
    f_rand, _ = d.evaluate(np.random.default_rng(0).uniform(-5.12, 5.12, size=(64, 100)))
    assert np.all((f_rand > 0) & (f_rand < 1))


def test_lp_measures_are_clipped_block_sums():
    d = LinearProjection("flat", solution_dim=6, measure_dim=3)
    x = np.array([[1.0, 2.0, 10.24, -3.0, -20.48, 0.5]])
    f, m = d.evaluate(x)
    # 10.24 -> 5.12 / 10.24 = 0.5 and -20.48 -> -0.25 (the benchmark's clipping)
    np.testing.assert_allclose(m, [[3.0, 0.5 - 3.0, -0.25 + 0.5]])
    assert f.tolist() == [1.0]
    lo, hi = d.measure_bounds
    np.testing.assert_allclose(hi, [10.24] * 3)
    np.testing.assert_allclose(lo, -hi)


def test_lp_measure_dim_ten_uses_array_split_blocks():
    d = LinearProjection("sphere", solution_dim=100, measure_dim=10)
    x = np.arange(100, dtype=float)[None] / 100
    _, m = d.evaluate(x)
    np.testing.assert_allclose(m[0], [x[0, 10 * i:10 * i + 10].sum() for i in range(10)])
    assert d.measure_bounds[1][0] == pytest.approx(51.2)


def test_arm_end_effector_and_objective():
    arm = PlanarArm(solution_dim=4)
    theta = np.array([[0.0, 0.0, 0.0, 0.0], [np.pi / 2, 0.0, 0.0, 0.0], [0.0, np.pi / 2, np.pi / 2, 0.0]])
    f, m = arm.evaluate(theta)
    np.testing.assert_allclose(m, [[4.0, 0.0], [0.0, 4.0], [1.0 + 0.0 - 1.0 - 1.0, 0.0 + 1.0 + 0.0 + 0.0]], atol=1e-12)
    np.testing.assert_allclose(f, 1.0 - np.var(theta, axis=1))


def test_triangle_renderer_by_hand():
    # One opaque-ish white triangle covering the top-left half of a 4 x 4 canvas: vertices
    # (0,0), (3,0), (0,3) after min-max normalisation over the 2 triangles.
    tri = np.array([[0, 0, 1, 0, 0, 1, 1, 1],   # (x0 y0 x1 y1 x2 y2 grey alpha)
                    [1, 1, 0, 1, 1, 0, 0, 0]], dtype=float)
    img = render_triangles(tri.reshape(1, -1), n_triangles=2, h=4, w=4, alpha_scale=0.5)[0]
    # The second triangle has alpha 0 after normalisation: only the first paints, with a = 0.5.
    expected = np.array([[0.5 if i + j <= 3 else 0.0 for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(img, expected)


def test_triangles_digits_objective_is_one_minus_mse_to_nearest_image():
    imgs = np.random.default_rng(0).random((20, 64))
    dom = TrianglesDigits(n_triangles=4, num_centroids=5, images=imgs)
    x = np.random.default_rng(1).random((7, dom.solution_dim))
    f, m = dom.evaluate(x)
    mse = ((m[:, None] - dom.archive_centroids[None]) ** 2).mean(-1).min(1)
    np.testing.assert_allclose(f, 1 - mse)
    assert m.shape == (7, 64) and np.all((m >= 0) & (m <= 1))

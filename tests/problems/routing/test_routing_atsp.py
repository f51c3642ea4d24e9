"""hifo.problems.routing ATSP: MatNet's tmat generator and the TSPLIB ATSP reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hifo.problems.routing import (
    TMAT_SCALE,
    asymmetry,
    construct_tour,
    min_plus_closure,
    nearest_neighbour,
    random_tmat_instance,
    read_tsplib_atsp,
    shortest_path_closure,
    tmat_matrix,
    tour_length,
    triangle_violation,
)

ATSP_DATA = Path(__file__).resolve().parents[3] / "evaluators" / "data" / "routing"


@pytest.mark.parametrize("n", [1, 5, 20, 50])
def test_tmat_zero_diagonal_and_triangle_inequality(n):
    d = random_tmat_instance(n, seed=3).distance_matrix
    assert d.shape == (n, n) and np.all(np.diag(d) == 0)
    assert (d >= 0).all() and (d < 1).all()
    # closed under shortest paths: d[i, j] <= d[i, k] + d[k, j] for all i, j, k
    assert triangle_violation(d) <= 1e-12


def test_tmat_is_seeded_integral_and_asymmetric():
    a, b = random_tmat_instance(30, seed=7), random_tmat_instance(30, seed=7)
    assert np.array_equal(a.distance_matrix, b.distance_matrix)
    assert not np.array_equal(a.distance_matrix, random_tmat_instance(30, seed=8).distance_matrix)
    ints = np.rint(a.distance_matrix * TMAT_SCALE)
    assert np.array_equal(ints / TMAT_SCALE, a.distance_matrix)  # exact integers over 1e6
    assert asymmetry(a.distance_matrix) > 0.1 and asymmetry(np.ones((3, 3))) == 0.0


def test_floyd_warshall_equals_matnets_min_plus_loop():
    rng = np.random.default_rng(0)
    for n in (2, 6, 15):
        raw = rng.integers(0, 1000, size=(n, n))
        np.fill_diagonal(raw, 0)
        assert np.array_equal(shortest_path_closure(raw), min_plus_closure(raw))
    raw = np.array([[0, 10, 1], [1, 0, 10], [10, 1, 0]])
    assert shortest_path_closure(raw).tolist() == [[0, 2, 1], [1, 0, 2], [2, 1, 0]]


def test_tmat_matrix_closure_actually_shortens():
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 10**6, size=(20, 20))
    m = tmat_matrix(20, np.random.default_rng(5))
    np.fill_diagonal(raw, 0)
    assert (m <= raw).all() and (m < raw).any()


def test_read_br17_and_p43():
    br17 = read_tsplib_atsp(ATSP_DATA / "br17.atsp", optimum=39)
    d = br17.distance_matrix
    assert br17.n == 17 and br17.best_known == 39 and br17.coords is None
    assert np.all(np.diag(d) == 0)  # the 9999 placeholders are dropped
    assert d[0, 1] == 3 and d[0, 11] == 0 and d[1, 0] == 3 and d[2, 3] == 72
    p43 = read_tsplib_atsp(ATSP_DATA / "p43.atsp")
    assert p43.n == 43 and (p43.distance_matrix[~np.eye(43, dtype=bool)] == 0).any()
    assert asymmetry(read_tsplib_atsp(ATSP_DATA / "ftv33.atsp").distance_matrix) > 0


def test_read_atsp_rejects_malformed(tmp_path):
    f = tmp_path / "x.atsp"
    f.write_text("NAME: x\nTYPE: ATSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                 "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1 2\nEOF\n")
    with pytest.raises(ValueError, match="needs 4 weights"):
        read_tsplib_atsp(f)
    f.write_text("NAME: x\nTYPE: TSP\nDIMENSION: 1\nEDGE_WEIGHT_SECTION\n0\nEOF\n")
    with pytest.raises(ValueError, match="not ATSP"):
        read_tsplib_atsp(f)


def test_construction_uses_outbound_costs():
    d = np.array([[0, 5, 1], [1, 0, 5], [5, 1, 0]], dtype=float)
    tour = construct_tour(nearest_neighbour, d)
    assert tour.tolist() == [0, 2, 1] and tour_length(tour, d) == 3.0
    assert tour_length([0, 1, 2], d) == 15.0  # the other direction


def test_lkh_reaches_br17_optimum():
    import elkai  # noqa: F401  (in the test extra)
    from hifo.problems.routing import lkh_tour

    inst = read_tsplib_atsp(ATSP_DATA / "br17.atsp")
    assert tour_length(lkh_tour(inst.distance_matrix, runs=3, scale=1), inst.distance_matrix) == 39

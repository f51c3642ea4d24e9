"""hifo.problems.routing local search and guided local search (EoH's TSP-GLS)."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.routing import (
    InvalidGuide,
    eoh_penalty_update,
    guided_local_search,
    local_search,
    nearest_neighbour_tour,
    node_moves,
    random_tmat_instance,
    random_uniform_instance,
    tour_length,
    validate_tour,
)
from hifo.problems.routing._local_search import (
    apply_relocate,
    apply_two_opt,
    best_relocate,
    best_two_opt,
    relocate_deltas,
    two_opt_deltas,
)


def _no_guidance(edge_distance, local_opt_tour, edge_n_used):
    return edge_distance


def test_move_deltas_equal_the_change_in_length():
    rng = np.random.default_rng(1)
    sym = random_uniform_instance(12, seed=2).distance_matrix
    asym = random_tmat_instance(12, seed=2).distance_matrix
    tour = rng.permutation(12)
    for d, ops in ((sym, ("two_opt", "relocate")), (asym, ("relocate",))):
        base = tour_length(tour, d)
        for op in ops:
            deltas = two_opt_deltas(tour, d) if op == "two_opt" else relocate_deltas(tour, d)
            apply = apply_two_opt if op == "two_opt" else apply_relocate
            valid = np.argwhere(np.isfinite(deltas))
            assert len(valid) > 20
            for i, j in valid:
                new = apply(tour, i, j)
                validate_tour(new, 12)
                assert tour_length(new, d) - base == pytest.approx(deltas[i, j], abs=1e-12)


def test_local_search_ends_in_a_local_optimum():
    d = random_uniform_instance(60, seed=4).distance_matrix
    start = nearest_neighbour_tour(d)
    tour, moves = local_search(start, d)
    assert moves > 0 and tour_length(tour, d) < tour_length(start, d)
    assert best_two_opt(tour, d)[0] > -1e-9 and best_relocate(tour, d)[0] > -1e-9
    assert np.array_equal(start, nearest_neighbour_tour(d))  # input untouched


def test_node_moves_only_improve_under_the_given_matrix():
    d = random_uniform_instance(30, seed=5).distance_matrix
    tour = np.random.default_rng(0).permutation(30)
    for node in range(30):
        new = node_moves(tour, d, node)
        assert tour_length(new, d) <= tour_length(tour, d) + 1e-12
        tour = new


def test_gls_escapes_local_optima():
    """GLS's point: with penalties it finds tours shorter than the local-search optimum;
    without guidance it stays there."""
    d = random_uniform_instance(80, seed=11).distance_matrix
    ls_len = tour_length(local_search(nearest_neighbour_tour(d), d)[0], d)
    plain = guided_local_search(d, _no_guidance, iterations=10)
    guided = guided_local_search(d, eoh_penalty_update, iterations=40)
    assert plain.length == pytest.approx(ls_len)
    assert guided.length < ls_len - 1e-9
    assert guided.length == pytest.approx(tour_length(guided.tour, d))
    assert guided.history == sorted(guided.history, reverse=True) and len(guided.history) == 40


def test_gls_is_deterministic_and_hook_gets_copies():
    d = random_uniform_instance(40, seed=3).distance_matrix

    def vandal(edge_distance, local_opt_tour, edge_n_used):
        out = eoh_penalty_update(edge_distance, local_opt_tour, edge_n_used)
        edge_distance[:] = 0  # must not reach the algorithm's own matrix
        local_opt_tour[:] = 0
        edge_n_used[:] = 99
        return out

    a = guided_local_search(d, eoh_penalty_update, iterations=15)
    b = guided_local_search(d, vandal, iterations=15)
    assert np.array_equal(a.tour, b.tour) and a.length == b.length


@pytest.mark.parametrize("bad, reason", [
    (lambda e, t, u: e[:-1], "shape"),
    (lambda e, t, u: e * np.nan, "NaN"),
    (lambda e, t, u: "x", "array of numbers"),
])
def test_gls_rejects_malformed_guides(bad, reason):
    d = random_uniform_instance(10, seed=1).distance_matrix
    with pytest.raises(InvalidGuide, match=reason):
        guided_local_search(d, bad, iterations=2)


def test_gls_needs_a_symmetric_matrix():
    with pytest.raises(ValueError, match="symmetric"):
        guided_local_search(random_tmat_instance(10, seed=1).distance_matrix, eoh_penalty_update)

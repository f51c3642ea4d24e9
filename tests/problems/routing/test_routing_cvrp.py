"""hifo.problems.routing ACVRP: RADAR-style instances, route checks, construction loop."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.routing import (
    RADAR_CAPACITY,
    CVRPInstance,
    InvalidChoice,
    InvalidRoutes,
    construct_routes,
    nearest_feasible,
    random_acvrp_instance,
    routes_cost,
    triangle_violation,
    validate_routes,
)


def _tiny(capacity: int = 9) -> CVRPInstance:
    d = np.array([[0, 1, 2, 3], [4, 0, 1, 2], [3, 4, 0, 1], [2, 3, 4, 0]], dtype=float)
    return CVRPInstance("tiny", d, np.array([0, 3, 4, 5]), capacity=capacity)


def test_radar_instances():
    inst = random_acvrp_instance(50, seed=2)
    assert inst.n == 50 and inst.capacity == RADAR_CAPACITY[50] == 30
    assert inst.demands[0] == 0 and inst.demands[1:].min() >= 1 and inst.demands[1:].max() <= 9
    assert inst.distance_matrix.shape == (51, 51) and triangle_violation(inst.distance_matrix) <= 1e-12
    assert random_acvrp_instance(100, seed=2).capacity == 50
    again = random_acvrp_instance(50, seed=2)
    assert np.array_equal(inst.demands, again.demands)


def test_costs_are_directed():
    inst = _tiny(capacity=12)
    assert routes_cost([[1, 2, 3]], inst) == 1 + 1 + 1 + 2
    assert routes_cost([[3, 2, 1]], inst) == 3 + 4 + 4 + 4
    assert routes_cost([[1], [2, 3]], inst) == (1 + 4) + (2 + 1 + 2)


@pytest.mark.parametrize("routes, reason", [
    ([[1, 2, 3]], "carries 12 > capacity 9"),
    ([[1, 2], [2, 3]], "served 2 times"),
    ([[1, 2]], "not served"),
    ([[0, 1], [2, 3]], "outside the customers"),
    ([[1, 4], [2, 3]], "outside the customers"),
    ([[1], [], [2, 3]], "empty"),
    ([[1.0], [2, 3]], "integers"),
    ([[True], [2, 3]], "integers"),
    ("1 2 3", "list of routes"),
    ([1, 2, 3], "route 0 must be a list"),
])
def test_validate_routes_rejects(routes, reason):
    with pytest.raises(InvalidRoutes, match=reason):
        validate_routes(routes, _tiny())


def test_nearest_feasible_respects_capacity():
    inst = random_acvrp_instance(50, seed=9)
    routes = construct_routes(nearest_feasible, inst)
    validate_routes(routes, inst)
    loads = [int(inst.demands[r].sum()) for r in routes]
    assert max(loads) <= inst.capacity and sum(loads) == int(inst.demands.sum())
    assert len(routes) >= int(np.ceil(inst.demands.sum() / inst.capacity))


def test_construction_checks_choices():
    inst = _tiny()
    with pytest.raises(InvalidChoice, match="already at the depot"):
        construct_routes(lambda c, dep, u, r, q, d: dep, inst)
    with pytest.raises(InvalidChoice, match="not one of unvisited_nodes"):
        construct_routes(lambda c, dep, u, r, q, d: 7, inst)
    seen = []

    def one_per_route(c, dep, u, r, q, d):
        seen.append((c, r, list(u)))
        return dep if c != dep else int(u[0])

    routes = construct_routes(one_per_route, inst)
    assert routes == [[1], [2, 3]]  # the last customer is appended without a call
    assert seen[0] == (0, 9, [1, 2, 3])  # ordered by cost from the depot
    # after serving 1 (demand 3): rest 6, all of 2, 3 still fit
    assert seen[1] == (1, 6, [2, 3])


def test_pyvrp_reference_beats_nearest_neighbour():
    import pyvrp  # noqa: F401  (in the test extra: CI runs this check)
    from hifo.problems.routing import pyvrp_acvrp

    inst = random_acvrp_instance(20, seed=4)
    routes = pyvrp_acvrp(inst, seconds=0.3)
    assert routes_cost(routes, inst) < routes_cost(construct_routes(nearest_feasible, inst), inst)

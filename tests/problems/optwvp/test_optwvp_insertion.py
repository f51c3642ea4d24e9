"""Insertion candidates (Savelsbergh MaxShift bookkeeping) and the greedy constructor."""

import numpy as np
import pytest

from hifo.problems.optwvp import (
    InfeasibleRoute,
    check_route,
    check_schedule,
    construct_route,
    density_scorer,
    generate_instance,
    insertion_candidates,
    route_profit,
)


def _feasible(inst, route, service=None):
    try:
        check_schedule(inst, route, np.zeros(len(route)) if service is None else service)
        return True
    except InfeasibleRoute:
        return False


@pytest.mark.parametrize("seed", range(3))
def test_candidates_are_exactly_the_feasible_insertions(seed):
    inst = generate_instance(50, 600 + seed)
    route, _ = construct_route(inst, density_scorer, max_steps=4)
    cand = insertion_candidates(inst, route)
    listed = set(zip(cand["node"].tolist(), cand["position"].tolist()))
    for u in np.flatnonzero(inst.reachable):
        if u in route:
            continue
        for p in range(len(route) + 1):
            trial = route[:p] + [int(u)] + route[p:]
            assert ((int(u), p) in listed) == _feasible(inst, trial), (u, p)


def test_service_room_is_the_longest_feasible_service_of_the_newcomer():
    inst = generate_instance(50, 610)
    route, _ = construct_route(inst, density_scorer, max_steps=5)
    cand = insertion_candidates(inst, route)
    for j in range(0, len(cand["node"]), max(1, len(cand["node"]) // 15)):
        u, p, room = int(cand["node"][j]), int(cand["position"][j]), cand["service_room"][j]
        trial = route[:p] + [u] + route[p:]
        d = np.zeros(len(trial))
        d[p] = room
        assert _feasible(inst, trial, d)
        if room < inst.max_service[u] - 1e-6:
            d[p] = room + 1e-3
            assert not _feasible(inst, trial, d)


def test_constructor_returns_its_best_prefix_and_honours_vetoes():
    inst = generate_instance(100, 620)
    route, profit = construct_route(inst, density_scorer)
    check_route(inst, route)
    assert profit == pytest.approx(route_profit(inst, route)) and profit > 0
    # a rule that vetoes everything builds nothing
    assert construct_route(inst, lambda **kw: np.full(len(kw["node"]), -np.inf)) == ([], 0.0)
    # a rule that only accepts node 1's candidates can only build [1] or nothing
    only = construct_route(inst, lambda node, **kw: np.where(node == 1, 1.0, np.nan))[0]
    assert only in ([], [1])


def test_constructor_rejects_malformed_scores():
    inst = generate_instance(20, 630)
    with pytest.raises(ValueError, match="shape"):
        construct_route(inst, lambda **kw: np.zeros(3 + len(kw["node"])))

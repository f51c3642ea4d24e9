"""Stage 2: the STO procedure is globally optimal (equals the LP optimum) — DeCoST §4.2."""

import numpy as np
import pytest

from hifo.problems.optwvp import (
    InfeasibleRoute,
    OPTWVPInstance,
    check_route,
    check_schedule,
    generate_instance,
    optimal_profit_batch,
    optimal_service_fast,
    optimal_service_lp,
    routes_optimal,
)


def random_feasible_route(inst, rng):
    """Customers appended in a noisy window order while the route stays feasible."""
    cand = np.flatnonzero(inst.reachable)
    order = cand[np.argsort(inst.tw_open[cand] + rng.normal(0, 30, len(cand)))]
    route = []
    for v in order:
        try:
            check_route(inst, route + [int(v)])
            route.append(int(v))
        except InfeasibleRoute:
            pass
    return route


def random_general_instance(rng, n=12):
    """Windows of random widths anywhere in the horizon: not the generator's structure."""
    coords = rng.random((n, 2)) * 100
    e = np.concatenate(([0.0], rng.random(n - 1) * 400 - 50))
    width = np.concatenate(([0.0], rng.random(n - 1) * 150))
    T = float(rng.uniform(300, 700))
    l = e + width
    l[0] = T
    return OPTWVPInstance(name="general", coords=coords, profit=np.concatenate(([0.0], rng.random(n - 1) * 10)),
                          tw_open=e, tw_close=l, horizon=T)


@pytest.mark.parametrize("kind", ["generator", "general"])
def test_fast_procedure_equals_the_lp_optimum_on_many_random_routes(kind):
    rng = np.random.default_rng(123)
    checked = 0
    for trial in range(120):
        inst = generate_instance(int(rng.choice([20, 50])), 9000 + trial) if kind == "generator" \
            else random_general_instance(rng)
        route = random_feasible_route(inst, rng)
        if len(route) < 2:
            continue
        d_fast, p_fast = optimal_service_fast(inst, route)
        _, p_lp = optimal_service_lp(inst, route)
        assert p_fast == pytest.approx(p_lp, rel=1e-7, abs=1e-6), (trial, route)
        assert check_schedule(inst, route, d_fast) == pytest.approx(p_fast)
        checked += 1
    assert checked >= 100


def test_batched_procedure_matches_single_routes():
    rng = np.random.default_rng(5)
    inst = generate_instance(100, 77)
    routes = [random_feasible_route(inst, rng) for _ in range(12)]
    service, prof = routes_optimal(inst, routes)
    for r, d, p in zip(routes, service, prof):
        d1, p1 = optimal_service_fast(inst, r)
        assert np.allclose(d, d1) and p == pytest.approx(p1)


def test_serving_by_decreasing_rate_beats_route_order():
    """The greedy order matters: the same procedure in route order is not optimal."""
    rng = np.random.default_rng(11)
    worse = 0
    for trial in range(40):
        inst = generate_instance(50, 9500 + trial)
        route = random_feasible_route(inst, rng)
        if len(route) < 3:
            continue
        r = np.asarray(route)
        path = np.concatenate(([0], r, [0]))
        legs = inst.travel[path[:-1], path[1:]]
        args = [inst.tw_open[r][None], inst.tw_close[r][None], inst.max_service[r][None], legs[None], inst.horizon]
        # feeding rates that decrease along the route makes the procedure serve in route order
        d_order, _ = optimal_profit_batch(np.arange(len(r), 0, -1, dtype=float)[None], *args)
        p_order = float(inst.profit[r] @ d_order[0])
        p_opt = optimal_service_fast(inst, route)[1]
        assert p_order <= p_opt + 1e-6
        worse += p_order < p_opt - 1e-6
    assert worse > 5

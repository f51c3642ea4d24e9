"""TOPTWVP (the team variant): the two-index MILP with ``vehicles=m`` is exact (it equals the
best set of disjoint routes found by enumeration), and the heuristics return valid teams."""

import numpy as np
import pytest

from hifo.problems.optwvp import (
    InfeasibleRoute,
    brute_force,
    brute_force_team,
    check_team,
    construct_route,
    construct_team,
    density_scorer,
    generate_instance,
    solve_milp,
    team_ils,
    team_profit,
)


def tiny(seed):
    # 7 customers and a horizon at which one vehicle cannot serve them all
    return generate_instance(8, seed, horizon=350.0)


@pytest.mark.parametrize("seed", [1, 3, 4])
def test_team_milp_equals_enumeration(seed):
    inst = tiny(seed)
    res = solve_milp(inst, vehicles=2)
    _, best = brute_force_team(inst, 2)
    assert res["optimal"]
    assert res["profit"] == pytest.approx(best, rel=1e-6, abs=1e-6)
    routes = check_team(inst, res["routes"], 2)
    assert team_profit(inst, routes) == pytest.approx(res["profit"], rel=1e-9)
    # a second vehicle never hurts, and on these instances it helps
    assert res["profit"] > brute_force(inst)[1] + 1e-6


def test_one_vehicle_team_is_the_single_vehicle_problem():
    inst = generate_instance(20, 7)
    assert solve_milp(inst, vehicles=1)["profit"] == pytest.approx(solve_milp(inst)["profit"])
    team, prof = construct_team(inst, 1, density_scorer)
    route, single = construct_route(inst, density_scorer)
    assert team == [route] and prof == pytest.approx(single)


def test_heuristic_teams_are_valid_and_bounded_by_the_optimum():
    inst = generate_instance(20, 11)
    opt = solve_milp(inst, vehicles=2)["profit"]
    for routes, prof in (construct_team(inst, 2, density_scorer), team_ils(inst, 2, max_no_improve=10)):
        check_team(inst, routes, 2)
        assert prof == pytest.approx(team_profit(inst, routes))
        assert prof <= opt + 1e-6


def test_check_team_rejects_shared_customers_and_extra_routes():
    inst = tiny(4)
    r, _ = brute_force(inst)
    with pytest.raises(InfeasibleRoute, match="two routes"):
        check_team(inst, [r, r[:1]], 2)
    with pytest.raises(InfeasibleRoute, match="3 routes for 2"):
        check_team(inst, [[r[0]], [], []], 2)
    assert np.array_equal(check_team(inst, [r], 2)[0], r)


def test_joint_construction_with_one_vehicle_is_construct_route():
    from hifo.problems.optwvp import construct_team_joint

    for seed in (0, 1):
        inst = generate_instance(50, seed)
        single = construct_route(inst, density_scorer)
        joint = construct_team_joint(inst, 1, lambda vehicle, vehicles, **kw: density_scorer(**kw))
        assert joint[0] == [single[0]] and joint[1] == pytest.approx(single[1], rel=1e-12)


def test_joint_construction_sees_every_route_and_returns_a_valid_team():
    from hifo.problems.optwvp import TEAM_FIELDS, construct_team_joint, team_candidates

    inst = generate_instance(50, 3)
    seen = []

    def rule(node, position, vehicle, vehicles, time_left, horizon, **kw):
        seen.append((set(vehicle.tolist()), vehicles))
        assert len(time_left) == len(node) and np.all(time_left <= horizon + 1e-9)
        return -kw["added_travel"]

    routes, prof = construct_team_joint(inst, 3, rule)
    check_team(inst, routes, 3)
    assert prof == pytest.approx(team_profit(inst, routes)) and prof > 0
    assert seen[0] == ({0, 1, 2}, 3)  # the first step offers every customer on every route
    cand = team_candidates(inst, [routes[0], [], []], np.isin(np.arange(inst.n), routes[0]))
    assert set(cand) == set(TEAM_FIELDS) and not np.isin(cand["node"], routes[0]).any()
    with pytest.raises(ValueError, match="shape"):
        construct_team_joint(inst, 2, lambda **kw: np.zeros(1))

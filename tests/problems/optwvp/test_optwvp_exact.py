"""The exact MILP against brute force, and the heuristics against the MILP."""

import numpy as np
import pytest

from hifo.problems.optwvp import (
    OPTWVPInstance,
    brute_force,
    check_schedule,
    construct_route,
    density_scorer,
    generate_instance,
    iterated_local_search,
    solve_milp,
)


def general_instance(seed, n=8):
    """Wide, overlapping windows: many feasible orders, so the MILP's timing logic matters."""
    rng = np.random.default_rng(seed)
    e = np.concatenate(([0.0], rng.random(n - 1) * 200))
    l = e + np.concatenate(([0.0], rng.random(n - 1) * 120))
    T = float(rng.uniform(250, 450))
    l[0] = T
    return OPTWVPInstance(name=f"g{seed}", coords=rng.random((n, 2)) * 100,
                          profit=np.concatenate(([0.0], rng.random(n - 1) * 10)),
                          tw_open=e, tw_close=l, horizon=T)


@pytest.mark.parametrize("seed", range(6))
def test_milp_matches_brute_force_on_tiny_generated_instances(seed):
    inst = generate_instance(9, 300 + seed)
    res = solve_milp(inst)
    route, best = brute_force(inst)
    assert res["optimal"]
    assert res["profit"] == pytest.approx(best, rel=1e-6, abs=1e-6)
    assert check_schedule(inst, res["route"], res["service"]) == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_milp_matches_brute_force_with_overlapping_windows(seed):
    inst = general_instance(seed)
    res = solve_milp(inst)
    _, best = brute_force(inst)
    assert res["optimal"]
    assert res["profit"] == pytest.approx(best, rel=1e-6, abs=1e-6)
    if res["bound"] is not None:
        assert res["bound"] >= best - 1e-4 * max(1.0, best)


def test_heuristics_never_beat_the_optimum_and_ils_reaches_it_on_n20():
    hits = 0
    for seed in range(5):
        inst = generate_instance(20, 400 + seed)
        opt = solve_milp(inst)
        assert opt["optimal"]
        _, g = construct_route(inst, density_scorer)
        _, i = iterated_local_search(inst, seed=0, max_no_improve=60)
        assert g <= opt["profit"] + 1e-6 and i <= opt["profit"] + 1e-6
        hits += i >= opt["profit"] - 1e-6
    assert hits >= 3

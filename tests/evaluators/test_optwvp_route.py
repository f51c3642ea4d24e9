"""hifo.evaluators.optwvp_route: stored best-known values, measured baselines, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect
import json
import pickle

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.optwvp_route import REFS_PATH, OPTWVPRoute, instance_specs
from hifo.problems.optwvp import CANDIDATE_FIELDS, check_route, route_profit
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    return OPTWVPRoute()


compiled = partial(compile_entry, entry="score_insertions")


def evaluate(ev, heuristic, instance_set):
    return run_set(ev, heuristic, instance_set)[1]


def test_declaration(ev):
    assert ev.name == "optwvp_route" and ev.direction == "minimize"
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    assert params == list(CANDIDATE_FIELDS) + ["time_left", "horizon"]


def test_instance_sets_and_stored_optima(ev):
    train, test = ev.load_instances("train"), ev.load_instances("test_published")
    assert [i.n for i in train] == [20] * 6 + [50] * 6 + [100] * 4
    assert [i.n for i in test] == [20] * 20 + [50] * 20 + [100] * 10
    assert not {i.name for i in train} & {i.name for i in test}
    refs = json.loads(REFS_PATH.read_text())["instances"]
    assert set(refs) == {name for specs in instance_specs().values() for name, _, _ in specs}
    for inst in train + test:
        rec = refs[inst.name]
        # every best-known value is a proved MILP optimum, attained by the stored route,
        # and no ILS run of the reference script beat it
        assert rec["source"] == "milp-optimal"
        assert route_profit(inst, check_route(inst, rec["route"])) == pytest.approx(rec["best"], rel=1e-9)
        assert rec["ils_best"] <= rec["best"] + 1e-6
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")
    assert pickle.loads(pickle.dumps(train[0])).meta["best"] == train[0].meta["best"]


@pytest.mark.parametrize("baseline, instance_set", [  # "test" is a secret draw: its figure is test_published's
    (b, s) for b, figs in OPTWVPRoute.reference_figures.items() for s in figs if s != "test"])
def test_baselines_reach_their_reference_figures(ev, baseline, instance_set):
    got = evaluate(ev, compiled(ev.baselines[baseline]), instance_set)
    want = ev.reference_figures[baseline][instance_set]
    for metric, value in want.items():
        assert got[metric] == pytest.approx(value, abs=0.01), (baseline, instance_set, metric)
    assert got["gap_percent"] > 0  # none of the simple rules is optimal


def test_the_test_figures_are_the_published_ones(ev):
    for figs in OPTWVPRoute.reference_figures.values():
        assert figs.get("test") == figs.get("test_published")
    public = OPTWVPRoute()
    public.public_seeds = True  # the published seeds, as before the test set was drawn from a secret
    assert [(i.name, i.meta) for i in public.load_instances("test")] == \
        [(i.name, i.meta) for i in ev.load_instances("test_published")]


SMALL_TEST = {"test": [("optwvp20_seed2000", 20, 2000), ("optwvp50_seed2100", 50, 2100)]}


def test_the_test_set_is_drawn_from_a_secret_with_its_optimum(monkeypatch):
    """Two instances of the draw (the whole set costs about 30 s of CPU): per object, secret, each with its proved
    MILP optimum computed at draw time, the same number on a second draw from the same key."""
    from hifo.evaluators import optwvp_route
    from hifo.problems.optwvp import construct_route, density_scorer, iterated_local_search

    monkeypatch.setattr(optwvp_route, "instance_specs", lambda: SMALL_TEST)
    a, b = OPTWVPRoute(), OPTWVPRoute()
    ia, ib = a.load_instances("test"), b.load_instances("test")
    assert [i.name for i in ia] == ["optwvp20_secret0", "optwvp50_secret1"]
    assert [i.n for i in ia] == [20, 50] and not np.array_equal(ia[0].profit, ib[0].profit)
    assert a.load_instances("test")[0] is ia[0]  # drawn once per object
    published = {name: rec["best"] for name, rec in json.loads(REFS_PATH.read_text())["instances"].items()}
    for inst in ia:
        assert inst.meta["source"] == "milp-optimal" and inst.meta["best"] not in published.values()
        assert construct_route(inst, density_scorer)[1] <= inst.meta["best"] + 1e-6
        assert iterated_local_search(inst, seed=0, max_iter=20)[1] <= inst.meta["best"] * (1 + 1e-6)
    again = OPTWVPRoute()
    again.use_secret_key(a.__dict__["_secret_key"])
    assert [i.meta["best"] for i in again.load_instances("test")] == pytest.approx([i.meta["best"] for i in ia],
                                                                                    rel=1e-6)


def test_the_optimal_routes_score_a_zero_gap(ev):
    refs = json.loads(REFS_PATH.read_text())["instances"]
    for inst in ev.load_instances("train"):
        assert ev.score(inst, refs[inst.name]["route"])["gap_percent"] == pytest.approx(0.0, abs=1e-9)


def test_score_rejects_forged_and_infeasible_routes(ev):
    inst = ev.load_instances("train")[8]  # n = 50
    route = ev.solve(compiled(ev.baseline_source()), inst)
    assert len(route) >= 3
    late = int(np.argmax(inst.tw_open[route]))
    for bad in (
        route + [route[0]],                     # a customer twice
        [0] + route,                            # the depot listed as a customer
        [inst.n] + route,                       # no such node
        route[::-1],                            # the reverse order misses windows
        route[late:late + 1] + route[:late],    # the latest-opening customer first
        [int(v) for v in np.flatnonzero(~inst.reachable)[1:2]],  # a customer no route can serve
        "1,2,3",                                # not a list of integers
        [[1, 2]],
    ):
        with pytest.raises(InfeasibleSolution, match=inst.name):
            ev.score(inst, bad)
    # a route that returns after the horizon: chain reachable customers regardless of windows
    order = [int(v) for v in np.argsort(inst.tw_open) if inst.reachable[v]]
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, order)
    # the empty route is feasible and earns nothing
    assert ev.score(inst, [])["gap_percent"] == pytest.approx(100.0)


def test_a_failing_heuristic_raises_in_solve(ev):
    inst = ev.load_instances("train")[0]
    with pytest.raises(ValueError, match="shape"):
        ev.solve(lambda **kw: np.zeros(2), inst)

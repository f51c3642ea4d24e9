"""hifo.evaluators.toptwvp_route: stored proved optima, measured baselines, the parent's team check."""

from __future__ import annotations

import inspect
import json
import pickle
from functools import partial

import numpy as np
import pytest

from hifo.agents.evaluation import score_result
from hifo.evaluators import optwvp_route
from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.registry import get_evaluator
from hifo.evaluators.toptwvp_route import INSTANCE_LIMIT_S, REFS_PATH, TOPTWVPRoute, instance_specs
from hifo.problems.optwvp import CANDIDATE_FIELDS, check_team, team_profit
from hifo.sandbox.job import SandboxResult
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    return TOPTWVPRoute()


compiled = partial(compile_entry, entry="score_insertions")


def test_registered_and_its_slot_extends_optwvp_route(ev):
    assert type(get_evaluator("toptwvp_route")) is TOPTWVPRoute
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    single = list(inspect.signature(compiled(optwvp_route.OPTWVPRoute().baseline_source())).parameters)
    assert single == list(CANDIDATE_FIELDS) + ["time_left", "horizon"]
    assert params == single + ["vehicle", "vehicles"]  # the same arguments, in the same order, plus two
    assert ev.template.name == optwvp_route.OPTWVPRoute.template.name


def test_instance_sets_and_stored_optima(ev):
    train, test = ev.load_instances("train"), ev.load_instances("test_published")
    assert [(i.n, i.meta["vehicles"]) for i in train] == [(50, 2)] * 4 + [(50, 3)] * 2 + [(100, 2)] * 2 + [(100, 3)] * 2
    assert len(test) == 30 and not {i.name for i in train} & {i.name for i in test}
    refs = json.loads(REFS_PATH.read_text())["instances"]
    assert set(refs) == {name for specs in instance_specs().values() for name, *_ in specs}
    single = {name for specs in optwvp_route.instance_specs().values() for name, _, seed in specs}
    assert not {i.name for i in train + test} & single
    for inst in train + test:
        rec = refs[inst.name]
        # every best-known value is a proved MILP optimum attained by the stored team; the ILS never beat it
        assert rec["source"] == "milp-optimal"
        routes = check_team(inst, rec["routes"], inst.meta["vehicles"])
        assert team_profit(inst, routes) == pytest.approx(rec["best"], rel=1e-9)
        assert ev.score(inst, rec["routes"])["gap_percent"] == pytest.approx(0.0, abs=1e-9)
        assert rec["ils_best"] <= rec["best"] + 1e-6
    assert pickle.loads(pickle.dumps(train[0])).meta == train[0].meta


@pytest.mark.parametrize("baseline", sorted(TOPTWVPRoute.reference_figures))
def test_baselines_reach_their_train_figures(ev, baseline):
    got = run_set(ev, compiled(ev.baselines[baseline]), "train")[1]
    assert got["gap_percent"] == pytest.approx(ev.reference_figures[baseline]["train"]["gap_percent"], abs=0.01)
    assert got["gap_percent"] > 5  # none of the simple rules is near optimal: the slot has room


def test_the_test_figures_are_the_published_ones(ev):
    for figs in TOPTWVPRoute.reference_figures.values():
        assert figs["test"] == figs["test_published"]
    public = TOPTWVPRoute()
    public.public_seeds = True  # the published seeds, as before the test set was drawn from a secret
    assert [(i.name, i.meta) for i in public.load_instances("test")] == \
        [(i.name, i.meta) for i in ev.load_instances("test_published")]
    got = run_set(ev, compiled(ev.baselines["cheapest_insertion"]), "test_published")[1]
    assert got["gap_percent"] == pytest.approx(ev.reference_figures["cheapest_insertion"]["test"]["gap_percent"],
                                               abs=0.01)


def test_the_test_set_is_drawn_from_a_secret_with_its_optimum(monkeypatch):
    """Two instances of the draw (the whole set costs about 2 s of CPU): per object, secret, each with its proved
    team MILP optimum computed at draw time, the same number on a second draw from the same key."""
    from hifo.evaluators import toptwvp_route
    from hifo.problems.optwvp import construct_team, density_scorer

    small = {"test": [("toptwvp50_m2_seed4000", 50, 2, 4000), ("toptwvp50_m3_seed4100", 50, 3, 4100)]}
    monkeypatch.setattr(toptwvp_route, "instance_specs", lambda: small)
    a, b = TOPTWVPRoute(), TOPTWVPRoute()
    ia, ib = a.load_instances("test"), b.load_instances("test")
    assert [i.name for i in ia] == ["toptwvp50_m2_secret0", "toptwvp50_m3_secret1"]
    assert [i.meta["vehicles"] for i in ia] == [2, 3] and not np.array_equal(ia[0].tw_open, ib[0].tw_open)
    assert a.load_instances("test")[0] is ia[0]  # drawn once per object
    stored = {rec["best"] for rec in json.loads(REFS_PATH.read_text())["instances"].values()}
    for inst in ia:
        assert inst.meta["source"] == "milp-optimal" and inst.meta["best"] not in stored
        assert construct_team(inst, inst.meta["vehicles"], density_scorer)[1] <= inst.meta["best"] + 1e-6
    again = TOPTWVPRoute()
    again.use_secret_key(a.__dict__["_secret_key"])
    assert [i.meta["best"] for i in again.load_instances("test")] == pytest.approx([i.meta["best"] for i in ia],
                                                                                    rel=1e-6)


def test_the_rule_decides_the_vehicle(ev):
    inst = next(i for i in ev.load_instances("train") if i.meta["vehicles"] == 3)
    base = compiled(ev.baseline_source())
    # the density rule ties on empty routes and the first (route 0) wins; spreading over routes differs

    def spread(**kw):  # prefer an empty route
        return base(**kw) + 50.0 * (kw["time_left"] == kw["horizon"])

    a, b = ev.score(inst, ev.solve(base, inst)), ev.score(inst, ev.solve(spread, inst))
    assert a["routes_used"] == 2 and b["routes_used"] == 3 and a["profit"] != b["profit"]


def test_score_rejects_forged_and_infeasible_teams(ev):
    inst = next(i for i in ev.load_instances("train") if i.meta["vehicles"] == 2)
    routes = ev.solve(compiled(ev.baseline_source()), inst)
    assert all(len(r) >= 2 for r in routes)
    late = int(np.argmax(inst.tw_open[routes[0]]))
    for bad in (
        routes + [[]],                                   # three routes for two vehicles
        [routes[0], routes[1] + [routes[0][0]]],         # a customer on two routes
        [routes[0] + routes[1]],                         # both routes merged into one: misses windows / horizon
        [routes[0][::-1], routes[1]],                    # reversed order misses windows
        [routes[0][late:late + 1] + routes[0][:late], routes[1]],
        [[0] + routes[0], routes[1]],                    # the depot as a customer
        [[inst.n], routes[1]],                           # no such node
        [[int(v) for v in np.flatnonzero(~inst.reachable)[1:2]]],  # a customer no route can serve
        routes[0],                                       # one route, not a list of routes
        "1,2,3",
        [[1.5, 2]],
    ):
        with pytest.raises(InfeasibleSolution, match=inst.name):
            ev.score(inst, bad)
    assert ev.score(inst, [[], []])["gap_percent"] == pytest.approx(100.0)
    assert ev.score(inst, routes[:1])["gap_percent"] > ev.score(inst, routes)["gap_percent"]  # fewer routes is fine


def test_a_forged_result_is_rejected_by_the_parent(ev):
    """What a candidate that escaped its slot could send: the parent's own check still refuses it."""
    instances = ev.load_instances("train")[:2]
    good = [ev.solve(compiled(ev.baseline_source()), i) for i in instances]
    ok = score_result(ev, instances, SandboxResult(status="ok", solutions=good, instance_s=[0.1, 0.1]))
    assert ok.feasible
    forged = [good[0], [good[1][0] + good[1][1]]]  # one vehicle doing both routes
    bad = score_result(ev, instances, SandboxResult(status="ok", solutions=forged, instance_s=[0.1, 0.1]))
    assert not bad.feasible and bad.error.startswith("infeasible on instance 1"), bad.error
    slow = score_result(ev, instances, SandboxResult(status="ok", solutions=good,
                                                     instance_s=[0.1, INSTANCE_LIMIT_S + 1]))
    assert not slow.feasible and "overtime: instance 1" in slow.error


def test_a_failing_heuristic_raises_in_solve(ev):
    inst = ev.load_instances("train")[0]
    with pytest.raises(ValueError, match="shape"):
        ev.solve(lambda **kw: np.zeros(2), inst)


def test_the_refs_maker_reproduces_a_stored_record(tmp_path):
    from hifo.evaluators.toptwvp_refs import make_toptwvp_refs

    name, n, m, seed = instance_specs()["train"][0]
    made = make_toptwvp_refs(milp_limit=30, ils_runs=1, specs={"train": [(name, n, m, seed)]},
                             out=tmp_path / "refs.json", log=lambda _: None)
    new, old = made["instances"][name], json.loads(REFS_PATH.read_text())["instances"][name]
    assert json.loads((tmp_path / "refs.json").read_text())["instances"][name]["best"] == new["best"]
    assert new["source"] == old["source"] == "milp-optimal" and new["coords_sum"] == old["coords_sum"]
    assert new["best"] == pytest.approx(old["best"], rel=1e-6)
    with pytest.raises(ValueError, match="ils_runs"):
        make_toptwvp_refs(ils_runs=0, out=tmp_path / "x.json")

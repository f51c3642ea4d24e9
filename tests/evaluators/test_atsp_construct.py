"""hifo.evaluators.atsp_construct: reference data, measured baseline figures, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect
import json
import pickle

import numpy as np
import pytest

from hifo.evaluators.atsp_construct import REFS_PATH, TSPLIB_NAMES, ATSPConstruct, random_set_specs, reference_length
from hifo.evaluators.base import InfeasibleSolution
from hifo.problems.routing import InvalidChoice, asymmetry, nearest_neighbour_tour, tour_length, triangle_violation
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    ev = ATSPConstruct()
    ev.public_seeds = True  # "test" is the published set the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="select_next_node")


evaluate = run_set


def test_declaration(ev):
    assert ev.name == "atsp_construct" and ev.direction == "minimize" and ev.primary_metric == "gap_percent"
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    assert params == ["current_node", "destination_node", "unvisited_nodes", "distance_matrix"]


def test_instance_sets(ev):
    train, test, tsplib = (ev.load_instances(s) for s in ("train", "test", "tsplib"))
    assert [i.n for i in train] == [50] * 8
    assert [i.n for i in test] == [20] * 16 + [50] * 16 + [100] * 8
    assert [i.name for i in tsplib] == list(TSPLIB_NAMES) and max(i.n for i in tsplib) == 171
    assert not {i.name for i in train} & {i.name for i in test}
    for inst in train[:2] + test[-1:]:
        d = inst.distance_matrix
        assert np.all(np.diag(d) == 0) and triangle_violation(d) <= 1e-12 and asymmetry(d) > 0.1
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")
    assert pickle.loads(pickle.dumps(train[0])).name == train[0].name
    assert random_set_specs("train")[0] == ("tmat50_seed6000", 50, 6000)


def test_the_test_set_is_a_secret_draw_with_lkh_references_and_test_published_is_the_published_one(ev, monkeypatch):
    import elkai  # noqa: F401  (in the test extra)

    published = ev.load_instances("test_published")
    assert [i.name for i in published] == [i.name for i in ev.load_instances("test")]  # public_seeds
    for inst in published[:2]:  # a draw's reference is the stored references' tool and settings: it remakes them
        assert reference_length(inst.distance_matrix) == pytest.approx(inst.best_known, rel=1e-12)
    fresh = ATSPConstruct()
    monkeypatch.setattr(fresh, "_draw_test", partial(ATSPConstruct._draw_test, fresh, 3))  # the first 3: a few s
    drawn = fresh.load_instances("test")
    assert fresh.load_instances("test")[0] is drawn[0]  # drawn once per object
    assert [i.n for i in drawn] == [20] * 3 and all(i.name == f"tmat20_secret{k}" for k, i in enumerate(drawn))
    assert not any(np.array_equal(a.distance_matrix, b.distance_matrix) for a, b in zip(drawn, published))
    assert not np.array_equal(ATSPConstruct()._draw_test(1)[0].distance_matrix, drawn[0].distance_matrix)
    nn = [tour_length(nearest_neighbour_tour(i.distance_matrix), i.distance_matrix) for i in drawn]
    assert all(i.best_known < length for i, length in zip(drawn, nn)) and {i.best_known_source for i in drawn} == {"lkh3"}
    a, b = ATSPConstruct(), ATSPConstruct()  # one key, one draw, one reference: nothing else enters it
    for x in (a, b):
        x.use_secret_key(bytes(range(32)))
    assert [(i.best_known, i.distance_matrix.tobytes()) for i in a._draw_test(2)] == \
        [(i.best_known, i.distance_matrix.tobytes()) for i in b._draw_test(2)]


def test_references(ev):
    refs = json.loads(REFS_PATH.read_text())
    optima = {i.name: i.best_known for i in ev.load_instances("tsplib")}
    assert optima["br17"] == 39 and optima["p43"] == 5620 and optima["ftv170"] == 2755
    for name, r in refs["tsplib_atsp"].items():
        assert r["lkh_length"] >= r["optimum"]
    for inst in ev.load_instances("train"):
        ref = refs["tmat"][inst.name]
        assert tour_length(ref["tour"], inst.distance_matrix) == pytest.approx(inst.best_known)


def test_nearest_neighbour_figures_are_measured(ev):
    heuristic = compiled(ev.baselines["nearest_neighbour"])
    for instance_set, figures in ev.reference_figures["nearest_neighbour"].items():
        per, agg = evaluate(ev, heuristic, instance_set)
        assert round(agg["gap_percent"], 2) == figures["gap_percent"], instance_set
        assert all(m["gap_percent"] >= 0 for m in per)


def test_optimal_tsplib_tours_score_zero(ev):
    refs = json.loads(REFS_PATH.read_text())["tsplib_atsp"]
    for inst in ev.load_instances("tsplib"):
        r = refs[inst.name]
        m = ev.score(inst, r["lkh_tour"])
        assert m["length"] == r["lkh_length"]
        if r["lkh_length"] == r["optimum"]:
            assert m["gap_percent"] == 0.0
    p43 = next(i for i in ev.load_instances("tsplib") if i.name == "p43")
    assert ev.score(p43, refs["p43"]["lkh_tour"])["gap_percent"] == pytest.approx(100 / 5620)


@pytest.mark.parametrize("solution, reason", [
    (list(range(49)), "all 50 nodes"),
    ([0] * 50, "appears 50 times"),
    (list(range(1, 51)), "outside"),
    ([float(i) for i in range(50)], "integers"),
    ({"tour": list(range(50))}, "all 50 nodes"),
])
def test_infeasible_tours_are_rejected(ev, solution, reason):
    with pytest.raises(InfeasibleSolution, match=reason):
        ev.score(ev.load_instances("train")[0], solution)


def test_solve_checks_every_choice(ev):
    inst = ev.load_instances("train")[0]
    with pytest.raises(InvalidChoice, match="already visited"):
        ev.solve(compiled("def select_next_node(c, d, u, m):\n    return d\n"), inst)
    # choosing by inbound cost instead of outbound cost is a different (worse) rule
    inbound = compiled("import numpy as np\ndef select_next_node(c, d, u, m):\n"
                       "    return int(u[np.argmin(m[u, c])])\n")
    nn = compiled(ev.baselines["nearest_neighbour"])
    assert ev.score(inst, ev.solve(inbound, inst))["gap_percent"] > ev.score(inst, ev.solve(nn, inst))["gap_percent"]

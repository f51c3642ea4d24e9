"""hifo.evaluators.tsp_construct: reference data, measured baseline figures, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect
import json
import pickle

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.tsp_construct import REFS_PATH, TSPLIB_NAMES, TSPConstruct, random_set_specs
from hifo.problems.routing import InvalidChoice, nearest_neighbour_tour, tour_length
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    ev = TSPConstruct()
    ev.public_seeds = True  # "test" is the published set the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="select_next_node")


evaluate = run_set


def test_declaration(ev):
    assert ev.name == "tsp_construct" and ev.direction == "minimize"
    assert ev.primary_metric == "gap_percent"
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    assert params == ["current_node", "destination_node", "unvisited_nodes", "distance_matrix"]


def test_instance_sets(ev):
    train, test, tsplib = (ev.load_instances(s) for s in ("train", "test", "tsplib"))
    assert [i.n for i in train] == [50] * 8
    assert [i.n for i in test] == [50] * 16 + [100] * 8 + [200] * 4
    assert [i.name for i in tsplib] == list(TSPLIB_NAMES) and max(i.n for i in tsplib) <= 200
    assert {i.best_known_source for i in train + test} == {"lkh3"}
    assert {i.best_known_source for i in tsplib} == {"optimal"}
    assert not {i.name for i in train} & {i.name for i in test}
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")
    assert pickle.loads(pickle.dumps(train[0])).name == train[0].name


def test_the_test_set_is_a_secret_draw_with_lkh_references_and_test_published_is_the_published_one(ev):
    published = ev.load_instances("test_published")
    assert [i.name for i in published] == [i.name for i in ev.load_instances("test")]  # public_seeds
    drawn = TSPConstruct().load_instances("test")
    assert [i.n for i in drawn] == [i.n for i in published] and all("secret" in i.name for i in drawn)
    assert not any(np.array_equal(a.coords, b.coords) for a, b in zip(drawn, published))
    nn = [tour_length(nearest_neighbour_tour(i.distance_matrix), i.distance_matrix) for i in drawn]
    gaps = [100 * (length / i.best_known - 1) for length, i in zip(nn, drawn)]
    # LKH-3's reference is at most nearest neighbour's length and close to optimal: NN's gap as on the published set
    assert min(gaps) >= 0 and 18 < float(np.mean(gaps)) < 29 and {i.best_known_source for i in drawn} == {"lkh3"}


def test_tsplib_optima(ev):
    optima = {i.name: i.best_known for i in ev.load_instances("tsplib")}
    assert optima["eil51"] == 426 and optima["berlin52"] == 7542 and optima["kroB200"] == 29437
    refs = json.loads(REFS_PATH.read_text())
    assert all(r["lkh_length"] >= r["optimum"] for r in refs["tsplib"].values())


def _two_nearest_bound(d: np.ndarray) -> float:
    """Every node has two tour edges, each at least as long as its two shortest edges."""
    masked = d + np.diag(np.full(d.shape[0], np.inf))
    return float(np.sort(masked, axis=1)[:, :2].sum() / 2)


def test_random_references_are_plausible(ev):
    for instance_set in ("train", "test"):
        for inst in ev.load_instances(instance_set):
            nn = tour_length(nearest_neighbour_tour(inst.distance_matrix), inst.distance_matrix)
            assert _two_nearest_bound(inst.distance_matrix) <= inst.best_known < nn
            # Beardwood-Halton-Hammersley: about 0.7124 * sqrt(n) for uniform points
            assert 0.6 < inst.best_known / np.sqrt(inst.n) < 0.9


def test_specs_are_fixed():
    assert random_set_specs("train")[0] == ("uniform50_seed1000", 50, 1000)
    assert random_set_specs("test")[-1] == ("uniform200_seed4003", 200, 4003)


def test_nearest_neighbour_figures_are_measured(ev):
    heuristic = compiled(ev.baselines["nearest_neighbour"])
    for instance_set, figures in ev.reference_figures["nearest_neighbour"].items():
        per, agg = evaluate(ev, heuristic, instance_set)
        assert round(agg["gap_percent"], 2) == figures["gap_percent"], instance_set
        assert all(m["gap_percent"] > 0 for m in per)
    per, _ = evaluate(ev, heuristic, "tsplib")
    assert per[0]["length"] == 511.0 and per[0]["gap_percent"] == pytest.approx(19.953, abs=1e-3)


def test_optimal_tour_scores_zero(ev):
    import elkai  # noqa: F401  (in the test extra)
    from hifo.problems.routing import lkh_tour
    inst = ev.load_instances("tsplib")[0]
    tour = lkh_tour(inst.distance_matrix, runs=3, scale=1).tolist()
    assert ev.score(inst, tour) == {"length": 426.0, "gap_percent": 0.0}


@pytest.mark.parametrize("solution, reason", [
    (list(range(49)), "all 50 nodes"),
    ([0] * 50, "appears 50 times"),
    (list(range(1, 51)), "outside"),
    ([float(i) for i in range(50)], "integers"),
    ("abc", "sequence"),
])
def test_infeasible_tours_are_rejected(ev, solution, reason):
    inst = ev.load_instances("train")[0]
    with pytest.raises(InfeasibleSolution, match=reason):
        ev.score(inst, solution)


def test_solve_checks_every_choice(ev):
    inst = ev.load_instances("train")[0]
    revisit = compiled("def select_next_node(c, d, u, m):\n    return d\n")
    with pytest.raises(InvalidChoice, match="already visited"):
        ev.solve(revisit, inst)
    farthest = compiled("def select_next_node(c, d, u, m):\n    return u[-1]\n")
    tour = ev.solve(farthest, inst)
    assert all(type(v) is int for v in tour) and sorted(tour) == list(range(50))
    assert ev.score(inst, tour)["gap_percent"] > 100

"""hifo.evaluators.tsp_gls: reference data, measured baseline figures, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect
import pickle

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.tsp_gls import TSPLIB_NAMES, TSPGLS, random_set_specs, reference_length
from hifo.problems.routing import InvalidGuide, nearest_neighbour_tour, tour_length
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    ev = TSPGLS()
    ev.public_seeds = True  # "test" is the published set the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="update_edge_distance")


evaluate = run_set


def test_declaration(ev):
    assert ev.name == "tsp_gls" and ev.direction == "minimize" and ev.primary_metric == "gap_percent"
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    assert params == ["edge_distance", "local_opt_tour", "edge_n_used"]


def test_instance_sets(ev):
    train, test, tsplib = (ev.load_instances(s) for s in ("train", "test", "tsplib"))
    assert [t.instance.n for t in train] == [100] * 4 and {t.iterations for t in train} == {50}
    assert [t.instance.n for t in test] == [50] * 8 + [100] * 8 + [200] * 4
    assert [t.name for t in tsplib] == list(TSPLIB_NAMES) and {t.iterations for t in tsplib} == {200}
    assert {t.instance.best_known_source for t in train + test} == {"lkh3"}
    assert tsplib[0].instance.best_known == 426 and tsplib[-1].instance.best_known == 29437
    assert pickle.loads(pickle.dumps(train[0])).iterations == 50
    assert random_set_specs("train")[0] == ("uniform100_seed5000", 100, 5000, 50)
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")
    for t in train + test:  # LKH-3 is much better than nearest neighbour
        d = t.instance.distance_matrix
        assert t.instance.best_known < 0.9 * tour_length(nearest_neighbour_tour(d), d)


def test_the_test_set_is_a_secret_draw_with_lkh_references_and_test_published_is_the_published_one(ev, monkeypatch):
    import elkai  # noqa: F401  (in the test extra)

    published = ev.load_instances("test_published")
    assert [t.name for t in published] == [t.name for t in ev.load_instances("test")]  # public_seeds
    task = published[0]  # a draw's reference is the stored references' tool and settings: it remakes them
    assert reference_length(task.instance.distance_matrix) == pytest.approx(task.instance.best_known, rel=1e-12)
    fresh = TSPGLS()
    monkeypatch.setattr(fresh, "_draw_test", partial(TSPGLS._draw_test, fresh, 2))  # the first 2: about a second
    drawn = fresh.load_instances("test")
    assert fresh.load_instances("test")[0] is drawn[0]  # drawn once per object
    assert [(t.instance.n, t.iterations) for t in drawn] == [(50, 200)] * 2
    assert [t.name for t in drawn] == ["uniform50_secret0", "uniform50_secret1"]
    assert not any(np.array_equal(a.instance.coords, b.instance.coords) for a, b in zip(drawn, published))
    assert not np.array_equal(TSPGLS()._draw_test(1)[0].instance.coords, drawn[0].instance.coords)
    for t in drawn:  # LKH-3 is much better than nearest neighbour, as on the published instances
        d = t.instance.distance_matrix
        assert t.instance.best_known < 0.9 * tour_length(nearest_neighbour_tour(d), d)
    a, b = TSPGLS(), TSPGLS()  # one key, one draw, one reference: nothing else enters it
    for x in (a, b):
        x.use_secret_key(bytes(range(32)))
    assert [(t.instance.best_known, t.instance.coords.tobytes()) for t in a._draw_test(1)] == \
        [(t.instance.best_known, t.instance.coords.tobytes()) for t in b._draw_test(1)]


def test_baseline_train_figures_are_measured(ev):
    for name in ("eoh_utility", "no_guidance"):
        per, agg = evaluate(ev, compiled(ev.baselines[name]), "train")
        assert round(agg["gap_percent"], 2) == ev.reference_figures[name]["train"]["gap_percent"], name
        assert all(m["gap_percent"] > -1e-9 for m in per)
    # guidance is what makes GLS worth running
    assert ev.reference_figures["eoh_utility"]["train"]["gap_percent"] < \
        ev.reference_figures["no_guidance"]["train"]["gap_percent"]


@pytest.mark.slow
def test_baseline_test_and_tsplib_figures_are_measured(ev):
    heuristic = compiled(ev.baselines["eoh_utility"])
    for instance_set in ("test_published", "tsplib"):  # with public_seeds, "test" is test_published (names checked above)
        _, agg = evaluate(ev, heuristic, instance_set)
        assert round(agg["gap_percent"], 2) == ev.reference_figures["eoh_utility"][instance_set]["gap_percent"]
    assert all(figures["test"] == figures["test_published"] for figures in ev.reference_figures.values())


def test_optimal_tour_scores_zero(ev):
    import elkai  # noqa: F401  (in the test extra)
    from hifo.problems.routing import lkh_tour

    task = ev.load_instances("tsplib")[0]
    tour = lkh_tour(task.instance.distance_matrix, runs=3, scale=1).tolist()
    assert ev.score(task, tour) == {"length": 426.0, "gap_percent": 0.0}


@pytest.mark.parametrize("solution, reason", [
    (list(range(99)), "all 100 nodes"),
    ([0] * 100, "appears 100 times"),
    (list(range(1, 101)), "outside"),
    ([float(i) for i in range(100)], "integers"),
    (None, "sequence"),
])
def test_infeasible_tours_are_rejected(ev, solution, reason):
    with pytest.raises(InfeasibleSolution, match=reason):
        ev.score(ev.load_instances("train")[0], solution)


def test_solve_rejects_malformed_guides(ev):
    task = ev.load_instances("train")[0]
    with pytest.raises(InvalidGuide, match="shape"):
        ev.solve(compiled("def update_edge_distance(e, t, u):\n    return e[0]\n"), task)
    with pytest.raises(ZeroDivisionError):
        ev.solve(compiled("def update_edge_distance(e, t, u):\n    return 1 / 0\n"), task)
    tour = ev.solve(compiled("import numpy as np\ndef update_edge_distance(e, t, u):\n"
                             "    return e + np.random.default_rng(0).random(e.shape)\n"), task)
    assert sorted(tour) == list(range(100)) and all(type(v) is int for v in tour)
    assert np.isfinite(ev.score(task, tour)["gap_percent"])

"""hifo.evaluators.bpp_online: FunSearch's published figures, measured; the trusted checks."""

from __future__ import annotations

from functools import partial
import pickle
import time

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.bpp_online import BinPackingOnline
from hifo.problems.binpacking import BinPackingInstance
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    ev = BinPackingOnline()
    ev.public_seeds = True  # "test" is the published set the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="priority")


evaluate = run_set


def test_declaration(ev):
    assert ev.name == "bpp_online" and ev.direction == "minimize"
    assert ev.primary_metric == "excess_percent"
    assert set(ev.instance_sets) == {"train", "weibull_5k", "or3", "test"}
    assert ev.template.signature == "def priority(item: float, bins: np.ndarray) -> np.ndarray:"
    assert set(ev.baselines) == {"best_fit", "first_fit"}
    assert "return -(bins - item)" in ev.baseline_source()


def test_published_best_fit_figures(ev):
    best_fit = compiled(ev.baselines["best_fit"])
    _, weibull = evaluate(ev, best_fit, "weibull_5k")
    assert weibull["mean_bins"] == 2067.0 and round(weibull["excess_percent"], 2) == 3.98
    _, or3 = evaluate(ev, best_fit, "or3")
    assert or3["mean_bins"] == 212.0 and round(or3["excess_percent"], 2) == 5.37
    assert or3["mean_l1"] == pytest.approx(201.2)


def test_all_reference_figures_are_measured(ev):
    for baseline, per_set in ev.reference_figures.items():
        heuristic = compiled(ev.baselines[baseline])
        for instance_set, figures in per_set.items():
            _, agg = evaluate(ev, heuristic, instance_set)
            assert agg["mean_bins"] == pytest.approx(figures["mean_bins"]), (baseline, instance_set)
            assert round(agg["excess_percent"], 2) == figures["excess_percent"], (baseline, instance_set)


def test_first_fit_differs_from_best_fit(ev):
    _, ff = evaluate(ev, compiled(ev.baselines["first_fit"]), "weibull_5k")
    assert ff["mean_bins"] == pytest.approx(2071.8) and round(ff["excess_percent"], 2) == 4.23


def test_train_set_is_fast_and_fixed(ev):
    instances = ev.load_instances("train")
    assert len(instances) == 5 and {i.num_items for i in instances} == {500}
    assert [i.items for i in instances] == [i.items for i in BinPackingOnline().load_instances("train")]
    best_fit = compiled(ev.baselines["best_fit"])
    t0 = time.perf_counter()
    for inst in instances:
        ev.score(inst, ev.solve(best_fit, inst))
    assert time.perf_counter() - t0 < 1.0


def test_test_is_weibull_5k_with_public_seeds_else_a_secret_draw_and_unknown_sets_fail(ev):
    published = [i.items for i in ev.load_instances("weibull_5k")]
    assert [i.items for i in ev.load_instances("test")] == published
    a, b = BinPackingOnline(), BinPackingOnline()
    drawn = a.load_instances("test")
    assert len(drawn) == 5 and {i.num_items for i in drawn} == {5000} and {i.capacity for i in drawn} == {100}
    assert [i.items for i in drawn] == [i.items for i in a.load_instances("test")]  # one draw per object
    assert [i.items for i in drawn] != [i.items for i in b.load_instances("test")]  # another key, another draw
    assert not {i.items for i in drawn} & set(published) and all("secret" in i.name for i in drawn)
    sizes = np.concatenate([i.items for i in drawn])
    assert 39 < sizes.mean() < 42 and sizes.min() >= 1 and sizes.max() <= 100  # FunSearch's Weibull(3, 45)
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")


def test_instances_pickle(ev):
    inst = ev.load_instances("or3")[0]
    assert pickle.loads(pickle.dumps(inst)) == inst


def test_solve_returns_json_ints(ev):
    inst = ev.load_instances("train")[0]
    sol = ev.solve(compiled(ev.baselines["best_fit"]), inst)
    assert isinstance(sol, list) and len(sol) == inst.num_items
    assert all(type(b) is int for b in sol)


SMALL = BinPackingInstance("small", 10, (6, 5, 4, 3))


@pytest.mark.parametrize("solution, reason", [
    ([0, 0, 1, 1], "over capacity"),
    ([0, 1, 0], "expected 4"),
    ([0, 1, 0, 9], "outside"),
    ([0, 1, 0, "1"], "integers"),
    ({"bins": 2}, "expected 4"),
])
def test_infeasible_solutions_are_rejected(ev, solution, reason):
    with pytest.raises(InfeasibleSolution, match=reason) as info:
        ev.score(SMALL, solution)
    assert "small" in str(info.value)


def test_score_counts_from_the_assignment(ev):
    assert ev.score(SMALL, [0, 1, 0, 1]) == {"bins": 2.0, "l1_bound": 2.0, "excess_percent": 0.0}
    assert ev.score(SMALL, [0, 1, 2, 3])["bins"] == 4.0
    assert ev.score(SMALL, [3, 2, 3, 1])["excess_percent"] == pytest.approx(50.0)


@pytest.mark.parametrize("body", [
    "return np.full(len(bins), np.nan)",
    "return np.zeros(len(bins) + 1)",
    "return 0.0",
    "return np.log(bins - item)",  # -inf where the item fits exactly
])
def test_bad_heuristics_fail_in_solve(ev, body):
    heuristic = compiled(f"import numpy as np\ndef priority(item, bins):\n    {body}\n")
    with np.errstate(divide="ignore"), pytest.raises(ValueError):
        for inst in ev.load_instances("train"):
            ev.solve(heuristic, inst)


def test_aggregate_uses_means_like_funsearch(ev):
    per = [{"bins": 11.0, "l1_bound": 10.0, "excess_percent": 10.0},
           {"bins": 100.0, "l1_bound": 100.0, "excess_percent": 0.0}]
    agg = ev.aggregate(per)
    assert agg["mean_bins"] == 55.5 and agg["mean_l1"] == 55.0
    assert agg["excess_percent"] == pytest.approx(0.5 / 55 * 100)  # not the mean of 10 and 0
    assert ev.fitness(agg) == -agg["excess_percent"]

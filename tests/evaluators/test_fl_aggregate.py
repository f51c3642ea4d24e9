"""hifo.evaluators.fl_aggregate: baselines reach their stored figures; the parent replays the run."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.fl_aggregate import FLAggregate
from evalkit import compile_entry, run_instance

compiled = partial(compile_entry, entry="aggregate")


@pytest.fixture(scope="module")
def ev():
    return FLAggregate()


def test_declaration(ev):
    from hifo.evaluators.registry import get_evaluator

    assert isinstance(get_evaluator("fl_aggregate"), FLAggregate)
    assert ev.direction == "maximize" and ev.primary_metric == "test_acc"
    assert set(ev.reference_figures) == set(ev.baselines) == {
        "fedlaw", "fedavg", "krum", "coordinate_median", "trimmed_mean", "centered_clipping"}


@pytest.mark.parametrize("name", ["fedlaw", "fedavg"])
def test_reference_figures_train(ev, name):
    per = [run_instance(ev, compiled(ev.baselines[name]), i) for i in ev.load_instances("train")]
    agg = ev.aggregate(per)
    for metric, value in ev.reference_figures[name]["train"].items():
        assert agg[metric] == pytest.approx(value, abs=1e-6), (name, metric)


def test_parent_ignores_everything_but_the_steps(ev):
    inst = ev.load_instances("train")[0]  # sign flip, 30 %
    sol = ev.solve(compiled(ev.baselines["fedlaw"]), inst)
    honest = ev.score(inst, sol)
    # extra keys (a claimed accuracy) change nothing
    assert ev.score(inst, {**sol, "test_acc": 1.0}) == honest
    # a step of 1e9 everywhere is clipped into the box of the round's updates, not taken
    huge = ev.score(inst, {"aggregates": [[1e9] * len(sol["aggregates"][0])] * 30})
    assert np.isfinite(huge["train_loss"]) and huge["test_acc"] < honest["test_acc"]


@pytest.mark.parametrize("bad", [{}, {"aggregates": []}, {"aggregates": [[0.0]] * 30},
                                 {"aggregates": [[float("nan")] * 650] * 30}])
def test_bad_solutions_are_infeasible(ev, bad):
    with pytest.raises(InfeasibleSolution):
        ev.score(ev.load_instances("train")[1], bad)

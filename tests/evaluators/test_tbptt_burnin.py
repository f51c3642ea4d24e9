"""hifo.evaluators.tbptt_burnin: stored figures reproduce; the parent replays and checks the schedule."""

from __future__ import annotations

from functools import partial

import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.tbptt_burnin import EPOCHS, TBPTTBurnIn
from evalkit import compile_entry, run_instance

compiled = partial(compile_entry, entry="burn_in")


@pytest.fixture(scope="module")
def ev():
    return TBPTTBurnIn()


def test_declaration(ev):
    from hifo.evaluators.registry import get_evaluator

    assert isinstance(get_evaluator("tbptt_burnin"), TBPTTBurnIn)
    assert ev.direction == "minimize" and ev.primary_metric == "test_rmse"
    assert set(ev.reference_figures) == set(ev.baselines)


@pytest.mark.parametrize("name", ["half", "no_burn_in"])
def test_reference_figures_train(ev, name):
    agg = ev.aggregate([run_instance(ev, compiled(ev.baselines[name]), i) for i in ev.load_instances("train")])
    for metric, value in ev.reference_figures[name]["train"].items():
        assert agg[metric] == pytest.approx(value, abs=1e-6), (name, metric)


def test_fitness_averages_data_and_initialisation_seeds(ev):
    inst = ev.load_instances("train")
    assert len({i.seed for i in inst}) >= 2 and len({i.init for i in inst}) >= 3
    assert set(ev.seed_noise) == set(ev.baselines)


def test_stateful_reference_reproduces(ev):
    from hifo.evaluators.tbptt_burnin import stateful_figures

    got = stateful_figures("train")
    for metric, value in ev.stateful_reference["train"].items():
        assert got[metric] == pytest.approx(value, abs=1e-6), metric


@pytest.mark.parametrize("bad", [{}, {"burn_ins": [0] * (EPOCHS - 1)}, {"burn_ins": [32] * EPOCHS},
                                 {"burn_ins": [1.5] * EPOCHS}, {"burn_ins": [True] * EPOCHS}])
def test_bad_schedules_are_infeasible(ev, bad):
    with pytest.raises(InfeasibleSolution):
        ev.score(ev.load_instances("train")[0], bad)


def test_the_test_set_is_a_secret_draw_and_the_published_one_stays(ev):
    """Issue 28: ``test``'s data and training seeds come from the object's secret key (the same draw for every call
    on one object, another on another object); ``test_published`` and ``public_seeds`` give the stored seeds."""
    published = ev.load_instances("test_published")
    assert {i.seed for i in published} == {2, 3} and len(published) == 12
    fresh = TBPTTBurnIn()
    drawn = fresh.load_instances("test")
    assert drawn == fresh.load_instances("test") and all("secret" in i.name for i in drawn)
    assert [(i.init, i.window) for i in drawn] == [(i.init, i.window) for i in published]
    assert len({i.seed for i in drawn}) == 2 and not {i.seed for i in drawn} & {0, 1, 2, 3}
    assert {i.seed for i in drawn}.isdisjoint({i.seed for i in TBPTTBurnIn().load_instances("test")})
    public = TBPTTBurnIn()
    public.public_seeds = True
    assert public.load_instances("test") == published
    assert ev.reference_figures["half"]["test_published"] == ev.reference_figures["half"]["test"]

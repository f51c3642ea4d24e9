"""hifo.evaluators.tbptt_burnin: stored figures reproduce; the parent replays and checks the schedule."""

from __future__ import annotations

from functools import partial

import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.tbptt_burnin import EPOCHS, WINDOW, TBPTTBurnIn, fixed_schedule, replay
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


def test_the_sandbox_path_and_the_parent_replay_agree_on_one_instance(ev):
    """The child's run (the schedule chosen from the losses it sees) and the parent's replay of the baseline's fixed
    schedule give the same schedule and the same figures; the stored set figures are checked by replay, at half the
    cost (tests/evaluators/test_seed_noise_claims.py, every baseline)."""
    inst = ev.load_instances("train")[0]
    h = compiled(ev.baselines["ramp"])
    via_child = run_instance(ev, h, inst)
    assert via_child == replay((inst, fixed_schedule(h, inst.window)))
    assert via_child["mean_burn_in"] == pytest.approx(sum(fixed_schedule(h, WINDOW)) / EPOCHS)


def test_a_rule_that_reads_the_losses_has_no_fixed_schedule():
    with pytest.raises(ValueError, match="depends on the losses"):
        fixed_schedule(lambda e, n, w, losses: 0 if not losses or losses[-1] > 0.5 else w // 2, WINDOW)


def test_fitness_averages_data_seeds(ev):
    inst = ev.load_instances("train")
    assert len({i.seed for i in inst}) == len(inst) >= 8 and {i.window for i in inst} == {WINDOW}
    assert set(ev.seed_noise) == set(ev.baselines)


def test_stateful_reference_reproduces(ev):
    from hifo.evaluators.tbptt_burnin import stateful_figures

    got = stateful_figures("train", workers=2)
    for metric, value in ev.stateful_reference["train"].items():
        assert got[metric] == pytest.approx(value, abs=1e-6), metric


@pytest.mark.parametrize("bad", [{}, {"burn_ins": [0] * (EPOCHS - 1)}, {"burn_ins": [WINDOW] * EPOCHS},
                                 {"burn_ins": [1.5] * EPOCHS}, {"burn_ins": [True] * EPOCHS}])
def test_bad_schedules_are_infeasible(ev, bad):
    with pytest.raises(InfeasibleSolution):
        ev.score(ev.load_instances("train")[0], bad)


def test_the_test_set_is_a_secret_draw_and_the_published_one_stays(ev):
    """Issue 28: ``test``'s data and training seeds come from the object's secret key (the same draw for every call
    on one object, another on another object); ``test_published`` and ``public_seeds`` give the stored seeds."""
    published = ev.load_instances("test_published")
    assert {i.seed for i in published} == set(range(8, 14)) and len(published) == 6
    fresh = TBPTTBurnIn()
    drawn = fresh.load_instances("test")
    assert drawn == fresh.load_instances("test") and all("secret" in i.name for i in drawn)
    assert [(i.init, i.window) for i in drawn] == [(i.init, i.window) for i in published]
    assert len({i.seed for i in drawn}) == 6 and not {i.seed for i in drawn} & set(range(14))
    assert {i.seed for i in drawn}.isdisjoint({i.seed for i in TBPTTBurnIn().load_instances("test")})
    public = TBPTTBurnIn()
    public.public_seeds = True
    assert public.load_instances("test") == published
    assert ev.reference_figures["half"]["test_published"] == ev.reference_figures["half"]["test"]

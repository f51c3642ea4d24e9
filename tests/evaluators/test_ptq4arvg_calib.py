"""hifo.evaluators.ptq4arvg_calib: the parent's index checks, a baseline's figure, the sandbox path."""

from __future__ import annotations

from functools import partial

import pytest

from evalkit import assert_figure, compile_entry, one_torch_thread

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.ptq4arvg_calib import PTQ4ARVGCalib


@pytest.fixture(scope="module")
def ev():
    with one_torch_thread():
        yield PTQ4ARVGCalib()


@pytest.fixture(scope="module")
def instance(ev):
    return ev.load_instances("train")[0]


compiled = partial(compile_entry, entry="select_calibration")


def test_instances_carry_features_not_the_model(ev, instance):
    assert ev.direction == "minimize" and ev.primary_metric == "kl"
    assert len(instance.features) == len(instance.classes) == 128 and instance.k == 16
    assert all(isinstance(v, float) for v in instance.features[0]) and set(instance.classes[:64]) <= {0, 1, 2, 3}
    assert set(instance.classes[64:]) == {-1}  # the same images after the null token (the CFG batch's other half)


def test_parent_checks_the_indices(ev, instance):
    for bad in (list(range(15)), list(range(17)), [0] * 16, list(range(120, 136)), [True] + list(range(1, 16)), "x"):
        with pytest.raises(InfeasibleSolution):
            ev.score(instance, bad)


def test_dgc_reaches_its_reference_figure_in_process_and_in_the_sandbox(ev, instance):
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    instances = ev.load_instances("train")
    per = [ev.score(i, ev.solve(compiled(ev.baselines["dgc"]), i)) for i in instances]
    m = ev.aggregate(per)
    assert_figure(ev, m["kl"], ev.reference_figures["dgc"]["train"]["kl"], "kl", "dgc")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert score.metrics["kl"] == m["kl"]  # the same number through the sandbox (issue 26)


def test_calibrating_on_unconditional_samples_only_costs_the_guided_sampler(ev, instance):
    """The choice the slot makes matters: the unconditional half alone misses the class-modulated (adaLN)
    activations the guided sampler's conditional pass produces; its drift is larger than the conditional
    half's by more than the draw-to-draw noise (benchmarks/results/ptq4arvg_slot.json)."""
    cond = ev.score(instance, list(range(16)))["kl"]
    uncond = ev.score(instance, list(range(64, 80)))["kl"]
    assert uncond > 1.2 * cond


def test_the_test_pools_are_a_secret_draw_and_the_published_ones_stay(ev):
    """Issue 28: ``test``'s pools come from the object's secret key (one draw per object, another on another object);
    bits and k are the published set's; ``test_published`` and ``public_seeds`` give the pools 6 and 8."""
    published = ev.load_instances("test_published")
    assert [(i.bits, i.k, i.pool_seed) for i in published] == [(6, 16, 6), (4, 8, 8)]
    drawn = ev.load_instances("test")
    assert [i.features for i in drawn] == [i.features for i in ev.load_instances("test")]  # one draw per object
    assert all("secret" in i.name and str(i.pool_seed) not in i.name for i in drawn)
    assert [(i.bits, i.k) for i in drawn] == [(i.bits, i.k) for i in published]
    assert all(a.features != b.features for a, b in zip(drawn, published))
    other = PTQ4ARVGCalib().load_instances("test")
    assert all(a.features != b.features for a, b in zip(drawn, other))
    public = PTQ4ARVGCalib()
    public.public_seeds = True
    assert public.load_instances("test") == published
    assert ev.reference_figures["dgc"]["test_published"] == ev.reference_figures["dgc"]["test"]

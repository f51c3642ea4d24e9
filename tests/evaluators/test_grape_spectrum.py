"""hifo.evaluators.grape_spectrum: the parent's checks, a baseline's figure, the sandbox path, thread safety."""

from __future__ import annotations

from functools import partial

import math

import pytest

from evalkit import assert_figure, compile_entry, one_torch_thread

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.grape_spectrum import GrapeSpectrum


@pytest.fixture(scope="module")
def ev():
    with one_torch_thread():
        yield GrapeSpectrum()


@pytest.fixture(scope="module")
def instance(ev):
    return ev.load_instances("train")[0]


compiled = partial(compile_entry, entry="spectrum")


def test_declaration_and_instances_carry_no_model(ev, instance):
    assert ev.name == "grape_spectrum" and ev.direction == "maximize" and ev.primary_metric == "acc_long"
    assert (instance.n_planes, instance.train_len) == (8, 32)
    assert [i.seed for i in ev.load_instances("test")] == [1, 2]
    rope = ev.solve(compiled(ev.baselines["rope"]), instance)
    assert rope[0] == 1.0 and rope[-1] == pytest.approx(10000 ** (-7 / 8))


def test_parent_checks_the_frequencies(ev, instance):
    for bad in ([0.1] * 7, [0.1] * 9, [math.nan] + [0.1] * 7, [-0.1] + [0.1] * 7, [4.0] + [0.1] * 7,
                "0.1", [True] * 8, None):
        with pytest.raises(InfeasibleSolution):
            ev.score(instance, bad)


def test_rope_reaches_its_reference_figures_and_the_sandbox_agrees(ev, instance):
    """RoPE (one ~30 s training run; the sandbox run reuses the parent's measurement of the same spectrum)."""
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    metrics = ev.score(instance, ev.solve(compiled(ev.baselines["rope"]), instance))
    for key, want in ev.reference_figures["rope"]["train"].items():
        assert_figure(ev, metrics[key], want, key, "rope")
    assert metrics["acc_train"] > 0.95 > metrics["acc_long"]  # learnt, but does not extrapolate fully
    instances = ev.load_instances("train")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert score.metrics["acc_long"] == metrics["acc_long"]  # the same number through the sandbox (issue 26)


def test_every_instance_asks_the_slot_the_same_question(ev):
    """Issue 28, memorisation: ``spectrum(n_planes, base, train_len)`` is all the slot sees, and every instance of
    every set, whatever its seed, asks it the same question, so a candidate answers the published test set exactly
    as any redraw of it: nothing per instance to recognise (the test set stays published; see the module)."""
    asked = []

    def recorder(*args):
        asked.append(args)
        return [0.0] * 8

    instances = ev.load_instances("train") + ev.load_instances("test")
    for inst in instances:
        ev.solve(recorder, inst)
    assert len({i.seed for i in instances}) == len(instances) == len(asked) and set(asked) == {(8, 10000.0, 32)}

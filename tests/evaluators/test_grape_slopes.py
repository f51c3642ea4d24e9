"""hifo.evaluators.grape_slopes: the parent's checks, a baseline's figure, the sandbox path."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from evalkit import assert_figure, compile_entry, one_torch_thread

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.grape_slopes import GrapeSlopes, _measure
from hifo.problems.grape_pe import alibi_slopes


@pytest.fixture(scope="module")
def ev():
    with one_torch_thread():
        yield GrapeSlopes()


@pytest.fixture(scope="module")
def instance(ev):
    return ev.load_instances("train")[0]


compiled = partial(compile_entry, entry="slopes")


def test_declaration_and_baselines(ev, instance):
    assert ev.name == "grape_slopes" and ev.direction == "maximize" and ev.primary_metric == "acc_long"
    assert (instance.heads, instance.layers, instance.train_len) == (4, 2, 32)
    assert [i.seed for i in ev.load_instances("test")] == [1, 2]
    assert set(ev.baselines) == set(ev.reference_figures)
    alibi = ev.solve(compiled(ev.baselines["alibi"]), instance)
    assert torch.allclose(torch.tensor(alibi, dtype=torch.float64), alibi_slopes(4).expand(2, 4))  # ALiBi's slopes
    assert ev.solve(compiled(ev.baselines["zero"]), instance) == [[0.0] * 4] * 2


def test_parent_checks_the_slopes(ev, instance):
    ok = [[0.1] * 4, [0.1] * 4]
    for bad in ([[0.1] * 4], [[0.1] * 3, [0.1] * 4], [[0.1] * 4, [math.nan] + [0.1] * 3], [[-0.1] + [0.1] * 3, [0.1] * 4],
                [[5.0] + [0.1] * 3, [0.1] * 4], [[True] * 4, [0.1] * 4], [0.1] * 8, "0.1", None, [ok[0], "x"]):
        with pytest.raises(InfeasibleSolution):
            ev.score(instance, bad)


def test_the_trivial_answer_is_nope_through_the_same_module():
    """All-zero slopes make w = softplus(r) * 0 = 0: no position signal whatever the gates learn."""
    from hifo.problems.grape_pe import TinyTransformer

    torch.manual_seed(0)
    model = TinyTransformer(72, "grape_a", d=32, heads=2, slopes=torch.zeros(2, 2))
    q = torch.randn(1, 2, 6, 16)
    for block in model.blocks:
        assert torch.equal(block.pe(q, q, None)[2], torch.zeros(1, 2, 6, 6))


@pytest.mark.slow
def test_alibi_reaches_its_reference_figures_and_the_sandbox_agrees(ev, instance):
    """ALiBi's slopes (one training run; the sandbox run reuses the parent's measurement of the same slopes)."""
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    metrics = ev.score(instance, ev.solve(compiled(ev.baselines["alibi"]), instance))
    for key, want in ev.reference_figures["alibi"]["train"].items():
        assert_figure(ev, metrics[key], want, key, "alibi")
    instances = ev.load_instances("train")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert score.metrics["acc_long"] == metrics["acc_long"]  # the same number through the sandbox (issue 26)
    assert _measure.cache_info().hits >= 1


def test_every_instance_asks_the_slot_the_same_question(ev):
    """Issue 28, memorisation: ``slopes(heads, layers, train_len)`` is all the slot sees, and every instance of
    every set, whatever its seed, asks it the same question, so a candidate answers the published test set exactly
    as any redraw of it: nothing per instance to recognise (the test set stays published; see the module)."""
    asked = []

    def recorder(*args):
        asked.append(args)
        return [[0.0] * 4 for _ in range(2)]

    instances = ev.load_instances("train") + ev.load_instances("test")
    for inst in instances:
        ev.solve(recorder, inst)
    assert len({i.seed for i in instances}) == len(instances) == len(asked) and set(asked) == {(4, 2, 32)}

"""hifo.evaluators.glowq_select: baselines' figures, the parent's own parameter count and rank checks, perplexity."""

from __future__ import annotations

from functools import partial

import inspect

import pytest

from evalkit import assert_figure, compile_entry, one_torch_thread

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.glowq_select import GlowQSelect


@pytest.fixture(scope="module")
def ev():
    with one_torch_thread():
        ev = GlowQSelect()
        ev.public_seeds = True  # the published model (the test set's secret model is checked below)
        yield ev


@pytest.fixture(scope="module")
def instance(ev):
    return ev.load_instances("train")[0]


compiled = partial(compile_entry, entry="choose_ranks")


def test_declaration_and_instances_carry_no_model(ev, instance):
    assert ev.name == "glowq_select" and ev.direction == "minimize" and ev.primary_metric == "ppl"
    assert isinstance(inspect.getattr_static(GlowQSelect, "solve"), staticmethod)
    assert len(instance.groups) == 8 and all(isinstance(v, (str, int, float, list)) for g in instance.groups
                                             for v in g.values())
    assert instance.budget < instance.rank * sum(g["params_per_rank"] for g in instance.groups)
    assert all(len(g["singular_values"]) == 16 and "weight_norm" in g for g in instance.groups)


BASELINES = ["gsvd", "none", "uniform", "norm_error", "layer_order", "water_filling"]


@pytest.mark.parametrize("name", BASELINES)
def test_baselines_reach_reference_figures(ev, instance, name):
    metrics = ev.score(instance, ev.solve(compiled(ev.baselines[name]), instance))
    for key, want in ev.reference_figures[name]["train"].items():
        assert_figure(ev, metrics[key], want, key, name)
    if name != "none":
        assert metrics["ppl"] < ev.reference_figures["none"]["train"]["ppl"]


def test_parent_counts_the_budget_and_checks_ranks(ev, instance):
    everything = {g["name"]: 16 for g in instance.groups}
    for bad in (everything, {"9.qkv": 1}, {"0.qkv": -1}, {"0.qkv": 17}, {"0.qkv": 2.5}, {"0.qkv": True},
                ["0.qkv"], "0.qkv"):
        with pytest.raises(InfeasibleSolution):
            ev.score(instance, bad)
    m = ev.score(instance, {"0.qkv": 8})
    assert m["extra_params"] == 8 * (64 + 3 * 64) and m["extra_kib"] == pytest.approx(2 * 2048 / 1024)
    # a per-group rank is a real choice: the same budget spent differently gives another perplexity
    spread = ev.score(instance, {"0.qkv": 4, "1.qkv": 4})
    assert spread["extra_params"] == m["extra_params"] and spread["ppl"] != m["ppl"]


def test_solve_turns_numpy_integers_into_ints(instance):
    import numpy as np

    out = GlowQSelect.solve(lambda groups, budget, rank: {"0.qkv": np.int64(2), "1.o": 1.5}, instance)
    assert out == {"0.qkv": 2, "1.o": 1.5} and type(out["0.qkv"]) is int


def test_baseline_runs_in_the_sandbox(ev):
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    instances = ev.load_instances("train")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert_figure(ev, score.metrics["ppl"], ev.reference_figures["gsvd"]["train"]["ppl"], "ppl")


def test_parallel_scoring_in_threads_matches_serial(ev, instance):
    from concurrent.futures import ThreadPoolExecutor

    sols = [{"0.qkv": 8}, {"1.down": 4, "1.upgate": 2}, {}]
    serial = [ev.score(instance, s)["ppl"] for s in sols]
    with ThreadPoolExecutor(3) as ex:
        parallel = [m["ppl"] for m in ex.map(lambda s: ev.score(instance, s), sols)]
    # same models and choices; only the order of float reductions may differ between threads (~1e-7)
    assert parallel == pytest.approx(serial, rel=1e-6)


def test_the_test_model_is_secret_and_the_train_model_published():
    """A fresh evaluator object draws its test model from a secret: other statistics than the published
    model's (so a table computed offline for those does not apply), the same names and budgets' form."""
    with one_torch_thread():
        secret = GlowQSelect()
        public = GlowQSelect()
        public.public_seeds = True
        assert secret.load_instances("train")[0].groups == public.load_instances("train")[0].groups
        hidden, shown = secret.load_instances("test"), public.load_instances("test")
    assert all(i.model_seed != 0 for i in hidden) and all(i.model_seed == 0 for i in shown)
    assert [g["singular_values"] for g in hidden[0].groups] != [g["singular_values"] for g in shown[0].groups]

"""hifo.evaluators.grape_anchor: baselines' figures, the parent's replay and its budget checks."""

from __future__ import annotations

import inspect

import pytest
import torch

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.grape_anchor import GrAPEAnchor
from evalkit import assert_figure


@pytest.fixture(scope="module")
def ev():
    before = torch.get_num_threads()
    yield GrAPEAnchor()
    torch.set_num_threads(before)


def compiled(source: str):
    ns: dict = {}
    exec(source, ns)
    return ns["take_anchor"]


@pytest.fixture(scope="module")
def instance(ev):
    return ev.load_instances("train")[0]


def test_declaration(ev):
    assert ev.name == "grape_anchor" and ev.direction == "minimize" and ev.primary_metric == "test_loss"
    assert isinstance(inspect.getattr_static(GrAPEAnchor, "solve"), staticmethod)
    assert set(ev.baselines) == set(ev.reference_figures)


@pytest.mark.parametrize("name", ["uniform", "none", "front_loaded"])
def test_baselines_reach_reference_figures(ev, instance, name):
    sol = ev.solve(compiled(ev.baselines[name]), instance)
    metrics = ev.score(instance, sol)
    for key, want in ev.reference_figures[name]["train"].items():
        assert_figure(ev, metrics[key], want, key, name)


def test_anchors_help_and_budget_is_enforced_by_the_loop(ev, instance):
    greedy = compiled("def take_anchor(step, total_steps, align, losses, anchors_used, budget):\n    return True\n")
    sol = ev.solve(greedy, instance)
    assert sol["anchors"] == list(range(instance.budget))
    assert ev.score(instance, sol)["test_loss"] < ev.reference_figures["none"]["train"]["test_loss"] - 0.02


def test_parent_rejects_forged_schedules(ev, instance):
    for bad in ({"anchors": list(range(instance.budget + 1))}, {"anchors": [0, 0]}, {"anchors": [-1]},
                {"anchors": [instance.steps]}, {"anchors": [True]}, {"anchors": "0"}, [1, 2]):
        with pytest.raises(InfeasibleSolution):
            ev.score(instance, bad)


def test_non_bool_answers_fail(ev, instance):
    with pytest.raises(ValueError):
        ev.solve(compiled("def take_anchor(step, total_steps, align, losses, anchors_used, budget):\n"
                          "    return 'yes'\n"), instance)


def test_baseline_runs_in_the_sandbox(ev):
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    instances = ev.load_instances("train")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert_figure(ev, score.metrics["test_loss"], ev.reference_figures["uniform"]["train"]["test_loss"], "test_loss")


def test_parallel_scoring_in_threads_matches_serial(ev, instance):
    # the agent scores candidates in parallel threads; the replay uses forward-mode AD (global levels)
    from concurrent.futures import ThreadPoolExecutor

    sols = [{"anchors": [0, 1]}, {"anchors": []}, {"anchors": [10, 20, 30]}]
    serial = [ev.score(instance, s)["test_loss"] for s in sols]
    with ThreadPoolExecutor(3) as ex:
        assert [m["test_loss"] for m in ex.map(lambda s: ev.score(instance, s), sols)] == serial

"""hifo.evaluators.grape_anchor: baselines' figures, the parent's replay and its budget checks."""

from __future__ import annotations

import inspect

import pytest
import torch

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.grape_anchor import AnchorInstance, GrAPEAnchor
from evalkit import assert_figure, run_set


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
def short():
    """A short run of the evaluator's 8-layer MLP for the mechanics (the real instances take 200 steps)."""
    return AnchorInstance("mlp8/seed0/short", "mlp8", 0, 30, 3)


def test_declaration(ev):
    assert ev.name == "grape_anchor" and ev.direction == "minimize" and ev.primary_metric == "test_loss"
    assert isinstance(inspect.getattr_static(GrAPEAnchor, "solve"), staticmethod)
    assert set(ev.baselines) == set(ev.reference_figures)
    for instance_set in ("train", "test"):  # issue 30: a model where feedback drifts, two training seeds per set
        insts = ev.load_instances(instance_set)
        assert {i.model for i in insts} == {"mlp8"} and len({i.seed for i in insts}) >= 2


@pytest.mark.slow
def test_no_anchors_reach_the_reference_figures(ev):
    _, agg = run_set(ev, compiled(ev.baselines["none"]), "train")
    for key, want in ev.reference_figures["none"]["train"].items():
        assert_figure(ev, agg[key], want, key, "none")


def test_budget_is_enforced_by_the_loop(ev, short):
    greedy = compiled("def take_anchor(step, total_steps, align, losses, anchors_used, budget):\n    return True\n")
    sol = ev.solve(greedy, short)
    assert sol["anchors"] == list(range(short.budget))
    metrics = ev.score(short, sol)
    assert metrics["anchors"] == 3 and metrics["layer_parallel_fraction"] == pytest.approx(27 / 30)


def test_parent_rejects_forged_schedules(ev, short):
    for bad in ({"anchors": list(range(short.budget + 1))}, {"anchors": [0, 0]}, {"anchors": [-1]},
                {"anchors": [short.steps]}, {"anchors": [True]}, {"anchors": "0"}, [1, 2]):
        with pytest.raises(InfeasibleSolution):
            ev.score(short, bad)


def test_non_bool_answers_fail(ev, short):
    with pytest.raises(ValueError):
        ev.solve(compiled("def take_anchor(step, total_steps, align, losses, anchors_used, budget):\n"
                          "    return 'yes'\n"), short)


@pytest.mark.slow
def test_baseline_runs_in_the_sandbox(ev):
    from hifo.agents.evaluation import make_job, score_result
    from hifo.sandbox import run_job

    instances = ev.load_instances("train")
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    assert score.feasible, score.error
    assert_figure(ev, score.metrics["test_loss"], ev.reference_figures["uniform"]["train"]["test_loss"], "test_loss")


def test_parallel_scoring_in_threads_matches_serial(ev, short):
    # the agent scores candidates in parallel threads; the replay uses forward-mode AD (global levels)
    from concurrent.futures import ThreadPoolExecutor

    sols = [{"anchors": [0, 1]}, {"anchors": []}, {"anchors": [10, 20]}]
    serial = [ev.score(short, s)["test_loss"] for s in sols]
    with ThreadPoolExecutor(3) as ex:
        assert [m["test_loss"] for m in ex.map(lambda s: ev.score(short, s), sols)] == serial


def test_the_test_seeds_are_a_secret_draw_and_the_published_ones_stay(ev):
    """Issue 28: ``test``'s training seeds come from the object's secret key (one draw per object, another on another
    object); model, steps and budget are the published set's; ``test_published`` and ``public_seeds`` give seeds 2, 3."""
    published = ev.load_instances("test_published")
    assert [i.seed for i in published] == [2, 3]
    drawn = ev.load_instances("test")
    assert drawn == ev.load_instances("test")  # one draw per object
    assert all("secret" in i.name and str(i.seed) not in i.name for i in drawn)
    assert not {i.seed for i in drawn} & {0, 1, 2, 3}
    assert [(i.model, i.steps, i.budget) for i in drawn] == [(i.model, i.steps, i.budget) for i in published]
    assert {i.seed for i in drawn}.isdisjoint({i.seed for i in GrAPEAnchor().load_instances("test")})
    public = GrAPEAnchor()
    public.public_seeds = True
    assert public.load_instances("test") == published
    assert ev.reference_figures["none"]["test_published"] == ev.reference_figures["none"]["test"]

"""hifo.evaluators.surface_recon: baselines reach their figures; the parent rebuilds the surface from
the returned scores, so a forged or malformed solution cannot claim a metric."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.surface_recon import SurfaceRecon
from evalkit import assert_figure, compile_entry, run_instance

compiled = partial(compile_entry, entry="reorient")


@pytest.fixture(scope="module")
def ev():
    return SurfaceRecon()


def test_declaration(ev):
    assert ev.name == "surface_recon" and ev.direction == "minimize" and ev.primary_metric == "chamfer"
    assert set(ev.baselines) == {"vote", "keep", "adopt"}
    from hifo.evaluators.registry import get_evaluator
    assert isinstance(get_evaluator("surface_recon"), SurfaceRecon)


def test_train_reference_figures(ev):
    inst = ev.load_instances("train")
    for name, figures in ev.reference_figures.items():
        per = [run_instance(ev, compiled(ev.baselines[name]), i) for i in inst]
        agg = ev.aggregate(per)
        assert_figure(ev, agg["chamfer"], figures["train"]["chamfer"], "chamfer", name)
        assert_figure(ev, agg["faces"], figures["train"]["faces"], "faces", name)
        assert all(p["genus0"] == 1.0 and p["euler"] == 2.0 for p in per), name


def test_scores_are_rebuilt_and_checked_by_the_parent(ev):
    inst = ev.load_instances("train")[0]
    sol = ev.solve(compiled(ev.baselines["keep"]), inst)
    honest = ev.score(inst, sol)
    # The metric depends on the scores alone, recomputed by the parent: a claimed metric is ignored.
    assert ev.score(inst, dict(sol, chamfer=0.0)) == honest
    # All-zero scores: every tet has zero evidence, carving runs to the end; still a genus-0 surface.
    hull = ev.score(inst, {"scores": [0.0] * len(inst.complex.faces)})
    assert hull["genus0"] == 1.0 and hull["chamfer"] != honest["chamfer"]
    for bad in ({"scores": sol["scores"][:-1]}, {"scores": [float("nan")] * len(sol["scores"])},
                {"scores": ["1"] * len(sol["scores"])}, {"scores": [True] * len(sol["scores"])},
                {"faces": []}, [0.0]):
        with pytest.raises(InfeasibleSolution):
            ev.score(inst, bad)


def test_the_fitness_rewards_carving(ev):
    # On the non-convex train shapes the convex hull is a poor answer: the spectral orientation alone
    # (keep) carves a six-armed star to well under half the hull's Chamfer (0.032 vs 0.137).
    from hifo.evaluators.surface_recon import TRUTH_SAMPLES, _truth
    from hifo.problems.surface_recon import chamfer, convex_hull

    inst = next(i for i in ev.load_instances("train") if i.shape == "lobes6")
    pts = inst.complex.points
    hull = chamfer(pts, convex_hull(pts), _truth(inst.shape), TRUTH_SAMPLES)
    carved = ev.score(inst, ev.solve(compiled(ev.baselines["keep"]), inst))
    assert carved["genus0"] == 1.0 and carved["chamfer"] < 0.5 * hull


def test_slot_sees_only_arrays_and_bad_returns_fail(ev):
    inst = ev.load_instances("train")[0]
    seen = set()

    def spy(**kw):
        seen.update(type(v).__name__ for v in kw.values())
        return kw["score"]

    ev.solve(spy, inst)
    assert seen <= {"ndarray", "int"}
    with pytest.raises(ValueError):
        ev.solve(lambda **kw: kw["score"][:-1], inst)
    with pytest.raises(ValueError):
        ev.solve(lambda **kw: np.full_like(kw["score"], np.inf), inst)


@pytest.mark.slow
def test_test_set_figures(ev):
    inst = ev.load_instances("test")
    for name, figures in ev.reference_figures.items():
        agg = ev.aggregate([run_instance(ev, compiled(ev.baselines[name]), i) for i in inst])
        assert_figure(ev, agg["chamfer"], figures["test"]["chamfer"], "chamfer", name)


@pytest.mark.slow
def test_through_the_sandbox(ev):
    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.sandbox import LocalExecutor

    with LocalExecutor(max_workers=1) as executor:
        score = CandidateEvaluator(ev, "train", executor).evaluate(ev.baselines["vote"])
    assert score.feasible, score.error
    assert_figure(ev, score.objective, ev.reference_figures["vote"]["train"]["chamfer"], "chamfer")

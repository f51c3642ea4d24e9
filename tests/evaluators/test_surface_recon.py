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


def test_the_test_set_is_a_secret_draw_and_the_published_one_stays(ev):
    # issue 28: the test point clouds are sampled from seeds of the object's secret key (about 0.2 s a draw)
    a, b = SurfaceRecon(), SurfaceRecon()
    da, db = a.load_instances("test"), b.load_instances("test")
    published = ev.load_instances("test_published")
    assert ev.secret_sets == ("test",) and [i.shape for i in da] == [i.shape for i in published]
    assert all("secret" in i.name for i in da) and [i.name for i in da] == [i.name for i in db]
    assert not any(np.array_equal(x.complex.points, y.complex.points) for x, y in zip(da, db))
    assert not any(np.array_equal(x.complex.points, y.complex.points) for x, y in zip(da, published))
    assert a.load_instances("test")[0] is da[0]  # one draw per object
    public = SurfaceRecon()
    public.public_seeds = True
    assert [i.name for i in public.load_instances("test")] == [i.name for i in published] == [
        "superquadric_n600_s0.005", "superquadric_n600_s0.02", "dumbbell_n600_s0.005", "dumbbell_n600_s0.02",
        "lobes4_n600_s0.005", "lobes4_n600_s0.02", "u_tube_n600_s0.005", "u_tube_n600_s0.02"]
    assert all(np.array_equal(x.complex.points, y.complex.points)
               for x, y in zip(public.load_instances("test"), published))
    assert [i.name for i in a.load_instances("train")] == [i.name for i in public.load_instances("train")]
    with pytest.raises(KeyError):
        ev.load_instances("nope")


def test_published_test_set_first_figures(ev):
    # the published test set reproduces its stored figures (the first two instances; all eight in the slow test)
    inst = ev.load_instances("test_published")[:2]
    per = {name: ev.aggregate([run_instance(ev, compiled(ev.baselines[name]), i) for i in inst])["chamfer"]
           for name in ev.baselines}
    assert per == pytest.approx({"vote": 0.027449, "keep": 0.026928, "adopt": 0.034846}, abs=5e-7)


@pytest.mark.slow
def test_test_set_figures(ev):
    inst = ev.load_instances("test_published")
    for name, figures in ev.reference_figures.items():
        agg = ev.aggregate([run_instance(ev, compiled(ev.baselines[name]), i) for i in inst])
        assert_figure(ev, agg["chamfer"], figures["test_published"]["chamfer"], "chamfer", name)
        assert figures["test_published"] == figures["test"]


@pytest.mark.slow
def test_through_the_sandbox(ev):
    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.sandbox import LocalExecutor

    with LocalExecutor(max_workers=1) as executor:
        score = CandidateEvaluator(ev, "train", executor).evaluate(ev.baselines["vote"])
    assert score.feasible, score.error
    assert_figure(ev, score.objective, ev.reference_figures["vote"]["train"]["chamfer"], "chamfer")

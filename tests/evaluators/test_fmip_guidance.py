"""hifo.evaluators.fmip_guidance: baselines within bands, guidance checked, forgeries rejected."""

from __future__ import annotations

from functools import partial
import json

import pytest

import torch  # noqa: F401  (a hard dependency)

from hifo.evaluators.base import InfeasibleSolution  # noqa: E402
from hifo.evaluators.fmip_guidance import FMIPGuidance, checked_guidance  # noqa: E402
from evalkit import assert_figure, compile_entry


@pytest.fixture(scope="module")
def ev():
    return FMIPGuidance()


compiled = partial(compile_entry, entry="guidance")


def test_declaration(ev):
    assert ev.name == "fmip_guidance" and ev.primary_metric == "primal_integral"
    assert ev.limits.memory_mb >= 8192
    assert set(ev.instance_sets) == {"train", "test", "test_published"} and ev.secret_sets == ("test",)
    assert set(ev.baselines) == {"official_defaults", "unguided"}
    # measured figures of both baselines are stored (python -m hifo.evaluators.fmip_guidance)
    assert set(ev.reference_figures) == set(ev.baselines)
    for figures in ev.reference_figures.values():
        assert 0.0 <= figures["train"]["primal_integral"] <= 1.0


def test_guidance_values_are_checked():
    ok = checked_guidance(lambda t, s, n: {"weight_obj": 1, "weight_viol": 1, "temperature": 1,
                                           "step_size": 0.1})
    assert ok(0.0, 0, 10)["weight_obj"] == 1.0
    bad = checked_guidance(lambda t, s, n: {"weight_obj": float("nan"), "weight_viol": 1,
                                            "temperature": 1, "step_size": 0.1})
    with pytest.raises(ValueError):
        bad(0.0, 0, 10)
    with pytest.raises(KeyError):
        checked_guidance(lambda t, s, n: {"weight_obj": 1})(0.0, 0, 10)


@pytest.mark.slow
def test_baseline_scores_within_band_and_forgery_rejected(ev):
    insts = ev.load_instances("train")
    h = compiled(ev.baselines["official_defaults"])
    sols = [json.loads(json.dumps(ev.solve(h, i))) for i in insts]
    per = [ev.score(i, s) for i, s in zip(insts, sols)]
    agg = ev.aggregate(per)
    assert_figure(ev, agg["primal_integral"], ev.reference_figures["official_defaults"]["train"]["primal_integral"],
                  "primal_integral", "official_defaults")
    with pytest.raises(InfeasibleSolution):
        ev.score(insts[0], {**sols[0], "x": [0.0] * insts[0]["milp"].n_vars})
    with pytest.raises(InfeasibleSolution):
        ev.score(insts[0], {"x": None})


def test_the_secret_test_draw_comes_from_the_distribution_the_network_was_trained_on(ev):
    """issue 28: "test" is drawn per evaluator object from the generators, families and sizes of FMIP's training
    data (the weights' own record of them), so the trained network meets the distribution it knows; the published
    set stays as test_published (and "test" with public_seeds) with its stored budgets and references."""
    from hifo.evaluators._milp_sets import fingerprint
    from hifo.problems.milp import SIZES, fmip

    trained_on = json.loads(fmip.WEIGHTS.with_suffix(".json").read_text())
    drawn = ev.load_instances("test")
    assert {i["milp"].family for i in drawn} == set(trained_on["families"])
    assert all(trained_on["sizes"][f] == SIZES[f] for f in trained_on["families"])  # the draw's generator sizes
    assert all("secret" in i["milp"].name and i["best_known"] is None for i in drawn)
    published = ev.load_instances("test_published")
    public = FMIPGuidance()
    public.public_seeds = True
    assert [i["milp"].name for i in public.load_instances("test")] == [i["milp"].name for i in published]
    assert [i["work_limit"] for i in public.load_instances("test")] == [i["work_limit"] for i in published]
    assert {fingerprint(i["milp"]) for i in drawn}.isdisjoint(fingerprint(i["milp"]) for i in published)


@pytest.mark.slow
def test_the_guidance_cannot_tell_instances_apart(ev):
    """Memorised instances cannot pay here: the slot's arguments are the same on every instance (t, step, n_steps
    only; in the sandbox a fresh slot process per instance), so a table keyed by the instance has no key."""
    calls: dict[str, list] = {}
    for inst in ev.load_instances("train")[:2]:
        seen = calls.setdefault(inst["milp"].name, [])

        def recording(t, step, n_steps, seen=seen):
            seen.append((t, step, n_steps))
            return {"weight_obj": 0.002, "weight_viol": 1.0, "temperature": 1.0, "step_size": 0.1}

        ev.solve(recording, {**inst, "work_limit": 4.0})
    first, second = calls.values()
    assert len(first) == 40 and first == second

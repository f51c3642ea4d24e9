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

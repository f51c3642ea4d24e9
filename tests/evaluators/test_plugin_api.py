"""``hifo.evaluators`` exports the plug-in API, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_the_plugin_api_is_exported_from_one_place():
    import hifo.evaluators as api
    from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, Score
    from hifo.evaluators.registry import get_evaluator

    assert (api.Evaluator, api.FunctionTemplate, api.InfeasibleSolution, api.Limits, api.Score, api.get_evaluator) == (
        Evaluator, FunctionTemplate, InfeasibleSolution, Limits, Score, get_evaluator)
    assert set(api.__all__) <= set(dir(api))
    assert api.get_evaluator("bpp_online").name == "bpp_online"
    with pytest.raises(AttributeError, match="no attribute 'Evaluatr'"):
        api.Evaluatr  # noqa: B018


def test_importing_one_evaluator_does_not_load_the_registry():
    code = ("import sys, hifo.evaluators.bpp_online; "
            "print('hifo.evaluators.registry' in sys.modules, 'importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "False"

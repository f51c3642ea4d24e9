"""Shared helpers of the evaluator tests: run a heuristic in-process the way the sandbox child does.

A module with a unique name rather than ``conftest.py``: pytest imports every ``conftest.py`` as the
module ``conftest``, so ``from conftest import ...`` would depend on which one was loaded last. Test
modules here import it directly (pytest puts this folder on ``sys.path``, there is no ``__init__.py``).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Callable, Iterator

from hifo.evaluators.base import Evaluator


def compile_entry(source: str, entry: str) -> Callable[..., Any]:
    """The function ``entry`` of a heuristic's full source (trusted test code, so a plain exec)."""
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace[entry]


def roundtrip(solution: Any) -> Any:
    """What the sandbox does to a solution on its way to the parent: JSON out and back."""
    return json.loads(json.dumps(solution))


def run_instance(ev: Evaluator, heuristic: Callable[..., Any], instance: Any) -> dict[str, float]:
    """Solve one instance with ``heuristic``, round-trip the solution, score it in the parent."""
    return ev.score(instance, roundtrip(ev.solve(heuristic, instance)))


def run_set(ev: Evaluator, heuristic: Callable[..., Any], instance_set: str
            ) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Per-instance metrics and their aggregate over a named instance set."""
    per = [run_instance(ev, heuristic, inst) for inst in ev.load_instances(instance_set)]
    return per, ev.aggregate(per)


def assert_reference_figures(ev: Evaluator, instance_set: str, entry: str, rel: float = 1e-4) -> None:
    """Every baseline, compiled in-process, reproduces its stored figures on ``instance_set``."""
    import pytest

    for name, figures in ev.reference_figures.items():
        _, agg = run_set(ev, compile_entry(ev.baselines[name], entry), instance_set)
        for metric, value in figures[instance_set].items():
            assert agg[metric] == pytest.approx(value, rel=rel), (name, metric)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one thread while the block runs (the torch evaluators' figures are measured that way)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)

"""Shared helpers of the evaluator tests: run a heuristic in-process the way the sandbox child does.

A module with a unique name rather than ``conftest.py``: pytest imports every ``conftest.py`` as the
module ``conftest``, so ``from conftest import ...`` would depend on which one was loaded last. Test
modules here import it directly (pytest puts this folder on ``sys.path``, there is no ``__init__.py``).
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
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


def figure_tolerance(ev: Evaluator, stored: float, metric: str = "*") -> float:
    """How far a re-measured figure may lie from a stored one: the evaluator's declared, measured
    ``fitness_rtol`` (0 for a bit-reproducible evaluator) plus half a unit in the last decimal the
    figure was stored with (``0.041881`` is stored to 1e-6). Nothing else: a wider band hides a
    fitness that depends on the machine."""
    exponent = Decimal(repr(float(stored))).normalize().as_tuple().exponent
    rounding = 0.5 * 10.0 ** exponent if isinstance(exponent, int) and exponent < 0 else 0.0
    return ev.metric_rtol(metric) * abs(stored) + rounding * (1 + 1e-9)


class ToleranceUsed(UserWarning):
    """A figure reproduced only within the evaluator's declared ``fitness_rtol``, not to the stored rounding:
    listed in pytest's warning summary (and so in CI's log), to tell which declared tolerances a CPU needs."""


def assert_figure(ev: Evaluator, measured: float, stored: float, metric: str, what: Any = "") -> None:
    """``measured`` reproduces ``stored`` within :func:`figure_tolerance`; warns (:class:`ToleranceUsed`)
    when it needed more than the stored rounding."""
    import warnings

    from benchmarks.llm_speed import cpu_model  # the CPU's model name, as the benchmarks record it

    tol = figure_tolerance(ev, stored, metric)
    diff = abs(float(measured) - float(stored))
    exact = tol - ev.metric_rtol(metric) * abs(stored)
    if exact < diff <= tol:
        warnings.warn(ToleranceUsed(f"{ev.name} {what} {metric}: measured {measured!r}, stored {stored!r} "
                                    f"(rel {diff / max(abs(float(stored)), 1e-300):.2e}, within fitness_rtol "
                                    f"{ev.metric_rtol(metric):g}; CPU {cpu_model()})"))
    assert diff <= tol, (
        f"{what}: measured {measured!r}, stored {stored!r} (declared tolerance {tol:.3g}: "
        f"fitness_rtol={ev.metric_rtol(metric):g} plus the stored figure's rounding)")


def assert_reference_figures(ev: Evaluator, instance_set: str, entry: str) -> None:
    """Every baseline, compiled in-process, reproduces its stored figures on ``instance_set`` within the
    evaluator's declared tolerance (:func:`figure_tolerance`)."""
    for name, figures in ev.reference_figures.items():
        _, agg = run_set(ev, compile_entry(ev.baselines[name], entry), instance_set)
        for metric, value in figures[instance_set].items():
            assert_figure(ev, agg[metric], value, metric, (name, instance_set))


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

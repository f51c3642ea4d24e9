"""Tiny trusted solvers for the sandbox tests, imported by the sandbox child.

The child runs ``python -I`` (no PYTHONPATH, no cwd on sys.path), so jobs built here pass
this directory through ``Job.sys_path`` and name the solver ``"solvers:apply"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

HERE = str(Path(__file__).resolve().parent)


def apply(function: Callable[[Any], Any], instance: Any) -> Any:
    """The whole 'algorithm': call the heuristic on the instance."""
    return function(instance)


class ClassSolver:
    """Stands for an evaluator class: the sandbox calls ``ClassSolver.solve``."""

    @staticmethod
    def solve(function: Callable[[Any], Any], instance: Any) -> Any:
        return {"value": function(instance)}


def make_job(code: str, instances: list[Any] | None = None, entry: str = "f", solver: str = "solvers:apply", **limits: Any):
    """A Job for ``code`` with this module as solver; keyword arguments become JobLimits."""
    from sandbox import Job, JobLimits

    return Job(
        code=code,
        entry=entry,
        solver=solver,
        instances=[1] if instances is None else instances,
        limits=JobLimits(**limits),
        sys_path=(HERE,),
    )

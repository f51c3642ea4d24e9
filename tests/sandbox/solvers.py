"""Tiny trusted solvers for the sandbox tests, imported by the sandbox child.

The child runs ``python -I -S`` (no PYTHONPATH, no cwd on sys.path), so jobs built here pass
this directory through ``Job.sys_path`` and name the solver ``"solvers:apply"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

HERE = str(Path(__file__).resolve().parent)
SCALE = 10  # module state a candidate may try to tamper with (see ``scaled``)


def apply(function: Callable[[Any], Any], instance: Any) -> Any:
    """The whole 'algorithm': call the heuristic on the instance."""
    return function(instance)


def scaled(function: Callable[[Any], Any], instance: Any) -> Any:
    """An 'algorithm' that reads module state after the candidate was loaded."""
    return {"value": function(instance), "scale": SCALE}


def check_scaled(instance: Any, solution: Any) -> bool:
    """The trusted side of ``scaled``: recompute from the solution alone, as score() does."""
    return solution["scale"] == 10


class ClassSolver:
    """Stands for an evaluator class: the sandbox calls ``ClassSolver.solve``."""

    @staticmethod
    def solve(function: Callable[[Any], Any], instance: Any) -> Any:
        return {"value": function(instance)}


def make_job(code: str, instances: list[Any] | None = None, entry: str = "f", solver: str = "solvers:apply",
             preload: tuple[str, ...] = (), **limits: Any):
    """A Job for ``code`` with this module as solver; keyword arguments become JobLimits."""
    from hifo.sandbox import Job, JobLimits

    return Job(
        code=code,
        entry=entry,
        solver=solver,
        instances=[1] if instances is None else instances,
        limits=JobLimits(**limits),
        sys_path=(HERE,),
        preload=preload,
    )


def with_pid(function: Callable[[Any], Any], instance: Any) -> Any:
    """The heuristic's answer next to the pid of the process running this 'algorithm'."""
    import os

    return {"value": function(instance), "pid": os.getpid()}


def slot_probe(function: Callable[[Any], Any], instance: Any) -> Any:
    """The heuristic's answer and what the algorithm process sees of itself and of the slot server: its own pid
    and dumpable flag (``PR_GET_DUMPABLE``), and whether it can still read the server's ``/proc/<pid>/stat``."""
    import ctypes
    import os

    value = function(instance)
    server = getattr(function, "server_pid", None)
    with open(f"/proc/{server}/stat", "rb") as handle:
        ticks = handle.read().rsplit(b")", 1)[1].split()[11:13]  # utime, stime
    return {"value": value, "pid": os.getpid(), "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),
            "server_pid": server, "server_stat": [int(t) for t in ticks], "slot_cpu_s": function.slot_cpu_s}

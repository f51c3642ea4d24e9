"""Running untrusted candidate code: isolation, limits, warm workers, executors.

The sandbox knows only the :class:`Job` it is handed (it imports nothing else of hifo).

Job, JobLimits
    What to run: candidate source, the function to take from it, a trusted solver
    (``"module:Attr"``) called as ``solver(function, instance)`` per instance, limits, and the
    modules a warm worker should import once (``preload``).
SandboxResult
    What happened: status ("ok", "error", "timeout", "memory", "output_limit", "crashed",
    "invalid"), JSON-decoded solutions, a readable reason, capped output, the layers applied
    and the gaps left (``isolation``).
run_job
    Run one job in a pristine child process (a fresh interpreter by default, or ``warm=True``).
LocalExecutor
    ``submit(job) -> Future[SandboxResult]`` on this machine; warm workers by default.
RayExecutor
    The same runner on the nodes of a Ray cluster (``pip install 'hifo[ray]'``).
make_executor
    ``make_executor(kind, isolation, max_workers, address)``: what the CLI flags build.
InProcessExecutor
    UNSAFE, no isolation: runs the candidate in this process. Benchmarks and trusted
    baselines only.
WarmPool
    The warm workers (zygotes) kept per solver module; one is shared by default.
isolation_report, IsolationPlan, IsolationUnavailable, resolve_isolation, LEVELS
    Which layers this machine can apply (``hifo doctor``), what a level ("strict",
    "standard", "minimal") resolves to, and the error ``strict`` raises when a layer is missing.

Names are loaded lazily, so the sandbox child, which imports ``hifo.sandbox._child``, does not
pay for the parent-side machinery (subprocess, thread pools) on every spawn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._layers import LEVELS, IsolationPlan, IsolationUnavailable
    from ._layers import resolve as resolve_isolation
    from ._pool import WarmPool
    from ._ray import RayExecutor
    from .doctor import isolation_report
    from .executor import Executor, InProcessExecutor, LocalExecutor, make_executor
    from .job import Job, JobLimits, SandboxResult, Status
    from .runner import run_job

_EXPORTS = {
    "Job": ".job",
    "JobLimits": ".job",
    "SandboxResult": ".job",
    "Status": ".job",
    "run_job": ".runner",
    "Executor": ".executor",
    "LocalExecutor": ".executor",
    "InProcessExecutor": ".executor",
    "isolation_report": ".doctor",
    "make_executor": ".executor",
    "RayExecutor": "._ray",
    "WarmPool": "._pool",
    "IsolationPlan": "._layers",
    "IsolationUnavailable": "._layers",
    "LEVELS": "._layers",
    "resolve_isolation": "._layers:resolve",
}
# static, so linters and type checkers see the lazy re-exports (tests check it equals _EXPORTS)
__all__ = ["Executor", "InProcessExecutor", "IsolationPlan", "IsolationUnavailable", "Job", "JobLimits",
           "LEVELS", "LocalExecutor", "RayExecutor", "SandboxResult", "Status", "WarmPool",
           "isolation_report", "make_executor", "resolve_isolation", "run_job"]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module, __name__), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

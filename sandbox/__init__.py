"""Running untrusted candidate code: isolation, limits, executors.

The sandbox knows only the :class:`Job` it is handed (it imports nothing else of hifo).

Job, JobLimits
    What to run: candidate source, the function to take from it, a trusted solver
    (``"module:Attr"``) called as ``solver(function, instance)`` per instance, and limits.
SandboxResult
    What happened: status ("ok", "error", "timeout", "memory", "output_limit", "crashed",
    "invalid"), JSON-decoded solutions, a readable reason, capped output, the layers applied.
run_job
    Run one job in a fresh child process: own session and process group, rlimits, scrubbed
    environment, temporary directory, wall-clock timeout that kills the whole group.
LocalExecutor
    ``submit(job) -> Future[SandboxResult]`` on a thread pool, one child per job.
InProcessExecutor
    UNSAFE, no isolation: runs the candidate in this process. Benchmarks and trusted
    baselines only.
isolation_report
    Which isolation layers this machine can apply (for ``hifo doctor``).

Names are loaded lazily, so the sandbox child, which imports ``sandbox._child``, does not
pay for the parent-side machinery (subprocess, thread pools) on every spawn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandbox.doctor import isolation_report
    from sandbox.executor import Executor, InProcessExecutor, LocalExecutor
    from sandbox.job import Job, JobLimits, SandboxResult, Status
    from sandbox.runner import run_job

_EXPORTS = {
    "Job": "sandbox.job",
    "JobLimits": "sandbox.job",
    "SandboxResult": "sandbox.job",
    "Status": "sandbox.job",
    "run_job": "sandbox.runner",
    "Executor": "sandbox.executor",
    "LocalExecutor": "sandbox.executor",
    "InProcessExecutor": "sandbox.executor",
    "isolation_report": "sandbox.doctor",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

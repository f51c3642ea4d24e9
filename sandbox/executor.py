"""Executors: anything with ``submit(job) -> Future[SandboxResult]`` runs sandbox jobs.

* :class:`LocalExecutor` - a thread pool on this machine; each thread runs :func:`run_job`
  (one fresh, isolated child process per job). The default.
* :class:`InProcessExecutor` - **UNSAFE**: runs the candidate in the calling process with no
  isolation at all. For benchmarks and trusted baselines only.

Later (not in sandbox v1): a Ray executor for several machines and a warm-worker pool (a
pre-imported interpreter that forks per candidate, saving the ~0.1-0.2 s spawn). Both will
implement the same :class:`Executor` protocol, so callers need not change.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Iterator, Protocol, runtime_checkable

from sandbox import _execute
from sandbox.job import Job, SandboxResult
from sandbox.runner import _run


@runtime_checkable
class Executor(Protocol):
    """What the agent needs from an executor (Nevergrad-style: any object with ``submit``)."""

    def submit(self, job: Job) -> Future[SandboxResult]: ...

    def map(self, jobs: Iterable[Job]) -> Iterator[SandboxResult]: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


class _Base:
    def map(self, jobs: Iterable[Job]) -> Iterator[SandboxResult]:
        """Submit every job now; yield the results in submission order."""
        futures = [self.submit(job) for job in jobs]  # type: ignore[attr-defined]

        def results() -> Iterator[SandboxResult]:
            for future in futures:
                yield future.result()

        return results()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown(wait=True, cancel_futures=exc_info[0] is not None)  # type: ignore[attr-defined]


class LocalExecutor(_Base):
    """Run jobs in parallel, each in its own sandboxed child process.

    ``max_workers`` children at most run at once (default: ``os.cpu_count()``). A job not yet
    started can be cancelled with ``future.cancel()``; ``shutdown(cancel_futures=True)``
    cancels those and also kills the children of jobs already running (their results say
    ``"cancelled: executor shut down"``).
    """

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers or os.cpu_count() or 1
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="hifo-sandbox")
        self._running: set[Any] = set()
        self._lock = threading.Lock()
        self._closing = False

    def submit(self, job: Job) -> Future[SandboxResult]:
        return self._pool.submit(self._run_tracked, job)

    def _run_tracked(self, job: Job) -> SandboxResult:
        handles: list[Any] = []

        def on_start(process: Any) -> None:
            with self._lock:
                self._running.add(process)
                handles.append(process)
                if self._closing:
                    process.kill("executor shut down")

        try:
            return _run(job, on_start)
        finally:
            with self._lock:
                self._running.difference_update(handles)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            with self._lock:
                self._closing = True
                running = list(self._running)
            for process in running:
                process.kill("executor shut down")
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


class InProcessExecutor(_Base):
    """**UNSAFE - NO ISOLATION.** Runs the candidate inside the calling process.

    The candidate can read every secret of this process (API keys included), write any file,
    loop forever (no timeout is enforced), exhaust memory, or crash the interpreter. Use it
    only for code you trust: reference baselines and the overhead benchmark. Jobs run one at
    a time, synchronously, in :meth:`submit`; the returned future is already done. The result
    goes through the same JSON encoding as the sandbox, so statuses "error", "invalid",
    "memory" and "output_limit" mean the same; "timeout" and "crashed" cannot happen here.
    """

    def __init__(self) -> None:
        self._shut = False

    def submit(self, job: Job) -> Future[SandboxResult]:
        if self._shut:
            raise RuntimeError("cannot submit after shutdown")
        future: Future[SandboxResult] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(run_in_process(job))
        except Exception as exc:  # the caller sees it via the future; Ctrl-C still propagates
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shut = True


def run_in_process(job: Job) -> SandboxResult:
    """The unsafe path of :class:`InProcessExecutor` (same result shape as ``run_job``)."""
    started = time.monotonic()
    # No rlimits apply here, so reasons must not claim one was hit.
    limits = {"max_solution_bytes": job.limits.max_solution_bytes}
    out, err = bytearray(), bytearray()
    added = [p for p in job.sys_path if p not in sys.path]
    sys.path[0:0] = added
    try:
        with (
            contextlib.redirect_stdout(_execute.CappedText(out.extend, job.limits.max_output_bytes)) as o,
            contextlib.redirect_stderr(_execute.CappedText(err.extend, job.limits.max_output_bytes)) as e,
        ):
            # Not BaseException: Ctrl-C must still interrupt the caller's process.
            outcome = _execute.execute(
                job.code, job.entry, job.solver, list(job.instances), limits, catch=(Exception, SystemExit)
            )
    finally:
        for path in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(path)
        sys.modules.pop(_execute.CANDIDATE_MODULE, None)
    solutions = json.loads("[" + ",".join(outcome["parts"]) + "]")
    return SandboxResult(
        status=outcome["status"],
        solutions=solutions,
        error=outcome["error"],
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        wall_s=time.monotonic() - started,
        isolation={"sandbox": "none", "warning": "UNSAFE: ran in the calling process with no isolation"},
        output_truncated=o.truncated or e.truncated,
    )

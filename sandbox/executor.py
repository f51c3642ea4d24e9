"""Executors: anything with ``submit(job) -> Future[SandboxResult]`` runs sandbox jobs.

* :class:`LocalExecutor` - a thread pool on this machine; each job runs in a pristine child
  forked from a warm worker (``warm=True``, the default) or from a zygote started for it alone
  (``warm=False``, a fresh interpreter per candidate), with the isolation level's layers.
* :class:`hifo.sandbox.RayExecutor` - the same runner on the nodes of a Ray cluster
  (:mod:`hifo.sandbox._ray`; optional extra ``hifo[ray]``).
* :class:`InProcessExecutor` - **UNSAFE**: runs the candidate in the calling process with no
  isolation at all. For benchmarks and trusted baselines only.
* :func:`make_executor` - the factory behind ``--executor local|ray --isolation ... --address``.
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

from . import _execute
from ._layers import IsolationPlan
from ._pool import WarmPool, default_pool
from .job import Job, SandboxResult
from .runner import JobHandle, _run, as_plan


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


class _Tracked:
    """The kill handles of one submitted job, and why it was cancelled (if it was)."""

    def __init__(self) -> None:
        self.handles: list[JobHandle] = []
        self.reason: str | None = None


class LocalExecutor(_Base):
    """Run jobs in parallel on this machine, each in its own isolated child process.

    ``max_workers`` jobs at most run at once (default: ``os.cpu_count()``).
    ``isolation``: ``"strict"`` (refuses, raising :class:`~sandbox.IsolationUnavailable`, when
    a layer is missing here), ``"standard"`` (default: every layer available, a loud warning
    naming the missing ones) or ``"minimal"`` (sandbox v1: process layer only, loud warning);
    resolved once, at construction. ``warm``: fork candidates from warm workers that have
    imported the solver's module (and ``Job.preload``) already; ``pool``: the
    :class:`~sandbox.WarmPool` to take them from (default: one shared by the process).
    A job not yet started can be cancelled with ``future.cancel()``; ``cancel(future, reason)``
    also kills a running one;
    ``shutdown(cancel_futures=True)`` also kills the candidates already running (their results
    say ``"cancelled: executor shut down"``). Each job's deadline is ``job.limits.timeout_s``.
    """

    def __init__(self, max_workers: int | None = None, *, isolation: str | IsolationPlan = "standard",
                 warm: bool = True, pool: WarmPool | None = None) -> None:
        self.max_workers = max_workers or os.cpu_count() or 1
        self.plan = as_plan(isolation)
        self.warm = warm
        self._warm_pool = (pool or default_pool()) if warm else None
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="hifo-sandbox")
        self._running: set[JobHandle] = set()
        self._tracked: dict[Future, _Tracked] = {}
        self._lock = threading.Lock()
        self._closing = False

    def submit(self, job: Job) -> Future[SandboxResult]:
        tracked = _Tracked()
        future = self._pool.submit(self._run_tracked, job, tracked)
        with self._lock:
            self._tracked[future] = tracked
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future) -> None:
        with self._lock:
            self._tracked.pop(future, None)

    def cancel(self, future: Future, reason: str = "cancelled") -> bool:
        """Cancel one job: a queued one never starts, a running one is killed (its result says
        ``reason``). False when it had already finished."""
        if future.cancel():
            return True
        with self._lock:
            tracked = self._tracked.get(future)
            if tracked is None:
                return False
            tracked.reason = reason  # a job between its start and its handle is killed as it starts
            handles = list(tracked.handles)
        for handle in handles:
            handle.kill(reason)
        return True

    def _run_tracked(self, job: Job, tracked: "_Tracked") -> SandboxResult:
        handles = tracked.handles

        def on_start(handle: JobHandle) -> None:
            with self._lock:
                self._running.add(handle)
                handles.append(handle)
                if self._closing:
                    handle.kill("executor shut down")
                elif tracked.reason is not None:
                    handle.kill(tracked.reason)

        try:
            return _run(job, on_start, self.plan, self._warm_pool)
        finally:
            with self._lock:
                self._running.difference_update(handles)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            with self._lock:
                self._closing = True
                running = list(self._running)
            for handle in running:
                handle.kill("executor shut down")
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def make_executor(kind: str = "local", isolation: str = "standard", max_workers: int | None = None,
                  address: str | None = None, *, warm: bool = True) -> Any:
    """The executor behind the CLI flags ``--executor local|ray``, ``--isolation
    strict|standard|minimal``, ``--workers N`` and ``--address ADDR`` (Ray only: ``auto`` or
    ``ray://host:10001``; none starts a local Ray instance)."""
    if kind == "local":
        if address:
            raise ValueError("--address is only meaningful with --executor ray")
        return LocalExecutor(max_workers, isolation=isolation, warm=warm)
    if kind == "ray":
        from ._ray import RayExecutor

        return RayExecutor(address, max_workers=max_workers, isolation=isolation, warm=warm)
    raise ValueError(f"unknown executor {kind!r}: expected 'local' or 'ray'")


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
                job.code, job.entry, job.solver, list(job.instances), limits, catch=(Exception, SystemExit),
                fence=job.fence,
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
        instance_s=list(outcome.get("instance_s") or []),
    )

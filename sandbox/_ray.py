"""Ray executor: the same sandbox runner, on whichever node of a Ray cluster has a free CPU.

Optional (``pip install 'hifo[ray]'``); ``ray`` is imported only when a :class:`RayExecutor`
is made. Each job becomes one Ray task, :func:`run_on_node`, which resolves the isolation
level *on that node* (a node without bubblewrap gets ``standard``'s warning, or refuses under
``strict`` with a clear error result) and runs the job through the node's warm workers: Ray
keeps its worker processes between tasks, and each keeps a :class:`~sandbox.WarmPool`, so
zygotes stay warm across tasks. Results stream back as tasks finish (each ``submit`` returns
its own future). A task whose worker or node dies is retried elsewhere by Ray
(``max_retries``); a candidate's failure is a *result*, never an exception, so it is not
retried. The agent's state stays in the driver: a task gets a :class:`Job` and returns a
:class:`SandboxResult`, nothing else.

Every node needs the same hifo (and evaluator packages) installed, and bubblewrap for the
namespace layers.
"""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import Future
from typing import Any

from .job import Job, SandboxResult

_NODE_POOL: Any = None
_NODE_LOCK = threading.Lock()


def run_on_node(job: Job, isolation: str, warm: bool) -> SandboxResult:
    """Body of the Ray task (also callable directly: it is the plain runner plus a node name)."""
    from ._layers import IsolationUnavailable
    from .runner import _run, as_plan

    global _NODE_POOL
    try:
        plan = as_plan(isolation)
    except IsolationUnavailable as exc:
        return SandboxResult(status="error", error=f"sandbox setup failed on node {socket.gethostname()}: {exc}")
    pool = None
    if warm:
        from ._pool import WarmPool

        with _NODE_LOCK:
            if _NODE_POOL is None:
                _NODE_POOL = WarmPool()
            pool = _NODE_POOL
    result = _run(job, None, plan, pool)
    result.isolation = {**result.isolation, "node": _node_name(), "worker_pid": os.getpid()}
    return result


def _node_name() -> str:
    """This Ray node: host name and Ray's node id (several raylets may share one host)."""
    host = socket.gethostname()
    try:
        import ray

        return f"{host}/{ray.get_runtime_context().get_node_id()[:12]}"
    except Exception:  # called directly, outside a Ray task
        return host


def _leave_client_mode(ray: Any) -> None:
    """Undo what a failed ``ray.init("ray://...")`` leaves behind. Ray switches the process into client mode
    before it connects and, when the connection or the server's start-up fails, closes the connection but
    leaves client mode on (Ray 2.60: ``_ClientContext.connect``'s ``except`` calls the context's ``disconnect``,
    which never clears the flag). Every later ``ray.init()`` in the process, local ones too, then goes through
    the client hooks and dies on an assertion (``internal_kv`` not initialised). The stub's ``disconnect``
    clears the flag once no client context is left; with no connection open it does nothing else."""
    try:
        from ray._private import client_mode_hook

        if client_mode_hook.is_client_mode_enabled and not ray.is_initialized():
            ray.util.disconnect()
    except Exception:  # the cleanup of a failure must not hide that failure
        pass


class RayExecutor:
    """``submit(job) -> Future[SandboxResult]`` on a Ray cluster.

    ``address``: ``None`` starts a local Ray instance (or joins the one this process already
    initialised), ``"auto"`` joins the cluster on this machine, ``"ray://host:10001"`` a
    remote one through Ray Client. ``max_workers`` caps the CPUs Ray may use when it starts a
    local instance. ``max_retries``: how often a task lost with its worker or node is
    re-run elsewhere. ``shutdown(cancel_futures=True)`` cancels what has not finished (force-
    killing the tasks' workers, whose zygotes die with them).
    """

    def __init__(self, address: str | None = None, *, max_workers: int | None = None,
                 isolation: str = "standard", warm: bool = True, max_retries: int = 3,
                 init_kwargs: dict[str, Any] | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ImportError("the Ray executor needs ray: pip install 'hifo[ray]'") from exc
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **(init_kwargs or {})}
            if address is None and max_workers:
                kwargs.setdefault("num_cpus", max_workers)
            try:
                ray.init(address=address, **kwargs)
            except BaseException:
                _leave_client_mode(ray)
                raise
            self._owns = True
        self.isolation, self.warm = isolation, warm
        self._task = ray.remote(run_on_node).options(num_cpus=1, max_retries=max_retries, retry_exceptions=False)
        self._refs: dict[Any, Future[SandboxResult]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Job) -> Future[SandboxResult]:
        if self._closed:
            raise RuntimeError("cannot submit after shutdown")
        ref = self._task.remote(job, self.isolation, self.warm)
        future: Future[SandboxResult] = ref.future()
        with self._lock:
            self._refs[ref] = future

        def forget(_f: Future[SandboxResult], ref: Any = ref) -> None:
            self._forget(ref)

        future.add_done_callback(forget)
        return future

    def cancel(self, future: Future, reason: str = "cancelled") -> None:
        """Stop the task behind ``future`` now (force-kills its Ray worker if it already runs;
        the warm sandbox workers under it die with it)."""
        with self._lock:
            refs = [ref for ref, f in self._refs.items() if f is future]
        for ref in refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # finished meanwhile, or its worker is already gone
                pass

    def _forget(self, ref: Any) -> None:
        with self._lock:
            self._refs.pop(ref, None)

    def map(self, jobs: Any) -> Any:
        futures = [self.submit(job) for job in jobs]
        return (future.result() for future in futures)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        with self._lock:
            pending = list(self._refs.items())
        if cancel_futures:
            for ref, _ in pending:
                try:
                    self._ray.cancel(ref, force=True)
                except Exception:  # already finished, or its worker is gone
                    pass
        elif wait:
            for _, future in pending:
                try:
                    future.result()
                except Exception:
                    pass
        if self._owns:
            self._ray.shutdown()

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown(wait=True, cancel_futures=exc_info[0] is not None)

"""``run_job``: one candidate, in a pristine process forked from a (warm or fresh) zygote.

Every job gets the process layer (own session, rlimits, allowlisted environment, a fresh
temporary directory, capped stdout/stderr/result, all its processes SIGKILLed when it ends) and
whatever the isolation plan adds (separate uid, pid/network namespaces, read-only file system,
bounded /tmp, seccomp; see :mod:`hifo.sandbox._layers`). ``isolation["gaps"]`` in each result lists
what this run did *not* get.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from typing import Any, Callable, get_args

from ._layers import LAYERS, IsolationPlan, resolve
from ._pool import WarmPool, start_zygote, stop_zygote
from ._process import ProcessOutcome, Zygote, ZygoteLost, ZygoteSpec, child_env, instance_seconds
from .job import Job, SandboxResult, Status

STATUSES = frozenset(get_args(Status))
_MAX_ERROR = 4000
_TRUNCATION_MARK = "\n[hifo sandbox: output truncated]"
ALWAYS_GAPS = (
    "the solver shares the candidate's process: a hostile candidate can forge its solutions "
    "(the parent's score() must check them; it never trusts the child)",
)
MISSING_GAPS = {
    "unprivileged_user": "the candidate runs as root: RLIMIT_NPROC is not enforced and it can raise its own hard "
    "rlimits where the host grants CAP_SYS_RESOURCE; only the wall-clock timeout still holds",
    "pid_namespace": "no pid namespace: the candidate sees host processes in /proc",
    "network_namespace": "no network namespace: the candidate can reach the network, loopback included",
    "read_only_fs": "no read-only view: the candidate can write wherever its user may (world-writable "
    "directories such as /tmp at least)",
    "bounded_disk": "disk use in the temporary directory is bounded per file (RLIMIT_FSIZE), not in total",
    "seccomp": "no seccomp filter: every system call its user may make is open to it",
}

PlanLike = str | IsolationPlan | None


def run_job(job: Job, *, isolation: PlanLike = None, warm: bool | WarmPool = False) -> SandboxResult:
    """Run ``job`` in a pristine, isolated process and return what happened.

    ``isolation``: ``"strict" | "standard" | "minimal"`` or a resolved plan (default
    ``"standard"``). ``warm``: False starts a zygote for this job alone (a fresh interpreter);
    True uses the process-wide warm pool; or pass a :class:`~sandbox.WarmPool`. Never raises
    for anything the candidate does; raises ``OSError`` if no worker can be started,
    :class:`~sandbox.IsolationUnavailable` for ``strict`` on a machine that lacks a layer.
    """
    from ._pool import default_pool

    pool = default_pool() if warm is True else warm or None
    return _run(job, None, as_plan(isolation), pool)


def as_plan(isolation: PlanLike, warn: bool = True) -> IsolationPlan:
    if isinstance(isolation, IsolationPlan):
        return isolation
    return _cached_plan(isolation or "standard", warn)


_PLANS: dict[str, IsolationPlan] = {}
_PLANS_LOCK = threading.Lock()


def _cached_plan(level: str, warn: bool) -> IsolationPlan:
    with _PLANS_LOCK:
        if level not in _PLANS:  # resolved (and warned about) once per process
            _PLANS[level] = resolve(level, warn=warn)
        return _PLANS[level]


class JobHandle:
    """Lets an executor kill a job from another thread, before or while it runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reason: str | None = None
        self._zygote: Any = None

    def kill(self, reason: str) -> None:
        with self._lock:
            self.reason = self.reason or reason
            zygote = self._zygote
        if zygote is not None:
            zygote.kill(reason)

    def attach(self, zygote: Any) -> str | None:
        with self._lock:
            self._zygote = zygote
            return self.reason


def _run(job: Job, on_start: Callable[[JobHandle], None] | None, plan: IsolationPlan,
         pool: WarmPool | None) -> SandboxResult:
    started = time.monotonic()
    spec = spec_for(job, plan)
    handle = JobHandle()
    if on_start is not None:
        on_start(handle)
    cap = _result_cap(job)
    zygote: Zygote | None = None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for attempt in range(3):  # a worker lost before it took the job is replaced transparently
            zygote = pool.acquire(spec) if pool is not None else start_zygote(spec)
            reason = handle.attach(zygote)
            try:
                if reason is not None:
                    outcome = ProcessOutcome(None, 0.0, False, reason, b"", False)
                else:
                    outcome = zygote.run(job, out.fileno(), err.fileno(), cap)
            except ZygoteLost:
                stop_zygote(zygote)
                if attempt == 2:
                    raise OSError("sandbox workers kept dying before accepting the job") from None
                continue
            finally:
                handle.attach(None)
            break
        assert zygote is not None  # the loop above either ran the job on one or raised
        if pool is not None and zygote.alive:
            pool.release(zygote)
        else:
            stop_zygote(zygote)
        stdout, stderr, truncated = read_capped_output(out.fileno(), err.fileno(), job.limits.max_output_bytes)
    status, solutions, error = classify(outcome, job)
    # timed here, on the parent's clock, between the child's progress marks (never the child's numbers)
    instance_s = instance_seconds(outcome.marks, outcome.marks_since or None) if status == "ok" else []
    return SandboxResult(
        status=status,
        solutions=solutions,
        error=error if error is None else error[:_MAX_ERROR],
        stdout=stdout,
        stderr=stderr,
        wall_s=time.monotonic() - started,
        isolation=isolation_applied(job, plan, warm=pool is not None),
        output_truncated=truncated,
        instance_s=instance_s,
    )


def spec_for(job: Job, plan: IsolationPlan) -> ZygoteSpec:
    ro_paths: tuple[str, ...] = ()
    if plan.launcher in ("bwrap", "unshare"):
        # bubblewrap binds only these (besides system directories); under unshare they keep code
        # that lives under /tmp reachable once the private tmpfs covers it
        ro_paths = import_paths(job, plan)
    return ZygoteSpec(plan=plan, solver_module=job.solver.partition(":")[0], sys_path=tuple(map(str, job.sys_path)),
                      preload=tuple(job.preload), disk_bytes=int(job.limits.max_disk_bytes), ro_paths=ro_paths)


def import_paths(job: Job, plan: IsolationPlan) -> tuple[str, ...]:
    """What the worker must be able to import, and nothing more: the interpreter and its
    standard library, site-packages, hifo's own package directories, the job's plug-in paths
    and the solver's / preloads' packages. Never the repository root, ``$HOME`` or the
    parent's other ``sys.path`` entries (a ``.env`` beside the code stays out of reach)."""
    import importlib.util
    import sys
    import sysconfig

    python = os.path.realpath(plan.python)
    stdlib = sysconfig.get_paths()
    paths = [sys.prefix, sys.base_prefix, os.path.dirname(plan.python), os.path.dirname(python),
             stdlib["stdlib"], stdlib["platstdlib"], *plan.site_dirs, *map(str, job.sys_path)]
    # package directories a .pth lent this environment (another venv's site-packages), but not
    # other directories a .pth may add (a `setup.py develop` checkout root)
    paths += [p for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")]
    here = os.path.dirname(os.path.abspath(__file__))
    paths.append(here)
    for name in ("hifo", *(f"hifo.{sub}" for sub in ("agents", "evaluators", "knowledge_base", "problems"))):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            paths.extend(spec.submodule_search_locations)
    for name in (job.solver.partition(":")[0], *job.preload):
        try:
            spec = importlib.util.find_spec(name.split(".")[0])
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
            paths.extend(spec.submodule_search_locations or [spec.origin])
    return tuple(p for p in dict.fromkeys(map(str, paths)) if p and os.path.realpath(p) != "/")


def _result_cap(job: Job) -> int:
    # Room for the envelope (status and error text) on top of the solutions themselves.
    return job.limits.max_solution_bytes + 64 * 1024


def classify(outcome: ProcessOutcome, job: Job) -> tuple[Status, list[Any], str | None]:
    """Map exit status, signals and the result channel to (status, solutions, reason)."""
    limits = job.limits
    if outcome.overtime:
        return "timeout", [], outcome.overtime
    if outcome.cancelled:
        return "error", [], f"cancelled: {outcome.cancelled}"
    if outcome.timed_out:
        return "timeout", [], f"killed after {limits.timeout_s:.1f} s wall-clock timeout"
    if outcome.result_overflow:
        return "output_limit", [], f"result channel exceeded its {_result_cap(job)}-byte cap"
    if outcome.lost:
        return "crashed", [], "the sandbox worker died while the candidate ran (killed from inside?); it is replaced"
    code = outcome.returncode
    if code is not None and code < 0 and not outcome.result:
        return _signalled(-code, outcome.cpu_s, job)
    if not outcome.result:
        how = "with an unknown status" if code is None else f"with code {code}"
        return "crashed", [], f"exited {how} before reporting a result"
    try:
        return parse_result(outcome.result, len(job.instances))
    except (ValueError, RecursionError) as exc:
        return "invalid", [], f"result channel carried malformed data: {exc}"


def _signalled(signum: int, cpu_s: float, job: Job) -> tuple[Status, list[Any], str]:
    limits = job.limits
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= limits.cpu_s):
        return "timeout", [], f"CPU time limit exceeded ({limits.cpu_s} s)"
    if signum == signal.SIGXFSZ:
        return "output_limit", [], f"output file size limit exceeded ({limits.max_file_bytes} bytes per file)"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    hint = " (killed from outside: possibly the kernel OOM killer)" if signum == signal.SIGKILL else ""
    return "crashed", [], f"crashed with {name}{hint}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a solution")


def parse_result(data: bytes, n_instances: int) -> tuple[Status, list[Any], str | None]:
    """Decode the child's JSON result; anything unexpected raises ``ValueError``."""
    obj = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    if not isinstance(obj, dict) or obj.get("status") not in STATUSES:
        raise ValueError("not a result object")
    status, solutions, error = obj["status"], obj.get("solutions"), obj.get("error")
    if not isinstance(solutions, list) or not (error is None or isinstance(error, str)):
        raise ValueError("bad field types")
    if status == "ok":
        if len(solutions) != n_instances:
            raise ValueError(f"{len(solutions)} solutions for {n_instances} instances")
        return "ok", solutions, None
    return status, [], error or f"child reported {status!r} without a reason"


def read_capped_output(out_fd: int, err_fd: int, cap: int) -> tuple[str, str, bool]:
    """Read both capture files within one budget; each stream is guaranteed half of it."""
    out_size, err_size = os.fstat(out_fd).st_size, os.fstat(err_fd).st_size
    keep_out = min(out_size, max(cap // 2, cap - err_size))
    keep_err = min(err_size, cap - keep_out)
    texts = []
    for fd, size, keep in ((out_fd, out_size, keep_out), (err_fd, err_size, keep_err)):
        text = os.pread(fd, keep, 0).decode("utf-8", "replace") if keep > 0 else ""
        texts.append(text + _TRUNCATION_MARK if size > keep else text)
    truncated = out_size > keep_out or err_size > keep_err
    return texts[0], texts[1], truncated


def isolation_applied(job: Job, plan: IsolationPlan, warm: bool = False) -> dict[str, Any]:
    """Which layers this run got, and the gaps it did not get closed."""
    limits = job.limits
    root_child = os.geteuid() == 0 and not plan.drop_user
    nproc: Any = f"{limits.max_processes} tasks of its own sandbox uid" if plan.drop_user else (
        "not applied: the candidate runs as root (the kernel does not enforce RLIMIT_NPROC for root)"
        if root_child else f"the user's current task count + {limits.max_processes}")
    gaps = [MISSING_GAPS[name] for name in LAYERS if name not in plan.applied] + list(ALWAYS_GAPS)
    if "pid_namespace" not in plan.applied and not plan.drop_user:
        gaps.append("same user as the parent and no pid namespace: it can read /proc/<parent>/environ and "
                    "signal the parent's processes")
    return {
        "sandbox": "v2",
        "level": plan.level,
        "launcher": plan.launcher,
        "warm_worker": warm,
        "session": "own session; every process of the candidate is SIGKILLed when it ends (subreaper walk, "
        "or kill(-1) inside its own pid namespace)",
        "rlimits": {
            "address_space_mb": limits.memory_mb,
            "cpu_s": limits.cpu_s,
            "open_files": limits.max_open_files,
            "file_size_bytes": limits.max_file_bytes,
            "core_bytes": 0,
            "processes": nproc,
        },
        "scrubbed_env": sorted(child_env("/")),  # the only variables the child gets
        "temp_dir": "fresh per job (also HOME and TMPDIR), removed afterwards",
        "output_caps": {"output_bytes": limits.max_output_bytes, "result_bytes": limits.max_solution_bytes},
        "layers": {name: name in plan.applied for name in LAYERS},
        "namespaces": "pid, network, mount, ipc, uts" if plan.launcher != "none" else "none",
        "unprivileged_user": "unprivileged_user" in plan.applied,
        "no_network": "network_namespace" in plan.applied,
        "read_only_fs": "read_only_fs" in plan.applied,
        "bounded_disk_bytes": limits.max_disk_bytes if "bounded_disk" in plan.applied else None,
        "seccomp": "seccomp" in plan.applied,
        "gaps": gaps,
    }

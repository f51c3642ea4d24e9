"""``run_job``: one candidate in one fresh child process, with every v1 layer applied.

Layers (sandbox v1): own session and process group (the whole group is SIGKILLed at the
wall-clock deadline and after every exit), rlimits (address space, CPU, open files, file size,
no core; processes too unless running as root), an environment built from an allowlist, a
fresh temporary working directory (also HOME and TMPDIR) removed afterwards, capped stdout,
stderr and result channel. No namespaces, no separate user, no seccomp yet: see
:func:`sandbox.doctor.isolation_report` and the gaps listed in ``isolation["gaps"]``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
import signal
import stat
import sys
import tempfile
import time
from typing import Any, get_args

from sandbox._process import ProcessOutcome, SandboxProcess, child_env
from sandbox.job import Job, SandboxResult, Status

STATUSES = frozenset(get_args(Status))
_MAX_ERROR = 4000
_TRUNCATION_MARK = "\n[hifo sandbox: output truncated]"
V1_GAPS = (
    "no namespaces: the candidate sees the network and the whole file system its user can see",
    "same user as the parent: it can read /proc/<parent>/environ and signal the parent's processes",
    "a grandchild that calls setsid() or setpgid() escapes the process-group kill",
    "the solver shares the candidate's process: a hostile candidate can forge its solutions "
    "(the parent's score() must check them; it never trusts the child)",
    "disk use in the temporary directory is bounded per file (RLIMIT_FSIZE), not in total",
)
ROOT_GAPS = (
    "running as root: RLIMIT_NPROC is not enforced, so a fork bomb is bounded only by the timeout",
    "running as root: the candidate can raise its own hard rlimits (CAP_SYS_RESOURCE); "
    "only the wall-clock timeout still holds",
)


def run_job(job: Job) -> SandboxResult:
    """Run ``job`` in a fresh, isolated child process and return what happened.

    Never raises for anything the candidate does; raises ``OSError`` if the child cannot be
    started at all, and ``pickle.PicklingError``/``TypeError`` if the instances cannot be
    pickled (both are the caller's problem, not the candidate's).
    """
    return _run(job, None)


def _run(job: Job, on_start: Any) -> SandboxResult:
    """``on_start(process)`` lets an executor keep a handle to kill the job early."""
    started = time.monotonic()
    limits = job.limits
    payload = _payload(job)
    root = tempfile.mkdtemp(prefix="hifo-sbx-")
    try:
        workdir = os.path.join(root, "work")
        os.mkdir(workdir, 0o700)
        # The parent keeps these fds and reads through them: renaming or replacing the
        # paths from inside the sandbox cannot redirect what the parent reads.
        with open(os.path.join(root, "stdout"), "w+b") as out, open(os.path.join(root, "stderr"), "w+b") as err:
            process = SandboxProcess(workdir, out.fileno(), err.fileno(), payload, _result_cap(job))
            if on_start is not None:
                on_start(process)
            outcome = process.run(limits.timeout_s)
            stdout, stderr, truncated = read_capped_output(out.fileno(), err.fileno(), limits.max_output_bytes)
    finally:
        _remove_tree(root)
    status, solutions, error = classify(outcome, job)
    return SandboxResult(
        status=status,
        solutions=solutions,
        error=error if error is None else error[:_MAX_ERROR],
        stdout=stdout,
        stderr=stderr,
        wall_s=time.monotonic() - started,
        isolation=isolation_applied(job),
        output_truncated=truncated,
    )


def _payload(job: Job) -> bytes:
    return pickle.dumps(
        {
            "code": job.code,
            "entry": job.entry,
            "solver": job.solver,
            "sys_path": [str(p) for p in job.sys_path],
            "limits": dataclasses.asdict(job.limits),
            "instances": pickle.dumps(list(job.instances), protocol=pickle.HIGHEST_PROTOCOL),
            "parent_pid": os.getpid(),
        },
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def _result_cap(job: Job) -> int:
    # Room for the envelope (status and error text) on top of the solutions themselves.
    return job.limits.max_solution_bytes + 64 * 1024


def classify(outcome: ProcessOutcome, job: Job) -> tuple[Status, list[Any], str | None]:
    """Map exit status, signals and the result channel to (status, solutions, reason)."""
    limits = job.limits
    if outcome.cancelled:
        return "error", [], f"cancelled: {outcome.cancelled}"
    if outcome.timed_out:
        return "timeout", [], f"killed after {limits.timeout_s:.1f} s wall-clock timeout"
    if outcome.result_overflow:
        return "output_limit", [], f"result channel exceeded its {_result_cap(job)}-byte cap"
    code = outcome.returncode
    if code is not None and code < 0:
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


def isolation_applied(job: Job) -> dict[str, Any]:
    """Which layers this run got (the child fails closed if it cannot apply its rlimits)."""
    limits = job.limits
    root = os.geteuid() == 0
    nproc: Any = "not applied: running as root (the kernel does not enforce RLIMIT_NPROC for root)"
    if not root:
        nproc = "the user's current task count + 64"
    return {
        "sandbox": "v1",
        "session": "own session and process group; the whole group is SIGKILLed on timeout and exit",
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
        "namespaces": "none (sandbox v1)",
        "unprivileged_user": False,
        "no_network": False,
        "read_only_fs": False,
        "seccomp": False,
        "gaps": list(V1_GAPS + ROOT_GAPS) if root else list(V1_GAPS),
    }


def _remove_tree(root: str) -> None:
    """Remove the job directory even if the candidate chmod-ed parts of it away."""
    retried: set[str] = set()

    def retry(_func: Any, path: str, _exc: Any) -> None:
        if path in retried:
            return
        retried.add(path)
        try:
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
                _rmtree(path, retry)
            else:
                os.unlink(path)
        except OSError:
            pass

    _rmtree(root, retry)


def _rmtree(path: str, handler: Any) -> None:
    if sys.version_info >= (3, 12):  # onerror is deprecated there
        shutil.rmtree(path, onexc=handler)
    else:
        shutil.rmtree(path, onerror=handler)

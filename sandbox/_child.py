"""The sandbox child process (started by :mod:`sandbox._process`, never imported by users).

Command line: ``python -I -B -c <bootstrap> RESULT_FD`` (see ``_process.child_argv``).

Protocol. Parent -> child, on stdin: one pickle of a dict of plain values (``code``,
``entry``, ``solver``, ``sys_path``, ``limits``, ``parent_pid``) whose ``instances`` entry is
itself a pickle, loaded only after the limits are applied and ``sys_path`` is set. The parent
is trusted, so unpickling here is fine. Child -> parent: one JSON object
``{"status", "solutions", "error"}`` on the dedicated pipe ``RESULT_FD``, never on stdout.
The candidate's prints are written through, capped, to fd 1/2, which the parent pointed at
files it reads after the child is gone, so output survives a timeout or crash.
"""

from __future__ import annotations

import faulthandler
import io
import json
import os
import pickle
import resource
import sys
from typing import Any

from sandbox import _execute

NPROC_MARGIN = 64  # extra tasks a non-root child may create beyond those its user already has


def main() -> None:
    result_fd = int(sys.argv[1])
    payload = pickle.loads(sys.stdin.buffer.read())
    _die_with_parent(payload["parent_pid"])
    limits = payload["limits"]
    reserve = bytearray(256 * 1024)  # released on MemoryError so the result can still be written
    try:
        apply_rlimits(limits)
    except (OSError, ValueError) as exc:
        _finish(result_fd, "error", [], f"sandbox setup failed: cannot apply rlimits: {exc}")
    _isolate_stdio(limits["max_output_bytes"])
    sys.path[0:0] = list(payload["sys_path"])
    try:
        instances = pickle.loads(payload["instances"])
    except MemoryError:
        del reserve
        _finish(result_fd, "memory", [], f"memory limit {limits['memory_mb']} MB exceeded while loading instances")
    except Exception as exc:
        _finish(result_fd, "error", [], f"sandbox setup failed: cannot unpickle instances: {_execute.one_line(exc)}")
    outcome = _execute.execute(payload["code"], payload["entry"], payload["solver"], instances, limits)
    del reserve
    _finish(result_fd, outcome["status"], outcome["parts"], outcome["error"])


def apply_rlimits(limits: dict[str, Any]) -> None:
    """Lower soft *and* hard limits so the candidate cannot raise them again."""
    _lower(resource.RLIMIT_CORE, 0)
    _lower(resource.RLIMIT_CPU, int(limits["cpu_s"]), int(limits["cpu_s"]) + 1)  # SIGXCPU, then SIGKILL
    _lower(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    _lower(resource.RLIMIT_NOFILE, int(limits["max_open_files"]))
    _lower(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    if os.geteuid() != 0:  # the kernel does not enforce RLIMIT_NPROC for root
        _lower(resource.RLIMIT_NPROC, tasks_of_user(os.getuid()) + NPROC_MARGIN)


def tasks_of_user(uid: int) -> int:
    """Threads and processes currently owned by ``uid`` (RLIMIT_NPROC counts tasks per user)."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                count += len(os.listdir(f"/proc/{name}/task"))
        except OSError:  # the process ended while we looked
            continue
    return count


def _lower(which: int, soft: int, hard: int | None = None) -> None:
    _, current_hard = resource.getrlimit(which)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this child if the parent thread dies (no effect elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the prctl took effect
        os._exit(70)


def _isolate_stdio(budget: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = sys.__stdin__ = io.StringIO()
    faulthandler.enable(file=2, all_threads=True)  # a segfault dump lands in the stderr file
    sys.stdout = sys.__stdout__ = _execute.CappedText(lambda b: _write_all(1, b), budget, fileno=1)
    sys.stderr = sys.__stderr__ = _execute.CappedText(lambda b: _write_all(2, b), budget, fileno=2)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _finish(result_fd: int, status: str, parts: list[str], error: str | None) -> None:
    """Write the result and leave at once: no atexit hooks or finalisers of the candidate run."""
    head = json.dumps({"status": status, "error": error})[:-1]
    body = (head + ',"solutions":[' + ",".join(parts) + "]}").encode("utf-8", "replace")
    try:
        _write_all(result_fd, body)
    except OSError:
        os._exit(3)
    os._exit(0)


if __name__ == "__main__":
    main()

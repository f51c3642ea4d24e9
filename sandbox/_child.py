"""The candidate child: forked by the zygote (:mod:`hifo.sandbox._zygote`), isolated, then runs the job.

Order of the layers, each failing closed (the candidate never runs if one cannot be applied):

1. at fork: own session (``setsid``), SIGKILL if the zygote dies, the parent's control socket
   closed; then wait for a job;
2. descriptors: stdout/stderr point at the parent's capture files, stdin at /dev/null, every
   other inherited descriptor closed (only the result pipe and the note socket stay);
3. working directory and environment: the job's own directory (also HOME and TMPDIR), an
   environment built from an allowlist;
4. rlimits, soft *and* hard (address space, CPU, file size, open files, no core);
5. identity (as root): ``setgroups([])``, ``setresgid``, ``setresuid`` to the zygote's sandbox
   uid, which clears every capability; then ``RLIMIT_NPROC`` (enforced now we are not root);
6. ``PR_SET_NO_NEW_PRIVS``, then the seccomp filter (:mod:`hifo.sandbox._seccomp`), then
   ``PR_SET_DUMPABLE`` 0 (inherited from the zygote already; set again here so that it never depends on
   that): a slot server of the same uid cannot open this process's ``/proc/<pid>/mem``, ``fd/`` or
   ``environ``, ptrace it or read it with ``process_vm_readv``, even where Yama's ptrace_scope is 0;
7. stdio wrappers with output caps; the slot zygote forked, when the job uses a slot process
   (:mod:`hifo.sandbox._slotproc`; each of its servers stacks the slot-server filter on this one);
8. the instances unpickled, the candidate executed
   (:mod:`hifo.sandbox._execute`; one progress byte on the result pipe before the first instance
   and after each, which the parent timestamps), the JSON result written on the result pipe, "done" sent to the
   zygote, and ``os._exit`` (no atexit hook or finaliser of the candidate runs).
"""

from __future__ import annotations

import ctypes
import faulthandler
import io
import json
import os
import pickle
import resource
import socket
import sys
from typing import Any, Mapping

from . import _execute, _fence, _wire  # noqa: F401  (_fence: imported by the spare, off the job's path)

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
PASS_THROUGH_ENV = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SINGLE_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pinned_numeric_env() -> dict[str, str]:
    """Reproducible fitness (issue 26): the numeric kernels every sandbox child runs with, the same on
    every x86-64 CPU with AVX2 — numpy without its AVX-512 kernels, OpenBLAS's Haswell kernels, MKL's
    and torch's AVX2 paths (:mod:`hifo.sandbox._numeric`). Without this an
    AVX-512 machine computes other last bits than an AVX2 one, and a decision taken on them (an
    eigenvector's sign, a tie) gives another score. ``HIFO_NATIVE_KERNELS=1`` in the parent's
    environment turns it off (faster on AVX-512, no longer comparable across machines)."""
    if os.environ.get("HIFO_NATIVE_KERNELS") == "1":
        return {}
    from ._numeric import PINNED_VARS
    from ._numeric import pinned_numeric_env as pinned

    present = {k: os.environ[k] for k in PINNED_VARS if k in os.environ}
    if "ATEN_CPU_CAPABILITY" in present and "OPENBLAS_CORETYPE" in present:
        return present  # this process runs pinned already (the zygote, a pinned hifo): no numpy import here
    return pinned()


def child_env(workdir: str, source: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of the zygote and the candidate: an allowlist, nothing inherited
    (plus the pinned numeric kernels of :func:`pinned_numeric_env`)."""
    src: Mapping[str, str] = os.environ if source is None else source
    env = {"PATH": MINIMAL_PATH, "HOME": workdir, "TMPDIR": workdir}
    env.update({name: "1" for name in SINGLE_THREAD_ENV})
    env.update({name: src[name] for name in PASS_THROUGH_ENV if name in src})
    env.update(pinned_numeric_env())  # after the pass-through: a parent's OPENBLAS_CORETYPE does not unpin
    env.setdefault("LANG", "C.UTF-8")
    return env


def spare_main(sock: socket.socket, config: dict[str, Any], zygote_pid: int) -> None:
    """Entry of the pre-forked spare: detach, wait for one job, run it, never return."""
    nest_error = None
    try:
        os.setsid()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
        if os.getppid() != zygote_pid:
            os._exit(70)
        if config.get("nest"):  # own pid + mount namespace, fresh capped /tmp (see _nest)
            from . import _nest

            try:
                _nest.prepare(config)  # returns in the future candidate only
            except Exception as exc:  # reported as this job's failure: the candidate never runs
                nest_error = exc
        body, fds = _wire.recv(sock)
        job = pickle.loads(body)
    except BaseException:
        os._exit(71)
    try:
        if nest_error is not None:
            raise nest_error
        if config.get("nest"):
            _nest.finish(job)
    except BaseException as exc:
        global _CANDIDATE_PID
        _CANDIDATE_PID = os.getpid()
        _finish(fds[3], sock, "error", [], f"sandbox setup failed: private namespaces: {_execute.one_line(exc)}")
    run_candidate(job, fds, sock, config)


_CANDIDATE_PID = 0  # the process the zygote forked; its forks must not report a result


def run_candidate(job: dict[str, Any], fds: list[int], sock: socket.socket, config: dict[str, Any]) -> None:
    global _CANDIDATE_PID
    _CANDIDATE_PID = os.getpid()
    payload_fd, out_fd, err_fd, result_fd = fds
    limits = job["limits"]
    try:
        _setup_descriptors(out_fd, err_fd, keep={result_fd, payload_fd, sock.fileno()})
        with os.fdopen(payload_fd, "rb") as handle:
            payload = pickle.loads(handle.read())  # written by the trusted parent
        os.chdir(job["workdir"])
        env = child_env(job["workdir"])  # from the zygote's own, already scrubbed, environment
        os.environ.clear()
        os.environ.update(env)
        apply_rlimits(limits)
        drop_identity(job["uid"], job["uid"])  # the zygote's uids double as gids
        apply_nproc(limits, job["uid"])
        if config["seccomp"]:
            from . import _seccomp

            _seccomp.install()
        elif ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
    except BaseException as exc:
        _finish(result_fd, sock, "error", [], f"sandbox setup failed: {_execute.one_line(exc)}")
    reserve = bytearray(256 * 1024)  # released on MemoryError so the result can still be written
    _isolate_stdio(limits["max_output_bytes"])
    sys.argv = ["hifo-sandbox", str(result_fd)]
    slot = None
    if (payload.get("fence") or {}).get("process"):  # before the instances exist as objects here
        from . import _slotproc

        try:
            slot = _slotproc.fork(payload, (result_fd, sock.fileno()), limits, contain=bool(config["seccomp"]))
        except Exception as exc:
            _finish(result_fd, sock, "error", [], f"sandbox setup failed: slot process: {_execute.one_line(exc)}")
    try:
        instances = pickle.loads(payload["instances"])
    except MemoryError:
        del reserve
        reason = f"memory limit {limits['memory_mb']} MB exceeded while loading instances"
        _finish(result_fd, sock, "memory", [], reason)
    except Exception as exc:
        reason = f"sandbox setup failed: cannot unpickle instances: {_execute.one_line(exc)}"
        _finish(result_fd, sock, "error", [], reason)
    del payload["instances"]
    outcome = _execute.execute(payload["code"], payload["entry"], payload["solver"], instances, limits,
                               fence=payload.get("fence"), audit=True, progress=lambda mark: _mark(result_fd, mark),
                               slot=slot)
    del reserve
    _finish(result_fd, sock, outcome["status"], outcome["parts"], outcome["error"])


def _mark(result_fd: int, mark: bytes) -> None:
    """One progress byte on the result pipe (see ``_execute.MARK_*``), timestamped by the parent."""
    try:
        _write_all(result_fd, mark)
    except OSError:
        os._exit(3)


def _setup_descriptors(out_fd: int, err_fd: int, keep: set[int]) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    keep = keep | {0, 1, 2}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the directory listing's own descriptor


def apply_rlimits(limits: dict[str, Any]) -> None:
    """Lower soft *and* hard limits so the candidate cannot raise them again."""
    _lower(resource.RLIMIT_CORE, 0)
    _lower(resource.RLIMIT_CPU, int(limits["cpu_s"]), int(limits["cpu_s"]) + 1)  # SIGXCPU, then SIGKILL
    _lower(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    _lower(resource.RLIMIT_NOFILE, int(limits["max_open_files"]))
    _lower(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)


def drop_identity(uid: int | None, gid: int | None) -> None:
    """Become the sandbox uid/gid for good: real, effective and saved ids, no groups."""
    if uid is None or gid is None:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError("identity drop did not take effect")


def apply_nproc(limits: dict[str, Any], sandbox_uid: int | None) -> None:
    """RLIMIT_NPROC counts every task of the real uid and is not enforced for root.

    With a sandbox uid leased to this zygote alone, the candidate's own tasks are all there is;
    as an ordinary user the user's existing tasks are counted in."""
    if os.getuid() == 0:
        return
    allowed = int(limits["max_processes"])
    if sandbox_uid is None:
        from ._nest import tasks_of_user

        allowed += int(limits.get("user_tasks") or tasks_of_user(os.getuid()))  # counted before _nest hid them
    _lower(resource.RLIMIT_NPROC, allowed)


def _lower(which: int, soft: int, hard: int | None = None) -> None:
    _, current_hard = resource.getrlimit(which)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def _isolate_stdio(budget: int) -> None:
    # the interpreter's own dunder streams are replaced on purpose: a candidate reaching for them gets ours
    sys.stdin = sys.__stdin__ = io.StringIO()  # type: ignore[misc,assignment]
    faulthandler.enable(file=2, all_threads=True)  # a segfault dump lands in the stderr file
    sys.stdout = sys.__stdout__ = _execute.CappedText(lambda b: _write_all(1, b), budget, fileno=1)  # type: ignore[misc,assignment]
    sys.stderr = sys.__stderr__ = _execute.CappedText(lambda b: _write_all(2, b), budget, fileno=2)  # type: ignore[misc,assignment]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _finish(result_fd: int, sock: socket.socket, status: str, parts: list[str], error: str | None) -> None:
    """Write the result, tell the zygote, leave at once (no atexit hooks or finalisers run).

    A process the candidate forked comes back here too when its copy of the candidate returns:
    it leaves without writing, so only the candidate itself reports."""
    if os.getpid() != _CANDIDATE_PID:
        os._exit(0 if status == "ok" else 1)
    head = json.dumps({"status": status, "error": error})[:-1]
    body = (head + ',"solutions":[' + ",".join(parts) + "]}").encode("utf-8", "replace")
    try:
        _write_all(result_fd, body)
        os.close(result_fd)
    except OSError:
        os._exit(3)
    try:
        sock.send(b"done")
    except OSError:
        pass
    os._exit(0)

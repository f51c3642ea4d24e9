"""The seccomp layer (sandbox/_seccomp.py): filters compiled by libseccomp deny what they claim and allow the rest.

The system calls are tried by test-side child processes (trusted code: ctypes and os) with the filters loaded as
the sandbox loads them, each next to a control without the filter (so a check cannot pass for another reason);
one test goes through the real sandbox with a slot server whose candidate has escaped the fence
(``slot_escape.py``). Run as root by the suite and as an ordinary user by ``test_as_user.py``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import mmap
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from typing import Any, Callable

import pytest
from sandbox_helpers import needs
from solvers import make_job

from hifo.sandbox import IsolationUnavailable, _fence, _seccomp, run_job
from hifo.sandbox._layers import probe, resolve
from hifo.sandbox.doctor import isolation_report

pytestmark = pytest.mark.skipif(not _seccomp.supported()[0], reason=f"seccomp layer: {_seccomp.supported()[1]}")

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
SYS_SOCKET, SYS_CLONE, SYS_FORK, SYS_VFORK, SYS_PTRACE, SYS_TKILL = 41, 56, 57, 58, 101, 200
SYS_TGKILL, SYS_SETNS, SYS_UNSHARE, SYS_BPF, SYS_EXECVEAT = 234, 308, 272, 321, 322
SYS_PIDFD_SEND_SIGNAL, SYS_IO_URING_SETUP, SYS_CLONE3, X32_BIT, SYS_GETPID = 424, 425, 435, 0x40000000, 39
CLONE_NEWUSER, CLONE_NEWNET, PTRACE_ATTACH, NO_SUCH_PID = 0x10000000, 0x40000000, 16, 0x7FFFFFFF
PR_SET_DUMPABLE, PR_GET_NO_NEW_PRIVS = 4, 39


def in_child(body: Callable[[], dict[str, Any]], timeout_s: float = 60.0) -> tuple[dict[str, Any] | None, int]:
    """Run ``body`` in a forked child; its JSON result (None if it died) and its wait status (killed after
    ``timeout_s``: a probe that hangs fails the test instead of stalling the suite)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            out = body()
        except BaseException as exc:  # noqa: BLE001  (reported to the test)
            out = {"error": repr(exc)}
        os.write(write_end, json.dumps(out).encode())
        os._exit(0)
    os.close(write_end)
    data, deadline = b"", time.monotonic() + timeout_s
    while select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        data += chunk
    else:
        os.kill(pid, signal.SIGKILL)
        data = b""
    os.close(read_end)
    status = os.waitpid(pid, 0)[1]
    return (json.loads(data) if data else None), status


def _errno_name(code: int) -> str:
    return errno.errorcode.get(code, str(code))


def _raw(nr: int, *args: int) -> str:
    """A raw system call with integer arguments: "allowed" or the errno name."""
    ctypes.set_errno(0)
    ret = LIBC.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    return "allowed" if ret != -1 else _errno_name(ctypes.get_errno())


def _creates_process(nr: int, *args: int) -> str:
    """fork/vfork/clone as a raw call: the child, where one is made, leaves at once."""
    ctypes.set_errno(0)
    ret = LIBC.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    if ret == 0:
        os._exit(0)
    if ret > 0:
        os.waitpid(ret, 0)
        return "allowed"
    return _errno_name(ctypes.get_errno())


def _python(action: Callable[[], Any]) -> str:
    try:
        action()
        return "allowed"
    except OSError as exc:
        return _errno_name(exc.errno or 0)


def _fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _thread_and_numpy() -> list[Any]:
    import numpy as np

    seen: list[str] = []
    worker = threading.Thread(target=seen.append, args=("ran",))
    worker.start()
    worker.join()
    a = np.arange(16.0).reshape(4, 4) + np.eye(4) * 10
    return [*seen, round(float(np.linalg.solve(a, np.ones(4)).sum()), 6)]


def _candidate_probe() -> dict[str, Any]:
    return {
        "inet": _python(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
        "inet6": _python(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()),
        "netlink": _python(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close()),
        "unix": _python(lambda: socket.socket(socket.AF_UNIX).close()),
        "unshare_user": _raw(SYS_UNSHARE, CLONE_NEWUSER),
        "clone_newuser": _creates_process(SYS_CLONE, CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0),
        "clone_newnet": _creates_process(SYS_CLONE, CLONE_NEWNET | signal.SIGCHLD, 0, 0, 0, 0),
        "setns": _raw(SYS_SETNS, -1, 0),  # EBADF where setns is allowed
        "clone3": _raw(SYS_CLONE3, 0, 0),  # EFAULT/EINVAL where clone3 is allowed
        "ptrace": _raw(SYS_PTRACE, PTRACE_ATTACH, NO_SUCH_PID, 0, 0),  # ESRCH where ptrace is allowed
        "io_uring_setup": _raw(SYS_IO_URING_SETUP, 1, 0),  # EFAULT where io_uring is allowed
        "bpf": _raw(SYS_BPF, 0, 0, 0),
        "fork": _python(_fork),
        "clone_process": _creates_process(SYS_CLONE, signal.SIGCHLD, 0, 0, 0, 0),
        "thread_numpy": _thread_and_numpy(),
    }


def test_the_candidate_filter_denies_what_it_names_and_allows_the_rest():
    def filtered() -> dict[str, Any]:
        _seccomp.install()
        return {**_candidate_probe(), "no_new_privs": LIBC.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)}

    out, status = in_child(filtered)
    assert out is not None and status == 0, (out, status)
    denied = ("inet", "inet6", "netlink", "unshare_user", "clone_newuser", "clone_newnet", "setns", "ptrace",
              "io_uring_setup", "bpf")
    assert {name: out[name] for name in denied} == dict.fromkeys(denied, "EPERM"), out
    assert out["clone3"] == "ENOSYS"  # glibc falls back to clone, whose flags the filter can read
    assert out["unix"] == out["fork"] == out["clone_process"] == "allowed" and out["no_new_privs"] == 1
    assert out["thread_numpy"][0] == "ran"
    control, status = in_child(_candidate_probe)
    assert control is not None and status == 0, control
    assert control["inet"] == control["inet6"] == "allowed" and control["setns"] == "EBADF"
    assert control["ptrace"] == "ESRCH"
    assert control["clone3"] != "ENOSYS" and control["io_uring_setup"] != "EPERM"
    assert control["thread_numpy"] == out["thread_numpy"]


def test_other_abis_kill_the_process():
    """x32 syscall numbers (the x32 bit set) go to libseccomp's bad-architecture action: KILL_PROCESS."""
    def x32_getpid(install: bool) -> Callable[[], dict[str, Any]]:
        def body() -> dict[str, Any]:
            if install:
                _seccomp.install()
            return {"x32_getpid": _raw(X32_BIT | SYS_GETPID)}
        return body

    out, status = in_child(x32_getpid(True))
    assert out is None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, (out, status)
    control, status = in_child(x32_getpid(False))
    assert control is not None and status == 0  # a pid where x32 exists, ENOSYS elsewhere: never a kill


def _i386_getpid(install: bool) -> Callable[[], dict[str, Any]]:
    """The i386 ABI from a 64-bit process: ``int 0x80`` with eax = 20 (getpid), from an executable page."""
    def body() -> dict[str, Any]:
        if install:
            _seccomp.install()
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(b"\xb8\x14\x00\x00\x00\xcd\x80\xc3")  # mov eax, 20; int 0x80; ret
        call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
        return {"i386_getpid_is_pid": call() == os.getpid()}
    return body


def test_the_i386_abi_kills_the_process():
    out, status = in_child(_i386_getpid(True))
    control, control_status = in_child(_i386_getpid(False))
    if control == {"i386_getpid_is_pid": True}:  # this kernel runs i386 calls: the filter's arch check must kill
        assert out is None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, (out, status)
    else:  # no i386 entry in this kernel (SIGSEGV): the filtered child does not survive either
        assert out is None and os.WIFSIGNALED(status), (out, status, control, control_status)


def _slot_probe(target: int) -> dict[str, Any]:
    fork_result = _python(_fork)

    def pidfd_signal() -> str:
        fd = os.pidfd_open(target)
        try:
            return _raw(SYS_PIDFD_SEND_SIGNAL, fd, 0, 0, 0)
        finally:
            os.close(fd)

    return {
        "fork": fork_result,
        "fork_syscall": _creates_process(SYS_FORK),
        # vfork shares this process's memory: tried only where fork is already refused
        "vfork_syscall": _creates_process(SYS_VFORK) if fork_result == "EPERM" else "not tried",
        "clone_process": _creates_process(SYS_CLONE, signal.SIGCHLD, 0, 0, 0, 0),
        "posix_spawn": _python(lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)),
        "subprocess": _python(lambda: subprocess.run(["true"], check=True)),
        "execve": _python(lambda: os.execv("/nonexistent-hifo-binary", ["x"])),  # ENOENT where allowed
        "execveat": _execveat(),
        "ptrace_attach": _raw(SYS_PTRACE, PTRACE_ATTACH, target, 0, 0),
        "kill_other": _python(lambda: os.kill(target, 0)),
        "tgkill_other": _raw(SYS_TGKILL, target, target, 0),
        "tkill": _raw(SYS_TKILL, os.getpid(), 0),
        "pidfd_send_signal": pidfd_signal(),
        "kill_self": _python(lambda: os.kill(os.getpid(), 0)),
        "tgkill_self": _python(lambda: signal.pthread_kill(threading.get_ident(), 0)),
        "socket_unix": _python(lambda: socket.socket(socket.AF_UNIX).close()),
        "thread_numpy": _thread_and_numpy(),
    }


def _execveat() -> str:
    ctypes.set_errno(0)
    ret = LIBC.syscall(ctypes.c_long(SYS_EXECVEAT), ctypes.c_long(-100), ctypes.c_char_p(b"/nonexistent-hifo-binary"),
                       None, None, ctypes.c_long(0))
    return "allowed" if ret != -1 else _errno_name(ctypes.get_errno())


def test_the_slot_server_filter_stops_new_processes_and_signals_to_others_and_keeps_threads():
    target = os.getpid()  # this test process: the same uid, and dumpable

    def slot_server() -> dict[str, Any]:
        _seccomp.install()  # what a slot server inherits from the candidate child...
        _seccomp.install_slot_server()  # ...and what it stacks on top
        return _slot_probe(target)

    out, status = in_child(slot_server)
    assert out is not None and status == 0, (out, status)
    denied = ("fork", "fork_syscall", "vfork_syscall", "clone_process", "posix_spawn", "subprocess", "execve",
              "execveat", "ptrace_attach", "kill_other", "tgkill_other", "tkill", "pidfd_send_signal", "socket_unix")
    assert {name: out[name] for name in denied} == dict.fromkeys(denied, "EPERM"), out
    assert out["kill_self"] == out["tgkill_self"] == "allowed" and out["thread_numpy"][0] == "ran"

    def candidate_only() -> dict[str, Any]:
        _seccomp.install()
        return _slot_probe(target)

    control, status = in_child(candidate_only)
    assert control is not None and status == 0, control
    assert control["fork"] == control["posix_spawn"] == control["kill_other"] == control["socket_unix"] == "allowed"
    assert control["execve"] == control["execveat"] == "ENOENT" and control["vfork_syscall"] == "not tried"


def _yama_scope() -> int:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as handle:
            return int(handle.read())
    except OSError:
        return 0  # no Yama: the classic rules (same uid and dumpable)


def test_a_non_dumpable_algorithm_process_is_unreadable_for_a_slot_server_of_its_uid():
    """PR_SET_DUMPABLE 0 (sandbox/_child.py) is what keeps /proc/<algorithm>/mem, fd/ and environ closed to a slot
    server of the same uid; with the flag at 1 (the control) the same server reads them (where Yama allows)."""
    def algorithm() -> dict[str, Any]:
        if os.geteuid() == 0:  # an unprivileged uid for both processes, as in the sandbox (root could read anything)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
        me, seen = os.getpid(), {}
        for dumpable in (1, 0):
            LIBC.prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0)

            def server() -> dict[str, Any]:
                _seccomp.install()
                _seccomp.install_slot_server()
                return {"mem": _python(lambda: open(f"/proc/{me}/mem", "rb").close()),
                        "environ": _python(lambda: open(f"/proc/{me}/environ", "rb").read()),
                        "fds": _python(lambda: os.listdir(f"/proc/{me}/fd")),
                        "stat": _python(lambda: open(f"/proc/{me}/stat", "rb").read())}

            seen[str(dumpable)] = in_child(server)[0]
        return seen

    out, status = in_child(algorithm)
    assert out is not None and status == 0, (out, status)
    hidden = out["0"]
    assert hidden["mem"] == hidden["environ"] == hidden["fds"] == "EACCES" and hidden["stat"] == "allowed", out
    if _yama_scope() == 0:
        assert out["1"] == dict.fromkeys(("mem", "environ", "fds", "stat"), "allowed"), out


@needs("seccomp")
def test_a_slot_server_that_escaped_the_fence_cannot_start_signal_or_read_anything(pool):
    """Issue 28: through the real sandbox, the candidate's module imports ``slot_escape`` (trusted test code that runs
    in the slot server outside the fence's audit window, as after an escape), which tries to fork, spawn, exec,
    signal, ptrace and read the algorithm process."""
    code = ("import numpy as np\nimport slot_escape\n"
            "def f(x):\n    return {'escape': slot_escape.RESULTS, 'sum': float(np.ones(3).sum()) + x}\n")
    fence = {"imports": [*_fence.DEFAULT_SLOT_IMPORTS, "slot_escape"], "process": True}
    job = dataclasses.replace(make_job(code, [1, 2], solver="solvers:slot_probe"), fence=fence)
    result = run_job(job, warm=pool)
    assert result.ok, result.error
    servers = set()
    for x, solution in zip((1, 2), result.solutions):
        escape = solution["value"]["escape"]
        assert solution["value"]["sum"] == 3.0 + x
        assert escape["algorithm_pid"] == solution["pid"]  # it aimed at the right process
        denied = ("fork", "posix_spawn", "execve", "kill_algorithm", "ptrace_algorithm", "process_vm_readv_algorithm",
                  "socket_unix")
        assert {name: escape[name] for name in denied} == dict.fromkeys(denied, "EPERM"), escape
        assert escape["algorithm_mem"] == escape["algorithm_fds"] == "EACCES", escape
        assert escape["kill_self"] == "allowed" and escape["thread"] == "ran"
        # the algorithm process is non-dumpable and still reads its server's /proc/<pid>/stat and CPU clock
        assert solution["dumpable"] == 0 and len(solution["server_stat"]) == 2 and solution["slot_cpu_s"] > 0
        servers.add(solution["server_pid"])
    assert len(servers) == 2  # a fresh server, and a fresh import of slot_escape, per instance


def test_doctor_reports_the_layer_as_libseccomp_backed():
    version = _seccomp.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    report = isolation_report("standard")
    assert report["layers"]["seccomp"].startswith(f"libseccomp {version} (pyseccomp ")
    assert report["tools"]["libseccomp"]["usable"] and "slot-server filter" in report["tools"]["libseccomp"]["backend"]


@pytest.mark.parametrize("failure, fix", [
    (ImportError("No module named 'pyseccomp'"), "pip install pyseccomp"),
    (RuntimeError("Unable to find libseccomp"), "apt-get install -y libseccomp2"),
])
def test_without_libseccomp_or_its_binding_the_layer_is_missing_never_skipped(monkeypatch, failure, fix):
    def unavailable() -> Any:
        raise failure

    monkeypatch.setattr(_seccomp, "library", unavailable)
    ok, why = _seccomp.supported()
    assert not ok and fix in why
    fake = dataclasses.replace(probe(), seccomp_error=why, seccomp_backend=None)
    with pytest.raises(IsolationUnavailable, match="seccomp"):
        resolve("strict", warn=False, probe_result=fake)
    plan = resolve("standard", warn=False, probe_result=fake)
    assert "seccomp" in plan.missing and not plan.seccomp and any(fix in note for note in plan.warnings)


def test_a_slot_server_whose_filter_cannot_be_loaded_never_loads_the_candidate(monkeypatch):
    from hifo.sandbox import _execute, _slotproc

    def broken() -> None:
        raise OSError(errno.EINVAL, "simulated: seccomp_load failed")

    monkeypatch.setattr(_seccomp, "install_slot_server", broken)  # inherited by the forked slot zygote
    proxy = _slotproc.fork({"code": "def f(x):\n    return x\n", "entry": "f", "fence": {"imports": ["numpy"], "process": True},
                            "instances": b"x"}, (), {"memory_mb": 2048, "max_solution_bytes": 1 << 20}, contain=True)
    try:
        with pytest.raises(_execute.JobFailure, match="sandbox setup failed: slot-server seccomp filter: .*simulated"):
            proxy.ready()
    finally:
        proxy.close()

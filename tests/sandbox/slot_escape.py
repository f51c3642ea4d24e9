"""Trusted test code standing for a candidate that has escaped the fence inside its slot server.

A candidate names this module in an import (the test allowlists it); the slot server imports the modules a
candidate names *outside* the fence's audit window, so this top level runs in the slot server with nothing of
the fence in the way, as after an escape: only the process boundary, the seccomp filters and the algorithm
process's non-dumpable flag hold. Nothing else imports it, so it runs fresh in each server. ``RESULTS`` maps each
attempt to ``"allowed"`` (or what it returned) or the errno name it failed with.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import threading
from typing import Any, Callable

RESULTS: dict[str, Any] = {}
_LIBC = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16


def _attempt(name: str, action: Callable[[], Any]) -> None:
    try:
        value = action()
        RESULTS[name] = "allowed" if value is None else value
    except OSError as exc:
        RESULTS[name] = errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _checked(result: int) -> None:
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def _fork() -> None:
    pid = os.fork()
    if pid == 0:  # only without the filter
        os._exit(0)
    os.waitpid(pid, 0)


def _spawn() -> None:  # posix_spawn: clone(CLONE_VM | CLONE_VFORK) + execve
    os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)


def _thread() -> str:
    seen: list[str] = []
    worker = threading.Thread(target=seen.append, args=("ran",))
    worker.start()
    worker.join()
    return seen[0]


def _process_vm_readv(pid: int) -> None:
    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    buffer = ctypes.create_string_buffer(8)
    local = IoVec(ctypes.cast(buffer, ctypes.c_void_p), 8)
    remote = IoVec(0x400000, 8)  # any address: the call is refused before it is read
    _checked(_LIBC.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))


ALGORITHM = _parent_of(os.getppid())  # this server's parent is the slot zygote, whose parent is the algorithm
RESULTS["algorithm_pid"] = ALGORITHM
_attempt("fork", _fork)
_attempt("posix_spawn", _spawn)
_attempt("execve", lambda: os.execv("/nonexistent-hifo-binary", ["x"]))  # ENOENT where execve is allowed
_attempt("kill_algorithm", lambda: os.kill(ALGORITHM, 0))
_attempt("kill_self", lambda: os.kill(os.getpid(), 0))
_attempt("ptrace_algorithm", lambda: _checked(_LIBC.ptrace(PTRACE_ATTACH, ALGORITHM, None, None)))
_attempt("process_vm_readv_algorithm", lambda: _process_vm_readv(ALGORITHM))
_attempt("algorithm_mem", lambda: open(f"/proc/{ALGORITHM}/mem", "rb").close())
_attempt("algorithm_fds", lambda: len(os.listdir(f"/proc/{ALGORITHM}/fd")))
_attempt("socket_unix", lambda: socket.socket(socket.AF_UNIX).close())
_attempt("thread", _thread)

"""Spawning, feeding, timing out and reaping one sandbox child (the parent side, mechanics only).

One thread drives everything through a selector: the job pickle goes in on stdin, the result
comes back on a dedicated pipe (read with a cap), and a pidfd says when the child exited, so
nothing waits on a polling interval. At the deadline the whole process group is killed with
SIGKILL; after any exit the group is killed again so grandchildren never outlive the job.
"""

from __future__ import annotations

import atexit
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"
PASS_THROUGH_ENV = ("LANG", "LC_ALL", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SINGLE_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_CHUNK = 1 << 16
_POLL_S = 0.005  # only without pidfd (non-Linux or kernels before 5.3)
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
# Loads exactly the parent's copy of this package without putting the repository root (or
# anything else) on the child's sys.path, whether or not the package is installed.
LOAD_PACKAGE = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('sandbox', {os.path.join(_PACKAGE_DIR, '__init__.py')!r}, "
    f"submodule_search_locations=[{_PACKAGE_DIR!r}])\n"
    "module = sys.modules['sandbox'] = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
)
_BOOTSTRAP = LOAD_PACKAGE + "from sandbox._child import main\nmain()\n"


def child_env(workdir: str) -> dict[str, str]:
    """The child's whole environment, built from an allowlist: nothing else is inherited."""
    env = {"PATH": MINIMAL_PATH, "HOME": workdir, "TMPDIR": workdir}
    env.update({name: "1" for name in SINGLE_THREAD_ENV})
    env.update({name: os.environ[name] for name in PASS_THROUGH_ENV if name in os.environ})
    env.setdefault("LANG", "C.UTF-8")
    return env


def child_argv(result_fd: int) -> list[str]:
    """``-I``: no PYTHONPATH, user site or cwd on sys.path; ``-B``: no .pyc writes."""
    return [sys.executable, "-I", "-B", "-c", _BOOTSTRAP, str(result_fd)]


@dataclass
class ProcessOutcome:
    returncode: int | None  # negative: killed by that signal; None: exit status lost
    cpu_s: float  # user + system CPU time of the child itself
    timed_out: bool  # we killed it at the wall-clock deadline
    cancelled: str | None  # why someone called kill(), if they did
    result: bytes  # what arrived on the result pipe (at most cap + 1 bytes)
    result_overflow: bool  # the child sent more than the cap; it was killed


class SandboxProcess:
    """One child in its own session and process group. :meth:`run` blocks until it is reaped."""

    def __init__(self, workdir: str, stdout_fd: int, stderr_fd: int, payload: bytes, result_cap: int):
        self._workdir, self._payload, self._cap = workdir, payload, result_cap
        self._stdout_fd, self._stderr_fd = stdout_fd, stderr_fd
        self._pid: int | None = None
        self._reaped = False
        self._lock = threading.Lock()
        self.cancelled: str | None = None

    def run(self, timeout_s: float) -> ProcessOutcome:
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                child_argv(write_fd),
                stdin=subprocess.PIPE,
                stdout=self._stdout_fd,
                stderr=self._stderr_fd,
                pass_fds=(write_fd,),
                cwd=self._workdir,
                env=child_env(self._workdir),
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        with self._lock:
            self._pid = proc.pid
        _LIVE.add(self)
        if self.cancelled:  # kill() raced with the spawn
            self._kill_group()
        timed_out = overflow = False
        received = bytearray()
        try:
            timed_out, overflow = self._drive(proc, read_fd, received, time.monotonic() + timeout_s)
        finally:
            status, cpu_s = self._reap(proc)  # also on KeyboardInterrupt: kill and reap first
            _LIVE.discard(self)
            if not (timed_out or overflow):
                drain(read_fd, received, self._cap)
                overflow = len(received) > self._cap
            os.close(read_fd)
        code = None if status is None else os.waitstatus_to_exitcode(status)
        return ProcessOutcome(code, cpu_s, timed_out, self.cancelled, bytes(received), overflow)

    def kill(self, reason: str) -> None:
        """Kill the whole group from any thread; :meth:`run` then reports ``cancelled``."""
        if self.cancelled is None:
            self.cancelled = reason
        self._kill_group()

    def _kill_group(self) -> None:
        with self._lock:  # the pid (= pgid) is ours until reaped, even as a zombie
            if self._pid is not None and not self._reaped:
                try:
                    os.killpg(self._pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _drive(self, proc: subprocess.Popen, read_fd: int, received: bytearray, deadline: float) -> tuple[bool, bool]:
        """Feed stdin, collect the result, stop at exit, overflow or deadline: (timed_out, overflow)."""
        assert proc.stdin is not None
        stdin_fd = proc.stdin.fileno()
        pidfd = _pidfd(proc.pid)
        sel = selectors.DefaultSelector()
        os.set_blocking(stdin_fd, False)
        os.set_blocking(read_fd, False)
        sel.register(stdin_fd, selectors.EVENT_WRITE, "stdin")
        sel.register(read_fd, selectors.EVENT_READ, "result")
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        sent = 0
        payload = memoryview(self._payload)
        exited = overflow = timed_out = False
        try:
            while not exited:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    self._kill_group()
                    break
                wait = remaining if pidfd is not None else min(remaining, _POLL_S)
                for key, _ in sel.select(wait):
                    if key.data == "exit":
                        exited = True
                    elif key.data == "result":
                        if _read_into(read_fd, received, self._cap) == "eof":
                            sel.unregister(read_fd)
                        if len(received) > self._cap:
                            overflow = True
                            self._kill_group()
                            exited = True
                    elif key.data == "stdin":
                        try:
                            sent += os.write(stdin_fd, payload[sent : sent + _CHUNK])
                        except BlockingIOError:
                            pass
                        except BrokenPipeError:  # the child is gone; its exit status says why
                            sent = len(payload)
                        if sent >= len(payload):
                            sel.unregister(stdin_fd)
                            proc.stdin.close()
                if pidfd is None and _has_exited(proc.pid):
                    exited = True
        finally:
            sel.close()
            if pidfd is not None:
                os.close(pidfd)
            if proc.stdin and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        return timed_out, overflow

    def _reap(self, proc: subprocess.Popen) -> tuple[int | None, float]:
        """Wait without reaping, kill the group while the zombie still pins the pgid, then reap.
        Returns (wait status or None if someone else in this process reaped it, CPU seconds)."""
        try:
            if not _has_exited(proc.pid):  # _drive was interrupted (e.g. KeyboardInterrupt)
                self._kill_group()
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            self._kill_group()
            with self._lock:
                _, status, usage = os.wait4(proc.pid, 0)
                self._reaped = True
        except ChildProcessError:  # a stray waitpid(-1) elsewhere took it: never signal it again
            with self._lock:
                self._reaped = True
            proc.returncode = -1
            return None, 0.0
        proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen never waits on it again
        return status, usage.ru_utime + usage.ru_stime


def drain(read_fd: int, into: bytearray, cap: int) -> None:
    """Read what is left in the non-blocking result pipe, up to cap + 1 bytes. Stops when the
    pipe is empty even if a stray process still holds its write end."""
    while len(into) <= cap and _read_into(read_fd, into, cap) == "data":
        pass


def _read_into(fd: int, into: bytearray, cap: int) -> str:
    """Append one chunk, never past cap + 1 bytes: "data", "empty" (would block) or "eof"."""
    try:
        chunk = os.read(fd, max(1, min(_CHUNK, cap + 1 - len(into))))
    except BlockingIOError:
        return "empty"
    if not chunk:
        return "eof"
    into += chunk
    return "data"


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _has_exited(pid: int) -> bool:
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # already reaped (by someone else)
        return True


class _LiveSet:
    """Children still running, killed if the interpreter exits normally while they run."""

    def __init__(self) -> None:
        self._items: set[SandboxProcess] = set()
        self._lock = threading.Lock()

    def add(self, item: SandboxProcess) -> None:
        with self._lock:
            self._items.add(item)

    def discard(self, item: SandboxProcess) -> None:
        with self._lock:
            self._items.discard(item)

    def kill_all(self, reason: str) -> None:
        with self._lock:
            items = list(self._items)
        for item in items:
            item.kill(reason)


_LIVE = _LiveSet()
atexit.register(_LIVE.kill_all, "the parent interpreter is exiting")

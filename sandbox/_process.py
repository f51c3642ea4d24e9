"""Parent side of one warm worker (zygote): start it, hand it jobs, time them out, close it.

The command line comes from :mod:`hifo.sandbox._launch` (bubblewrap, unshare or none). One job at
a time per zygote: the job's payload goes down in a memfd, stdout/stderr go to the parent's
anonymous capture files, the result comes back on a pipe read with a cap, and the zygote's
events (JSON, never pickles) say when the candidate started and ended. The zygote enforces the
wall-clock deadline; the parent keeps a backstop a little later and kills the whole worker if
the zygote does not answer. A worker that dies before it accepted a job raises
:class:`ZygoteLost`, so the caller can retry on a fresh one.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import pickle
import selectors
import signal
import socket
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from . import _wire
from ._marks import Marks, instance_seconds  # noqa: F401  (instance_seconds: re-exported)
from ._child import PASS_THROUGH_ENV, SINGLE_THREAD_ENV, child_env  # noqa: F401  (re-exported)
from ._launch import LOAD_PACKAGE, launcher_argv  # noqa: F401  (LOAD_PACKAGE: re-exported)
from ._spec import ZygoteSpec  # noqa: F401  (re-exported)
from .job import Job

_CHUNK = 1 << 16
BACKSTOP_S = 3.0  # after the job's deadline, the parent stops waiting for the zygote's word
ACCEPT_S = 30.0  # a live zygote acknowledges a job in microseconds; this long means it is stuck
class ZygoteLost(RuntimeError):
    """The warm worker was gone before it accepted the job: safe to retry on a fresh one."""


class ZygoteStartError(OSError):
    """The warm worker could not be started (the reason holds its stderr)."""


@dataclass
class ProcessOutcome:
    returncode: int | None  # negative: killed by that signal; None: exit status lost
    cpu_s: float  # user + system CPU time of the candidate process itself
    timed_out: bool
    cancelled: str | None
    result: bytes  # what arrived on the result pipe (at most cap + 1 bytes)
    result_overflow: bool
    lost: bool = False  # the zygote died while the candidate ran
    # the parent's clock (time.monotonic) at the arrival of each progress mark of the child:
    # [begin, end of instance 0, end of instance 1, ...]; see :func:`hifo.sandbox._marks.instance_seconds`
    marks: list[float] = dataclasses.field(default_factory=list)
    marks_since: list[float] = dataclasses.field(default_factory=list)  # the read before each mark's read
    overtime: str | None = None  # the parent killed the candidate: an instance ran over its limit


# Zygotes are launched from one long-lived thread: bubblewrap's --die-with-parent and setpriv's
# --pdeathsig fire when the *thread* that forked them exits, and executor threads come and go.
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="hifo-sandbox-spawner")


class Zygote:
    """One warm worker. :meth:`run` is for one thread at a time; :meth:`kill` for any thread."""

    def __init__(self, spec: ZygoteSpec, uids: tuple[int, ...] = (), start_timeout_s: float = 180.0) -> None:
        self.spec, self.uids, self.start_timeout_s = spec, tuple(uids), start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.ctl: socket.socket | None = None
        self.info: dict[str, Any] = {}
        self.jobs = 0
        self.broken = False
        self.leases: list[Any] = []  # the sandbox uid leases (sandbox._pool), released with the worker
        self.cancel_reason: str | None = None  # set by kill(); re-sent once the job has started
        self._lock = threading.Lock()
        self._host_dir: str | None = None
        self._log = tempfile.TemporaryFile(prefix="hifo-zygote-")

    # ---- life cycle ------------------------------------------------------------------------
    def start(self) -> "Zygote":
        mine, theirs = socket.socketpair()
        plan = self.spec.plan
        tmp_root = "/tmp"
        if plan.launcher == "none":
            self._host_dir = tmp_root = tempfile.mkdtemp(prefix="hifo-zyg-")
            os.chmod(tmp_root, 0o711)  # a sandbox uid may enter its own job directory, list nothing
        argv = launcher_argv(self.spec, theirs.fileno())
        try:
            self.proc = _SPAWNER.submit(
                subprocess.Popen, argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
                pass_fds=(theirs.fileno(),), env=child_env(tmp_root), cwd="/", start_new_session=True,
            ).result()
        finally:
            theirs.close()
        self.ctl = mine
        _LIVE.add(self)
        disk = self.spec.disk_bytes
        private_dirs: list[str] = {"bwrap": ["/tmp", "/dev/shm"],
                                   "unshare": ["/tmp", "/var/tmp", "/dev/shm"]}.get(plan.launcher, [])
        config = {
            "launcher": plan.launcher, "parent_pid": os.getpid(), "parent_pidns": _pidns(),
            "site_dirs": list(plan.site_dirs), "sys_path": list(self.spec.sys_path),
            "preload": list(self.spec.preload), "solver_module": self.spec.solver_module,
            "uids": list(self.uids), "seccomp": plan.seccomp, "tmp_root": tmp_root,
            "private_dirs": private_dirs,
            # a directory holding code the worker needs (a checkout in /tmp) is not covered by a tmpfs
            # under unshare: it cannot bind the code back afterwards (bubblewrap can)
            "mount_tmpfs": [(d, size) for d, size in (("/tmp", disk), ("/var/tmp", min(disk, 1 << 24)),
                                                      ("/dev/shm", min(disk, 1 << 26)))
                            if not any(os.path.realpath(p).startswith(d + os.sep) for p in self.spec.ro_paths)]
            if plan.launcher == "unshare" else [],
        }
        config["nest"] = _nest_config(self.spec, private_dirs) if plan.launcher != "none" else None
        try:
            _wire.send(mine, pickle.dumps(config))
            self.info = self._await("ready", time.monotonic() + self.start_timeout_s)
        except (OSError, _wire.WireClosed, TimeoutError) as exc:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            tail = self._log_tail()
            self.close()
            raise ZygoteStartError(f"warm worker did not start ({exc}): {tail}") from None
        return self

    @property
    def alive(self) -> bool:
        return not self.broken and self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """Kill the worker and everything in it; idempotent."""
        self.broken = True
        _LIVE.discard(self)
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # launcher + zygote; namespaces die with init
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if self.spec.plan.launcher == "none":  # no namespace died with it: sweep its uids
                for uid in self.uids:
                    _kill_uid(uid)
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self._host_dir is not None:
            import shutil

            shutil.rmtree(self._host_dir, ignore_errors=True)
            self._host_dir = None
        self._log.close()

    def kill(self, reason: str) -> None:
        """Ask the zygote to kill the running candidate (ignored by it when none runs)."""
        self.cancel_reason = reason
        self._send({"op": "kill", "reason": reason})

    # ---- one job ---------------------------------------------------------------------------
    def run(self, job: Job, out_fd: int, err_fd: int, result_cap: int) -> ProcessOutcome:
        payload = pickle.dumps(
            {"code": job.code, "entry": job.entry, "solver": job.solver, "fence": job.fence,
             "instances": pickle.dumps(list(job.instances), protocol=pickle.HIGHEST_PROTOCOL)},
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        memfd = os.memfd_create("hifo-job", os.MFD_CLOEXEC)
        read_fd, write_fd = os.pipe()
        try:
            _write_all(memfd, payload)
            os.lseek(memfd, 0, os.SEEK_SET)
            header = {"op": "job", "timeout_s": job.limits.timeout_s, "limits": dataclasses.asdict(job.limits)}
            if not self._send(header, (memfd, out_fd, err_fd, write_fd)):
                raise ZygoteLost("the warm worker is gone")
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(memfd)
            os.close(write_fd)
        self.jobs += 1
        try:
            return self._drive(job, read_fd, result_cap)
        finally:
            os.close(read_fd)

    def _drive(self, job: Job, read_fd: int, cap: int) -> ProcessOutcome:
        assert self.ctl is not None
        received = bytearray()
        started, overflow, done = False, False, None
        marks, overtime = Marks(), None
        limits = tuple(job.instance_limits_s)
        deadline = time.monotonic() + ACCEPT_S
        sel = selectors.DefaultSelector()
        os.set_blocking(read_fd, False)
        sel.register(self.ctl, selectors.EVENT_READ, "ctl")
        sel.register(read_fd, selectors.EVENT_READ, "result")
        try:
            while done is None:
                now = time.monotonic()
                remaining = deadline - now
                if remaining <= 0:  # the zygote did not answer in time: kill it whole
                    self.close()
                    if not started:
                        raise ZygoteLost("the warm worker did not accept the job")
                    return ProcessOutcome(None, 0.0, True, None, b"", False)
                index = len(marks.times) - 1  # the instance now running, once the child has begun
                limit = limits[index] if 0 <= index < len(limits) and not marks.done else None
                if limit is not None and overtime is None:
                    over = now - (marks.times[-1] + limit)
                    if over >= 0:  # timed here, from outside the child: kill it now
                        overtime = (f"overtime: instance {index} still running after {now - marks.times[-1]:.2f} s, "
                                    f"over its {limit:.2f} s limit (timed and killed by the parent)")
                        self._send({"op": "kill", "reason": overtime})
                    else:
                        remaining = min(remaining, -over)
                for key, _ in sel.select(remaining):
                    if key.data == "result":
                        state = _read_into(read_fd, received, cap)
                        marks.take(received)
                        if state == "eof":
                            sel.unregister(read_fd)
                        if len(received) > cap and not overflow:
                            overflow = True
                            self.kill("result overflow")
                        continue
                    try:
                        event = _wire.recv_json(self.ctl)
                    except (_wire.WireClosed, OSError):
                        self.close()
                        if not started:
                            raise ZygoteLost("the warm worker died before it accepted the job") from None
                        return ProcessOutcome(None, 0.0, False, None, bytes(received), overflow, lost=True)
                    if event.get("event") == "started":
                        started = True
                        deadline = time.monotonic() + job.limits.timeout_s + BACKSTOP_S
                        if self.cancel_reason is not None:  # a kill that reached an idle zygote
                            self.kill(self.cancel_reason)
                    elif event.get("event") == "done":
                        done = event
        finally:
            sel.close()
        if not overflow:
            drain(read_fd, received, cap)
            marks.take(received)
            overflow = len(received) > cap
        cancelled = done.get("cancelled")
        rc = done.get("returncode")
        if overtime is not None and cancelled == overtime:
            cancelled = None
        else:
            overtime = None  # the candidate had finished before the kill arrived
        return ProcessOutcome(
            returncode=rc if isinstance(rc, int) else None,
            cpu_s=float(done.get("cpu_s") or 0.0),
            timed_out=bool(done.get("timed_out")),
            cancelled=None if overflow or not isinstance(cancelled, str) else cancelled,
            result=bytes(received[marks.scanned:]),
            result_overflow=overflow,
            marks=list(marks.times),
            marks_since=list(marks.since),
            overtime=overtime,
        )

    # ---- helpers ---------------------------------------------------------------------------
    def _send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> bool:
        with self._lock:
            if self.ctl is None or self.broken:
                return False
            try:
                _wire.send(self.ctl, pickle.dumps(message), fds)
                return True
            except OSError:
                return False

    def _await(self, name: str, deadline: float) -> dict[str, Any]:
        assert self.ctl is not None
        sel = selectors.DefaultSelector()
        sel.register(self.ctl, selectors.EVENT_READ)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(remaining):
                    raise TimeoutError(f"no {name!r} within {self.start_timeout_s:.0f} s")
                event = _wire.recv_json(self.ctl)
                if event.get("event") == name:
                    return event
        finally:
            sel.close()

    def _log_tail(self) -> str:
        try:
            size = os.fstat(self._log.fileno()).st_size
            return os.pread(self._log.fileno(), 2000, max(0, size - 2000)).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""


def _nest_config(spec: ZygoteSpec, dirs: list[str]) -> dict[str, Any]:
    """Each candidate's own pid + mount namespace and fresh capped tmpfs (:mod:`hifo.sandbox._nest`);
    code the worker needs under those directories is bound back read-only."""
    rebind = sorted({os.path.realpath(p) for p in spec.ro_paths
                     if any(os.path.realpath(p).startswith(d + os.sep) for d in dirs)})
    # a path inside another one bound back is already there (and could not be created under a read-only bind)
    rebind = [p for p in rebind if not any(p.startswith(q + os.sep) for q in rebind)]
    return {"disk_bytes": spec.disk_bytes, "dirs": list(dirs), "rebind": rebind}


def _kill_uid(uid: int) -> None:
    """Every process of ``uid`` (leased to this worker alone), killed by a helper running as that
    uid (a multi-threaded parent must not change its own ids)."""
    try:
        subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "kill", "-KILL", "-1"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                       env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        pass


def _pidns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


class _LiveSet:
    """Workers still running, killed if the interpreter exits normally."""

    def __init__(self) -> None:
        self._items: set[Zygote] = set()
        self._lock = threading.Lock()

    def add(self, item: Zygote) -> None:
        with self._lock:
            self._items.add(item)

    def discard(self, item: Zygote) -> None:
        with self._lock:
            self._items.discard(item)

    def close_all(self) -> None:
        with self._lock:
            items = list(self._items)
        for item in items:
            item.close()


_LIVE = _LiveSet()
atexit.register(_LIVE.close_all)

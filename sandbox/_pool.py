"""Warm workers kept per :class:`~sandbox._process.ZygoteSpec`, and sandbox uids leased to them.

A pool hands a thread an idle zygote for the job's spec, or starts one; after the job the zygote
goes back to the idle list unless it died or broke. Dead idle zygotes (killed from outside,
OOM-killed, lost with a thread) are noticed on the next acquire and replaced transparently.
The idle list is capped (least recently used closed first) and idle zygotes expire.

Each zygote that drops candidates to a sandbox uid holds a uid of its own for its lifetime, so
concurrent candidates never share a uid (``RLIMIT_NPROC`` is per uid; signals and /proc access
are too). Leases are ``flock``-ed files, so separate processes on one machine (several Ray
workers, several hifo runs) never hand out the same uid; the kernel drops a lease when its
holder dies.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections import OrderedDict

from ._process import Zygote, ZygoteSpec


class UidLease:
    """An exclusive claim on one uid of ``[base, base + count)``, held through an open flock."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    @classmethod
    def acquire(cls, base: int, count: int) -> "UidLease":
        directory = _lease_dir()
        for uid in range(base, base + count):
            fd = os.open(os.path.join(directory, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return cls(uid, fd)
        raise OSError(f"all {count} sandbox uids from {base} are in use")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _lease_dir() -> str:
    root = "/run" if os.access("/run", os.W_OK) else tempfile.gettempdir()
    path = os.path.join(root, f"hifo-sandbox-uids-{os.geteuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.stat(path).st_uid != os.geteuid():
        raise OSError(f"{path} is not owned by this user")
    return path


def start_zygote(spec: ZygoteSpec, start_timeout_s: float = 180.0) -> Zygote:
    """A started zygote, with two uids leased to it when the plan drops candidates to a uid
    (consecutive candidates alternate between them: see :class:`hifo.sandbox._zygote.Zygote`)."""
    leases: list[UidLease] = []
    try:
        if spec.plan.drop_user:
            leases = [UidLease.acquire(spec.plan.uid_base, spec.plan.uid_count) for _ in range(2)]
        zygote = Zygote(spec, uids=tuple(lease.uid for lease in leases), start_timeout_s=start_timeout_s)
    except BaseException:
        for lease in leases:
            lease.release()
        raise
    zygote.leases = leases
    try:
        zygote.start()
    except BaseException:
        stop_zygote(zygote)
        raise
    return zygote


def stop_zygote(zygote: Zygote) -> None:
    zygote.close()
    for lease in zygote.leases:
        lease.release()
    zygote.leases = []


class WarmPool:
    """Idle warm workers by spec. Thread-safe; ``max_idle`` caps idle zygotes over all specs."""

    def __init__(self, max_idle: int | None = None, idle_timeout_s: float = 600.0, start_timeout_s: float = 180.0):
        self.max_idle = max_idle or 2 * (os.cpu_count() or 1)
        self.idle_timeout_s = idle_timeout_s
        self.start_timeout_s = start_timeout_s
        self._idle: OrderedDict[int, tuple[Zygote, float]] = OrderedDict()  # id -> (zygote, idle since)
        self._lock = threading.Lock()
        self.started = self.reused = self.replaced = 0

    def acquire(self, spec: ZygoteSpec) -> Zygote:
        while True:
            found = None
            with self._lock:
                self._expire_locked()
                for key, (zygote, _) in reversed(self._idle.items()):  # most recently used first
                    if zygote.spec == spec:
                        found = self._idle.pop(key)[0]
                        break
            if found is None:
                break
            if found.alive:
                found.cancel_reason = None
                with self._lock:
                    self.reused += 1
                return found
            stop_zygote(found)  # died while idle: replace it
            with self._lock:
                self.replaced += 1
        zygote = start_zygote(spec, self.start_timeout_s)
        with self._lock:
            self.started += 1
        return zygote

    def release(self, zygote: Zygote) -> None:
        if not zygote.alive:
            stop_zygote(zygote)
            return
        zygote.cancel_reason = None
        evicted = []
        with self._lock:
            self._idle[id(zygote)] = (zygote, time.monotonic())
            while len(self._idle) > self.max_idle:
                evicted.append(self._idle.popitem(last=False)[1][0])
        for old in evicted:
            stop_zygote(old)

    def discard(self, zygote: Zygote) -> None:
        stop_zygote(zygote)

    def close(self) -> None:
        with self._lock:
            idle = [z for z, _ in self._idle.values()]
            self._idle.clear()
        for zygote in idle:
            stop_zygote(zygote)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def _expire_locked(self) -> None:
        now = time.monotonic()
        for key, (zygote, since) in list(self._idle.items()):
            if now - since > self.idle_timeout_s:
                del self._idle[key]
                threading.Thread(target=stop_zygote, args=(zygote,), daemon=True).start()


_DEFAULT: WarmPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WarmPool:
    """The process-wide pool shared by every executor that is not given its own."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = WarmPool()
        return _DEFAULT

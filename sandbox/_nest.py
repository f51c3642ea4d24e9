"""A private nest for each candidate: its own pid and mount namespace, fresh size-capped tmpfs.

Used when the warm worker runs behind bubblewrap or ``unshare`` (see ``nest`` in the worker's
config). The pre-forked spare (:func:`hifo.sandbox._child.spare_main`), once it has its job:

1. ``unshare(CLONE_NEWNS | CLONE_NEWPID)``; every mount made private (nothing propagates back to
   the worker);
2. a fresh tmpfs of ``disk_bytes`` on ``/tmp`` and a smaller one on ``/dev/shm`` (and, where the
   worker had one, ``/var/tmp``): what the previous candidate of the same worker wrote is not
   there, and nothing this candidate writes is left for the next one; code that lives under
   ``/tmp`` (a checkout there) is bound back read-only;
3. forks the candidate, which is pid 1 of its own pid namespace: it cannot see or signal the
   worker, the spare or anything outside (``kill(-1)``, ``kill(0)`` and ``getppid()`` reach only
   its own namespace; it starts its own session so its process group holds nothing outside);
   when it ends the kernel kills whatever it left in the namespace;
4. the spare only waits for it and mirrors its exit (code or signal) so the worker's wait4 sees
   the candidate's status and CPU time.

The candidate then drops every capability (as an ordinary user the worker holds
``CAP_SYS_ADMIN`` of bubblewrap's user namespace, needed for step 1-2; as root the switch to a
sandbox uid drops it) before :func:`hifo.sandbox._child.run_candidate` applies the usual layers.
Memory of these tmpfs is page cache charged to the sandbox's memory cgroup, not to the
candidate's ``RLIMIT_AS``; their size caps bound it.
"""

from __future__ import annotations

import ctypes
import os
import signal
from typing import Any

CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE, MS_RDONLY, MS_REMOUNT = 2, 4, 4096, 16384, 1 << 18, 1, 32
PR_SET_PDEATHSIG, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 1, 47, 4
_CAP_V3 = 0x20080522
SHM_CAP = 64 * 1024 * 1024
VAR_TMP_CAP = 16 * 1024 * 1024


class NestError(OSError):
    """The candidate's private namespaces could not be set up (it does not run)."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise NestError(err, f"{what}: {os.strerror(err)}")


def mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: None if s is None else s.encode()
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {fstype or 'bind'} on {target}")


def enter(job: dict[str, Any], config: dict[str, Any]) -> None:
    """Set up the nest and fork the candidate. Returns in the candidate only; the spare waits
    for it and exits with its status. Raises :class:`NestError` (in the spare) on failure."""
    libc = _libc()
    disk = int(config["nest"]["disk_bytes"])
    keep = [p for p in config["nest"].get("rebind", ()) if os.path.exists(p)]
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare(CLONE_NEWNS | CLONE_NEWPID)")
    mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    # code under /tmp (a checkout there), held open in *this* mount namespace and bound back below
    held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep}
    try:
        caps = (("/tmp", disk), ("/dev/shm", min(disk, SHM_CAP)), ("/var/tmp", min(disk, VAR_TMP_CAP)))
        for path, size in caps:
            if path in config["nest"]["dirs"]:
                mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
        for path, fd in held.items():
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
            mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
            mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    finally:
        for fd in held.values():
            os.close(fd)
    workdir = job["workdir"]
    os.makedirs(workdir, 0o700, exist_ok=True)
    if job.get("uid") is not None:
        os.chown(workdir, job["uid"], job["uid"])
    pid = os.fork()
    if pid == 0:  # pid 1 of the new namespace: the candidate
        try:
            os.setsid()
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if job.get("uid") is None:
                drop_capabilities(libc)  # root drops them with its switch to the sandbox uid
        except BaseException:
            os._exit(72)
        return
    _mirror(pid)


def _mirror(pid: int) -> None:
    """Wait for the candidate and leave exactly as it did."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(73)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL) if sig not in (signal.SIGKILL, signal.SIGSTOP) else None
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities(libc: Any) -> None:
    """Clear the ambient, effective, permitted and inheritable sets; checked afterwards."""
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on old kernels: nothing to clear
    header, data = _CapHeader(_CAP_V3, 0), (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset (drop all)")
    if effective_capabilities() != 0:
        raise NestError(0, "capabilities still held after capset")


def effective_capabilities() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1

"""A private nest for each candidate: its own pid and mount namespace, fresh size-capped tmpfs.

Used when the warm worker runs behind bubblewrap or ``unshare`` (see ``nest`` in the worker's
config). The pre-forked spare (:func:`hifo.sandbox._child.spare_main`), while it waits for a job
(so none of this is on a candidate's critical path: :func:`prepare`):

1. ``unshare(CLONE_NEWNS | CLONE_NEWPID)``; every mount made private (nothing propagates back to
   the worker);
2. a fresh tmpfs of ``disk_bytes`` on ``/tmp`` and a smaller one on ``/dev/shm`` (and, where the
   worker had one, ``/var/tmp``): what the previous candidate of the same worker wrote is not
   there, and nothing this candidate writes is left for the next one; code that lives under
   ``/tmp`` (a checkout there) is bound back read-only;
3. forks a tiny init (pid 1 of the new pid namespace), which forks the candidate (pid 2): it
   cannot see or signal the worker, the spare or anything outside (``kill(-1)``, ``kill(0)`` and
   ``getppid()`` reach only its own namespace; it starts its own session so its process group
   holds nothing outside; the kernel ignores its signals to pid 1); when it ends, init exits
   and the kernel kills whatever it left in the namespace;
4. the spare waits and mirrors the candidate's exit (code or signal) so the worker's wait4
   sees the candidate's status and CPU time (each level reaped its child).

Once the job arrives, the candidate (:func:`finish`) makes its directory and drops every capability (as an ordinary
user the worker holds
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
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE, MS_RDONLY, MS_REMOUNT = 2, 4, 8, 4096, 16384, 1 << 18, 1, 32
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
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {fstype or 'bind'} on {target}")


_USER_TASKS = 0  # the user's task count, taken before the candidate's own /proc hid them


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


def prepare(config: dict[str, Any]) -> None:
    """Set up the nest *before* a job arrives (the spare is forked in advance, so this costs
    the candidate nothing). Returns in the future candidate (pid 2) only; the spare waits for
    it and exits with its status. Raises :class:`NestError` (in the spare) on failure."""
    global _USER_TASKS
    libc = _libc()
    disk = int(config["nest"]["disk_bytes"])
    keep = [p for p in config["nest"].get("rebind", ()) if os.path.exists(p)]
    if not config.get("uids"):  # RLIMIT_NPROC counts all the user's tasks: count them while we see them
        _USER_TASKS = tasks_of_user(os.getuid())
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare(CLONE_NEWNS | CLONE_NEWPID)")
    mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    # code under /tmp (a checkout there), held open in *this* mount namespace and bound back below
    held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep}
    try:
        caps = (("/tmp", disk), ("/dev/shm", min(disk, SHM_CAP)), ("/var/tmp", min(disk, VAR_TMP_CAP)))
        for path, size in caps:
            if path in config["nest"]["dirs"]:
                mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=0755")
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
    read_fd, write_fd = os.pipe()
    init = os.fork()
    if init == 0:  # pid 1 of the new namespace: a tiny init, the candidate's parent
        try:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # unhandled: a candidate cannot interrupt it
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            # a /proc of this namespace: the candidate sees no process of the worker or the host
            mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
            candidate = os.fork()
        except BaseException as exc:
            os.write(2, f"hifo sandbox: private namespace init failed: {exc}\n".encode())
            os._exit(74)
        if candidate == 0:  # pid 2: the candidate, once its job arrives
            try:
                os.close(write_fd)
                os.setsid()
                libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            except BaseException:
                os._exit(72)
            return
        _init(candidate, write_fd, libc, not config.get("uids"))
    os.close(write_fd)
    _mirror(init, read_fd)


def finish(job: dict[str, Any]) -> None:
    """In the candidate, once the job is here: its directory in the private /tmp, then every
    capability dropped (as root the switch to the sandbox uid drops them)."""
    workdir = job["workdir"]
    os.makedirs(workdir, 0o700, exist_ok=True)
    if job.get("uid") is not None:
        os.chown(workdir, job["uid"], job["uid"])
    else:
        job["limits"]["user_tasks"] = _USER_TASKS
        drop_capabilities(_libc())


def _init(candidate: int, write_fd: int, libc: Any, drop: bool) -> None:
    """pid 1: reap whatever is orphaned to us until the candidate ends, hand its raw wait status
    to the spare, exit (the kernel then kills everything left in the namespace). The candidate
    being pid 2, not 1, keeps the kernel's signals (SIGXCPU, SIGXFSZ, ...) fatal to it."""
    try:
        if drop:
            drop_capabilities(libc)
        status = 0
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except InterruptedError:
                continue
            except ChildProcessError:
                break
            if pid == candidate:
                break
        os.write(write_fd, int(status).to_bytes(4, "little"))
    finally:
        os._exit(0)


def _mirror(init: int, read_fd: int) -> None:
    """Wait for the namespace's init and leave exactly as the candidate did."""
    data = b""
    while len(data) < 4:
        try:
            chunk = os.read(read_fd, 4 - len(data))
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    while True:
        try:
            _, status = os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(73)
    if len(data) == 4:
        status = int.from_bytes(data, "little")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 75)


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

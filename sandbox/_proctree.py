"""Process-tree and file helpers the zygote uses inside the sandbox (Linux /proc, no deps).

Kept apart from :mod:`hifo.sandbox._zygote` so the serving loop reads on its own: finding a
process's descendants (through ``/proc/<pid>/task/<tid>/children``, or a full ``/proc`` scan
on kernels without ``CONFIG_PROC_CHILDREN``), killing every process of a uid at once, reading
real uids and states, and removing what a dead candidate left even after chmod tricks.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
from typing import Any

MS_NOSUID, MS_NODEV = 2, 4


def pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def exited(pid: int) -> bool:
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def descendants(root: int) -> list[int]:
    """All descendants through /proc/<pid>/task/<tid>/children (a full /proc scan without it)."""
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        kids = children(pid)
        found.extend(kids)
        stack.extend(kids)
    return found


def children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                kids.extend(int(k) for k in handle.read().split())
        except FileNotFoundError:
            return children_by_scan(pid)  # kernel without CONFIG_PROC_CHILDREN
        except OSError:
            continue
    return kids


def children_by_scan(parent: int) -> list[int]:
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = proc_stat(int(name))
            if fields is not None and int(fields[1]) == parent:
                kids.append(int(name))
    return kids


def proc_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()  # [state, ppid, ...]
    except (OSError, IndexError):
        return None


def is_zombie(pid: int) -> bool:
    fields = proc_stat(pid)
    return fields is None or fields[0] in ("Z", "X")


def owns_pid_namespace(parent_ns: str) -> bool:
    """Only then is ``kill(-1)`` safe: a new pid namespace in which we are init or its child."""
    try:
        mine = os.readlink("/proc/self/ns/pid")
    except OSError:
        return False
    return bool(parent_ns) and mine != parent_ns and os.getpid() <= 2


def mount_tmpfs(libc: Any, path: str, size: int) -> None:
    """A private, size-capped tmpfs (we are root in our own mount namespace under ``unshare``)."""
    options = f"size={int(size)},mode=0755".encode()
    if libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount tmpfs on {path}: {os.strerror(errno)}")


def remove(path: str) -> None:
    """Remove what a (now dead) candidate left, even if it chmod-ed directories to 0."""
    if os.path.isdir(path) and not os.path.islink(path):
        chmod_dir(path)
        for dirpath, dirnames, _ in os.walk(path):
            for name in dirnames:
                chmod_dir(os.path.join(dirpath, name))
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def chmod_dir(path: str) -> None:
    if os.path.islink(path):  # chmod follows links: never touch their targets
        return
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass


def kill_as(uid: int) -> None:
    """``kill(-1, SIGKILL)`` with real and effective uid ``uid``: every process of that uid dies
    (the signal permission check matches the sender's uids against the target's), and nothing
    else, whether or not we have a pid namespace. The saved uid 0 lets us return to root."""
    os.setresuid(uid, uid, 0)
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.setresuid(0, 0, 0)


def uid_of(pid: int) -> int | None:
    """The real uid (/proc/<pid> itself is root-owned for non-dumpable processes)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def lock_out(path: str) -> None:
    try:
        os.chown(path, 0, 0)
        os.chmod(path, 0o700)
    except OSError:
        pass

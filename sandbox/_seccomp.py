"""Seccomp filters compiled by libseccomp: a deny-list for the candidate, a stricter one for slot servers.

The rules below are handed to libseccomp (the system's ``libseccomp.so.2``, through the ``pyseccomp``
binding, which mirrors the official bindings' API), which resolves the syscall names, generates the BPF,
adds the architecture checks and loads the program; nothing here assembles BPF.

**The candidate filter** (:func:`install`): applied last, after the identity drop, in the forked candidate
child (:mod:`hifo.sandbox._child`). It is a *deny* list on purpose: numpy, torch and the standard library keep
working, while the calls that widen the kernel's attack surface or reach outside the sandbox fail with an errno:

* ``socket()`` for any family but ``AF_UNIX`` -> EPERM (no IP, netlink or packet sockets, even
  inside an empty network namespace);
* ``clone3`` -> ENOSYS: seccomp cannot read clone3's flags (they sit in a struct in memory),
  so glibc (2.34+) is told the call does not exist and falls back to ``clone``, whose flags
  are in a register and are checked here;
* ``clone`` with a namespace flag, ``unshare``, ``setns`` -> EPERM (no new user namespace, hence
  no fresh "root" inside the sandbox);
* ptrace, process_vm_*, mount and friends, module loading, kexec, bpf, perf_event_open,
  userfaultfd, io_uring (whose operations bypass seccomp), keyrings, handle-based opens -> EPERM.

Any other architecture or ABI (i386 ``int 0x80``, x32 syscall numbers) kills the process (libseccomp's
bad-architecture action, set to ``KILL_PROCESS``; its x86_64 filter sends x32 numbers there too).

**The slot-server filter** (:func:`install_slot_server`), stacked on the first in each slot server
(:mod:`hifo.sandbox._slotproc`) before the candidate is loaded: no new process (``fork``, ``vfork``,
``clone`` without ``CLONE_THREAD``, ``execve``, ``execveat``; threads still start), no ``ptrace``,
``process_vm_readv``/``writev``, ``kcmp``, ``pidfd_getfd``, no signal to any process but itself
(``kill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo`` with another pid, ``tkill``,
``pidfd_send_signal``), and no new socket. A candidate that escapes the in-process fence inside its server
therefore cannot start a helper (a solver run outside the slot's CPU accounting), signal or read the
algorithm process. Reading the algorithm's memory through ``/proc/<pid>/mem`` is stopped by another layer:
the algorithm process is non-dumpable (:mod:`hifo.sandbox._child`).

Both are written for x86_64 (:func:`supported` says so elsewhere; ``hifo doctor`` reports the layer missing).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
from typing import Any

AF_UNIX = 1
CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: one rule each (libseccomp has no "mask != 0")
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "mount", "umount2", "pivot_root", "chroot", "acct", "swapon", "swapoff", "reboot", "sethostname",
    "setdomainname", "iopl", "ioperm", "init_module", "delete_module", "finit_module", "quotactl",
    "lookup_dcookie", "kexec_load", "kexec_file_load", "add_key", "request_key", "keyctl", "perf_event_open",
    "bpf", "userfaultfd", "name_to_handle_at", "open_by_handle_at", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "setns", "unshare",
)
SLOT_DENIED = (
    "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "pidfd_send_signal", "tkill", "socket",
)
# signals: allowed only when the target (first argument) is the calling process itself
SLOT_SELF_SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
BINDING = "pyseccomp"
FIX = ("Linux on x86_64 with CONFIG_SECCOMP_FILTER, libseccomp 2.5.2 or newer (apt-get install -y libseccomp2) "
       "and the Python binding pyseccomp (a hifo dependency: pip install pyseccomp)")


class _Version(ctypes.Structure):  # struct scmp_version
    _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]


@functools.lru_cache(maxsize=1)
def library() -> Any:
    """The ``pyseccomp`` module (imported once: it looks libseccomp up with ``ldconfig``, a subprocess, so the
    warm worker imports it before it forks candidates). Raises ImportError or RuntimeError with the cause."""
    import pyseccomp

    return pyseccomp


def binding_dir() -> str:
    """The directory the binding was imported from (the sandbox's workers get it on their path)."""
    return os.path.dirname(os.path.abspath(library().__file__))


def version() -> str:
    """libseccomp's own version (``seccomp_version()``), e.g. ``"2.5.4"``."""
    lib = library()._libseccomp  # the binding's handle on libseccomp.so.2; it wraps no version call itself
    lib.seccomp_version.restype = ctypes.POINTER(_Version)
    found = lib.seccomp_version().contents
    return f"{found.major}.{found.minor}.{found.micro}"


def describe() -> str:
    """One line for ``hifo doctor``: what compiles and loads the filters."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        binding = f"{BINDING} {dist_version(BINDING)}"
    except PackageNotFoundError:
        binding = BINDING
    return f"libseccomp {version()} ({binding}): candidate deny-list + slot-server filter (x86_64)"


def supported() -> tuple[bool, str]:
    """(usable here, why not): Linux on x86_64 with seccomp filters, libseccomp and its binding, and a
    libseccomp that knows every syscall the filters name."""
    if platform.system() != "Linux":
        return False, f"seccomp is Linux-only (this is {platform.system()})"
    if platform.machine() not in ("x86_64", "AMD64"):
        return False, f"the filters are written and tested for x86_64 only (this is {platform.machine()})"
    try:
        with open("/proc/self/status") as handle:
            if not any(line.startswith("Seccomp:") for line in handle):
                return False, "kernel built without CONFIG_SECCOMP"
    except OSError as exc:
        return False, f"cannot read /proc/self/status: {exc}"
    try:
        seccomp = library()
    except ImportError as exc:
        return False, f"the Python binding {BINDING} is not installed ({exc}); pip install {BINDING}"
    except (RuntimeError, OSError) as exc:
        return False, f"libseccomp could not be loaded ({exc}); apt-get install -y libseccomp2"
    unknown = [name for name in sorted({*DENIED, *SLOT_DENIED, *SLOT_SELF_SIGNALS, "socket", "clone", "clone3"})
               if seccomp.resolve_syscall(seccomp.Arch.X86_64, name) < 0]
    if unknown:
        return False, f"libseccomp {version()} does not know {', '.join(unknown)} (a newer libseccomp is needed)"
    if seccomp.get_api() < 3:
        return False, f"libseccomp {version()} finds no SECCOMP_RET_KILL_PROCESS in this kernel (API level < 3)"
    return True, ""


def _new_filter() -> Any:
    seccomp = library()
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)  # i386, x32: killed, never interpreted
    rules.set_attr(seccomp.Attr.CTL_NNP, 1)  # load sets no_new_privs first (needed without CAP_SYS_ADMIN)
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return rules


@functools.lru_cache(maxsize=1)
def candidate_filter() -> Any:
    """The candidate deny-list as a libseccomp filter context (built once per process; load it with
    :func:`install`). Rules compare whole 64-bit arguments: a value with stray high bits is denied too."""
    seccomp = library()
    rules = _new_filter()
    eperm = seccomp.ERRNO(errno.EPERM)
    rules.add_rule(eperm, "socket", seccomp.Arg(0, seccomp.NE, AF_UNIX))
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for name in DENIED:
        rules.add_rule(eperm, name)
    return rules


def slot_server_filter(pid: int) -> Any:
    """The slot server's filter for process ``pid`` (itself: the only process it may signal)."""
    seccomp = library()
    rules = _new_filter()
    eperm = seccomp.ERRNO(errno.EPERM)
    rules.add_rule(eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))  # a process, not a thread
    for name in SLOT_DENIED:
        rules.add_rule(eperm, name)
    for name in SLOT_SELF_SIGNALS:
        rules.add_rule(eperm, name, seccomp.Arg(0, seccomp.NE, pid))
    return rules


def install() -> None:
    """Set no_new_privs and load the candidate filter on the calling thread (the child is single-threaded
    when this runs, so every later thread and process inherits it). Raises ``OSError``/``RuntimeError``."""
    candidate_filter().load()


def install_slot_server() -> None:
    """Load the slot-server filter in the calling (single-threaded) slot server, on top of what it inherited."""
    slot_server_filter(os.getpid()).load()

"""A small seccomp-BPF deny-list for the candidate process (x86_64 only), built with ctypes.

Applied last, after the identity drop, in the forked candidate child (``hifo.sandbox._candidate``).
It is a *deny* list on purpose: numpy, torch and the standard library keep working, while the
calls that widen the kernel's attack surface or reach outside the sandbox fail with an errno:

* ``socket()`` for any family but ``AF_UNIX`` -> EPERM (no IP, netlink or packet sockets, even
  inside an empty network namespace);
* ``clone3`` -> ENOSYS: seccomp cannot read clone3's flags (they sit in a struct in memory),
  so glibc (2.34+) is told the call does not exist and falls back to ``clone``, whose flags
  are in a register and are checked here;
* ``clone``/``unshare``/``setns`` with namespace flags -> EPERM (no new user namespace, hence
  no fresh "root" inside the sandbox);
* ptrace, process_vm_*, mount and friends, module loading, kexec, bpf, perf_event_open,
  userfaultfd, io_uring (whose operations bypass seccomp), keyrings, handle-based opens -> EPERM.

Architecture or ABI mismatches (i386 ``int 0x80``, x32 numbers) kill the process.
"""

from __future__ import annotations

import ctypes
import platform
import struct
from typing import Iterable

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little endian).
_OFF_NR, _OFF_ARCH = 0, 4


def _arg_lo(index: int) -> int:
    return 16 + 8 * index


AF_UNIX = 1
NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

# x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
SYS_SOCKET, SYS_CLONE, SYS_UNSHARE, SYS_SETNS, SYS_CLONE3 = 41, 56, 272, 308, 435
DENIED = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "acct": 163,
    "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
    "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "finit_module": 313,
    "quotactl": 179, "lookup_dcookie": 212, "kexec_load": 246, "kexec_file_load": 320,
    "add_key": 248, "request_key": 249, "keyctl": 250, "perf_event_open": 298, "bpf": 321,
    "userfaultfd": 323, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "setns": SYS_SETNS, "unshare": SYS_UNSHARE,
}


def supported() -> tuple[bool, str]:
    """(usable here, why not). Needs Linux on x86_64 with seccomp filters in the kernel."""
    if platform.system() != "Linux":
        return False, f"seccomp is Linux-only (this is {platform.system()})"
    if platform.machine() not in ("x86_64", "AMD64"):
        return False, f"the filter is written for x86_64 syscall numbers (this is {platform.machine()})"
    try:
        with open("/proc/self/status") as handle:
            if not any(line.startswith("Seccomp:") for line in handle):
                return False, "kernel built without CONFIG_SECCOMP"
    except OSError as exc:
        return False, f"cannot read /proc/self/status: {exc}"
    return True, ""


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, 0, 0, k & 0xFFFFFFFF)


def _jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def build_filter(denied: Iterable[int] = DENIED.values()) -> bytes:
    """The BPF program as raw ``struct sock_filter`` bytes (8 bytes per instruction)."""
    errno_eperm = RET_ERRNO | EPERM
    prog = [
        _stmt(_LD_W_ABS, _OFF_ARCH),
        _jump(_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        _stmt(_RET_K, RET_KILL_PROCESS),
        _stmt(_LD_W_ABS, _OFF_NR),
        _jump(_JGE_K, X32_SYSCALL_BIT, 0, 1),
        _stmt(_RET_K, RET_KILL_PROCESS),
        _jump(_JEQ_K, SYS_CLONE3, 0, 1),
        _stmt(_RET_K, RET_ERRNO | ENOSYS),
    ]
    for number in sorted(set(denied)):
        prog += [_jump(_JEQ_K, number, 0, 1), _stmt(_RET_K, errno_eperm)]
    # Tail, A = nr. Jump offsets count from the next instruction:
    #  t0 socket?  t1 A=arg0  t2 AF_UNIX?  t3 ALLOW  t4 clone?  t5 A=arg0  t6 ns flags?
    #  t7 ALLOW  t8 EPERM  t9 ALLOW
    prog += [
        _jump(_JEQ_K, SYS_SOCKET, 0, 3),  # t0: not socket -> t4
        _stmt(_LD_W_ABS, _arg_lo(0)),  # t1: the domain
        _jump(_JEQ_K, AF_UNIX, 0, 5),  # t2: AF_UNIX -> t3, any other family -> t8
        _stmt(_RET_K, RET_ALLOW),  # t3
        _jump(_JEQ_K, SYS_CLONE, 0, 4),  # t4: not clone -> t9
        _stmt(_LD_W_ABS, _arg_lo(0)),  # t5: the flags (first argument on x86_64)
        _jump(_JSET_K, NAMESPACE_FLAGS, 1, 0),  # t6: any namespace flag -> t8, else t7
        _stmt(_RET_K, RET_ALLOW),  # t7
        _stmt(_RET_K, errno_eperm),  # t8
        _stmt(_RET_K, RET_ALLOW),  # t9
    ]
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes | None = None) -> None:
    """Set no_new_privs and load the filter on the calling thread (the child is single-threaded
    when this runs, so every later thread and process inherits it). Raises ``OSError``."""
    program = build_filter() if program is None else program
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")

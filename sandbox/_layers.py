"""Isolation layers: what this machine can do (probed once, at start-up) and what a level asks.

Layers beyond the always-on process layer (own session, rlimits, scrubbed environment, temp
directory, capped output, every descendant killed after each candidate):

``unprivileged_user``  the candidate never runs as root: as root, the forked child drops to a
                       sandbox uid/gid of its own (``setgroups([])``, ``setresgid``,
                       ``setresuid``; all capabilities go) with no_new_privs; as an ordinary
                       user it already is unprivileged.
``pid_namespace``      its own pid namespace (bubblewrap, or ``unshare --pid`` as root): the
                       candidate cannot see, signal or read ``/proc`` of any host process,
                       the parent included, or of any other candidate.
``network_namespace``  an empty network namespace: no address is reachable, loopback neither.
``read_only_fs``       bubblewrap: the whole file system read-only; fresh tmpfs on /tmp,
                       /dev/shm, /run; as an ordinary user, $HOME hidden too.
``bounded_disk``       /tmp (the candidate's directory lives there) is a tmpfs of
                       ``JobLimits.max_disk_bytes`` (bubblewrap ``--size``, or a tmpfs the
                       zygote mounts in its own mount namespace under ``unshare``).
``seccomp``            filters compiled by libseccomp (:mod:`hifo.sandbox._seccomp`, x86_64): the
                       candidate's deny-list, and a stricter one in each slot server (no new
                       process, no exec, no ptrace, no signal to another process).

Levels: ``strict`` refuses to run (:class:`IsolationUnavailable`) unless every layer is
available; ``standard`` applies what is available and warns loudly about what is missing;
``minimal`` is sandbox v1 (process layer only) and always warns.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
import warnings
from dataclasses import dataclass, field
from typing import Any

from . import _seccomp

LEVELS = ("strict", "standard", "minimal")
LAYERS = ("unprivileged_user", "pid_namespace", "network_namespace", "read_only_fs", "bounded_disk", "seccomp")
FIX = {
    "unprivileged_user": "run as root (the child then drops to a sandbox uid) with an interpreter and "
    "site-packages readable by that uid",
    "pid_namespace": "apt-get install -y bubblewrap (or run as root, where `unshare` is used)",
    "network_namespace": "apt-get install -y bubblewrap (or run as root, where `unshare` is used)",
    "read_only_fs": "apt-get install -y bubblewrap",
    "bounded_disk": "apt-get install -y bubblewrap (or run as root, where `unshare` is used)",
    "seccomp": _seccomp.FIX,
}
UID_BASE = 60000  # as in the IOI sandbox `isolate`: a block of ids no real user has (60000-60999)
UID_COUNT = 1000
_PATH = "/usr/local/bin:/usr/bin:/bin"


class IsolationUnavailable(RuntimeError):
    """``strict`` isolation was asked for and a layer is missing on this machine."""


@dataclass(frozen=True)
class Probe:
    """What this machine offers (detection only; nothing here changes the system)."""

    is_root: bool
    bwrap: str | None
    bwrap_version: str | None
    bwrap_error: str | None  # None: usable
    unshare: str | None
    unshare_error: str | None
    setpriv: str | None
    seccomp_error: str | None
    python: str  # interpreter for the zygote (and so for the candidate)
    site_dirs: tuple[str, ...]
    python_error: str | None  # why a sandbox uid could not run it (root only)
    userns_blocked: str | None = None  # cause and fix when bubblewrap failed for want of user namespaces
    seccomp_backend: str | None = None  # what compiles the filters (libseccomp's version, the binding)

    def fix(self, layer: str) -> str:
        """How to add ``layer`` here: the user-namespace fix when that is what stops bubblewrap."""
        if self.userns_blocked and layer != "unprivileged_user" and layer != "seccomp" and not self.is_root:
            return self.userns_blocked
        return FIX[layer]

    def available(self) -> dict[str, str | None]:
        """layer -> how it would be provided, or None when it cannot be."""
        bwrap_ok, unshare_ok = self.bwrap_error is None, self.unshare_error is None and self.is_root
        ns = "bubblewrap" if bwrap_ok else "unshare (root)" if unshare_ok else None
        if self.is_root:
            user = None if self.python_error else "setresuid to a sandbox uid + no_new_privs"
        else:
            user = "not root already (no_new_privs added)"
        return {
            "unprivileged_user": user,
            "pid_namespace": ns,
            "network_namespace": ns,
            "read_only_fs": "bubblewrap --ro-bind / /" if bwrap_ok else None,
            "bounded_disk": "bubblewrap --size tmpfs" if bwrap_ok else "tmpfs in a private mount namespace"
            if unshare_ok else None,
            "seccomp": (self.seccomp_backend or "libseccomp") if self.seccomp_error is None else None,
        }

    def why_missing(self, layer: str) -> str:
        if layer == "unprivileged_user":
            return self.python_error or "unknown"
        if layer == "seccomp":
            return self.seccomp_error or "unknown"
        if layer == "read_only_fs":
            return self.bwrap_error or "unknown"
        reasons = [f"bubblewrap: {self.bwrap_error}"]
        reasons.append(f"unshare: {self.unshare_error}" if self.is_root else "unshare: needs root")
        return "; ".join(reasons)


@dataclass(frozen=True)
class IsolationPlan:
    """What a level resolves to on this machine. Hashable: part of a warm worker's key."""

    level: str
    launcher: str  # "bwrap" | "unshare" | "none"
    drop_user: bool  # setresuid to a sandbox uid in each candidate child (root only)
    seccomp: bool
    python: str
    site_dirs: tuple[str, ...]
    applied: tuple[str, ...]
    missing: tuple[str, ...]
    warnings: tuple[str, ...] = field(compare=False)
    uid_base: int = UID_BASE
    uid_count: int = UID_COUNT

    def describe(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "launcher": self.launcher,
            "layers": {name: name in self.applied for name in LAYERS},
            "missing": list(self.missing),
            "sandbox_python": self.python,
            "sandbox_uids": f"{self.uid_base}-{self.uid_base + self.uid_count - 1}" if self.drop_user else None,
            "warnings": list(self.warnings),
        }


def resolve(level: str = "standard", *, warn: bool = True, probe_result: Probe | None = None) -> IsolationPlan:
    """The plan for ``level`` here; ``strict`` raises :class:`IsolationUnavailable`."""
    if level not in LEVELS:
        raise ValueError(f"isolation level must be one of {LEVELS}, not {level!r}")
    found = probe_result or probe()
    offer = found.available()
    if level == "minimal":
        mine = () if found.is_root else ("unprivileged_user",)
        others = tuple(name for name in LAYERS if name not in mine)
        plan = IsolationPlan(level, "none", False, False, sys.executable, found.site_dirs, mine, others, (
            "isolation level 'minimal' (sandbox v1): no separate user, no namespaces, no read-only file "
            "system, no seccomp; the candidate can read what this user can read and reach the network",
        ) + (_root_warning(),) * found.is_root)
        return _warned(plan, warn)
    missing = tuple(name for name in LAYERS if offer[name] is None)
    if level == "strict" and missing:
        details = "; ".join(f"{name} ({found.why_missing(name)}; fix: {found.fix(name)})" for name in missing)
        raise IsolationUnavailable(f"strict isolation refused: missing layers: {details}")
    launcher = "bwrap" if found.bwrap_error is None else "unshare" if offer["pid_namespace"] else "none"
    drop = found.is_root and offer["unprivileged_user"] is not None
    notes = tuple(
        f"isolation level {level!r}: layer {name!r} is MISSING ({found.why_missing(name)}); fix: {found.fix(name)}"
        for name in missing
    )
    if missing and found.userns_blocked and not found.is_root:  # one note for the cause, not one per layer
        notes = (f"isolation level {level!r}: bubblewrap cannot create a user namespace, so layers "
                 f"{', '.join(missing)} are MISSING (bubblewrap: {found.bwrap_error}); {found.userns_blocked}",)
    if found.is_root and not drop:
        notes += (_root_warning(),)
    applied = tuple(name for name in LAYERS if name not in missing)
    python = found.python if drop else sys.executable
    plan = IsolationPlan(level, launcher, drop, offer["seccomp"] is not None, python, found.site_dirs, applied,
                         missing, notes)
    return _warned(plan, warn)


def _root_warning() -> str:
    return ("the candidate runs as ROOT: RLIMIT_NPROC is not enforced and it can read every process's "
            "/proc/<pid>/environ that its namespaces let it see")


class SandboxWarning(RuntimeWarning):
    """A layer is missing. Shown once, as ``WARNING: hifo sandbox: ...`` on stderr; the warning
    object is still raised for code that records warnings (the default display is off, so the
    same text is not printed twice)."""


warnings.filterwarnings("ignore", category=SandboxWarning)
_SHOWN: set[str] = set()


def _warned(plan: IsolationPlan, warn: bool) -> IsolationPlan:
    if warn:
        for note in plan.warnings:
            warnings.warn(f"hifo sandbox: {note}", SandboxWarning, stacklevel=3)
            if note not in _SHOWN:  # each note once per process, whichever level asked
                _SHOWN.add(note)
                print(f"WARNING: hifo sandbox: {note}", file=sys.stderr)
    return plan


@functools.lru_cache(maxsize=1)
def probe() -> Probe:
    """Detect tools and kernel features (cached for the process; runs two tiny commands)."""
    is_root = os.geteuid() == 0
    bwrap = shutil.which("bwrap", path=_PATH)
    unshare = shutil.which("unshare", path=_PATH)
    python, site_dirs, python_error = _sandbox_python(is_root)
    bwrap_error = "not installed" if bwrap is None else _try([bwrap, *BWRAP_PROBE, "true"])
    unshare_error = "not installed" if unshare is None else (
        _try([unshare, *UNSHARE_ARGS, "true"]) if is_root else "needs root (not used without it)")
    ok, seccomp_error = _seccomp.supported()
    if ok:  # the sandbox's interpreter must find the binding this process found (not always on its site path)
        binding = _seccomp.binding_dir()
        if is_root and not readable_by_others(binding):
            ok, seccomp_error = False, f"{_seccomp.BINDING} in {binding} is not readable by other users (the sandbox uid)"
        elif binding not in site_dirs:
            site_dirs += (binding,)
    backend = _seccomp.describe() if ok else None
    blocked = userns_diagnosis(bwrap_error) if bwrap_error and bwrap and not is_root else None
    return Probe(
        is_root=is_root, bwrap=bwrap, bwrap_version=_version(bwrap), bwrap_error=bwrap_error,
        unshare=unshare, unshare_error=unshare_error, setpriv=shutil.which("setpriv", path=_PATH),
        seccomp_error=None if ok else seccomp_error, python=python, site_dirs=site_dirs, python_error=python_error,
        userns_blocked=blocked, seccomp_backend=backend,
    )


_USERNS_SIGNS = ("namespace", "uid map", "uid_map", "ENOSPC", "EPERM", "Operation not permitted",
                 "Permission denied", "No space left")


def _sysctl(name: str) -> str | None:
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as fh:
            return fh.read().strip()
    except OSError:
        return None


def userns_diagnosis(bwrap_error: str, read: Any = _sysctl) -> str | None:
    """When bubblewrap (installed) fails for want of unprivileged user namespaces: the cause and
    its fix, from the kernel's switches; None when the failure is something else."""
    if not any(sign.lower() in bwrap_error.lower() for sign in _USERNS_SIGNS):
        return None
    head = "unprivileged user namespaces are blocked on this machine (bubblewrap is installed; it is not the problem)"
    if read("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return (f"{head}: AppArmor restricts them (kernel.apparmor_restrict_unprivileged_userns=1, the default "
                "on Ubuntu 23.10/24.04); fix: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` "
                "(persist it in /etc/sysctl.d/), or give /usr/bin/bwrap an AppArmor profile with `userns,`")
    if read("kernel.unprivileged_userns_clone") == "0":
        return (f"{head}: kernel.unprivileged_userns_clone=0 (Debian); fix: "
                "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (persist it in /etc/sysctl.d/)")
    if read("user.max_user_namespaces") == "0":
        return (f"{head}: user.max_user_namespaces=0; fix: `sudo sysctl -w user.max_user_namespaces=15000` "
                "(persist it in /etc/sysctl.d/)")
    return (f"{head}, though `sysctl kernel.apparmor_restrict_unprivileged_userns kernel.unprivileged_userns_clone "
            "user.max_user_namespaces` allow them: a container or an enclosing sandbox forbids them; fix: allow "
            "user namespaces there (e.g. docker run --security-opt seccomp=unconfined --security-opt "
            "apparmor=unconfined), or run hifo as root (the `unshare` launcher)")


BWRAP_PROBE = ("--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc",
               "--dev", "/dev", "--size", "1048576", "--tmpfs", "/tmp", "--")
UNSHARE_ARGS = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts", "--")


def _try(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, env={"PATH": _PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]


def _version(tool: str | None) -> str | None:
    if tool is None:
        return None
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def _sandbox_python(is_root: bool) -> tuple[str, tuple[str, ...], str | None]:
    """The interpreter a sandbox uid can run, the site-packages it adds, or why there is none.

    As root the candidate runs as an unprivileged uid, so everything it may import lazily must
    be readable by "others". This interpreter when it is (e.g. /usr/bin/python3); otherwise the
    system interpreter of the *same* major.minor (compiled extensions in site-packages keep
    their ABI within a minor version), e.g. when this one is a pyenv build under /root (0700).
    """
    sites = tuple(d for d in site.getsitepackages() if os.path.isdir(d))
    if not is_root:
        return sys.executable, sites, None
    unreadable = [d for d in sites if not readable_by_others(d)]
    if unreadable:
        return sys.executable, sites, f"site-packages not readable by other users: {', '.join(unreadable)}"
    if readable_by_others(os.path.realpath(sys.executable)) and readable_by_others(sysconfig.get_paths()["stdlib"]):
        return sys.executable, sites, None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        real = os.path.realpath(candidate)
        if os.path.isfile(real) and readable_by_others(real) and readable_by_others(f"/usr/lib/python{version}"):
            return candidate, sites, None
    return sys.executable, sites, (
        f"{sys.executable} is not readable by other users and no system python{version} was found "
        f"(apt-get install -y python{version})")


def readable_by_others(path: str) -> bool:
    """Mode bits only (ACLs ignored): every directory on the way o+x, the target o+r."""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for depth in range(1, len(parts) + 1):
        current = os.sep + os.path.join(*parts[1:depth]) if depth > 1 else os.sep
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return False
        last = depth == len(parts)
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
        if last and not mode & stat.S_IROTH:
            return False
    return True


def machine() -> str:
    return f"{platform.system()} {platform.release()} ({platform.machine()})"

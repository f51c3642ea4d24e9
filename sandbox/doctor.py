"""What isolation this machine can give a candidate (for ``hifo doctor``). Detection only."""

from __future__ import annotations

import os
import platform
import resource
import shutil
import sys
from typing import Any

_RLIMITS = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NPROC")
_TOOLS = {
    "setpriv": "run the child as an unprivileged user with no_new_privs",
    "unshare": "network / pid / mount namespaces",
    "bwrap": "bubblewrap: read-only file system, no network, pid namespace",
}


def isolation_report() -> dict[str, Any]:
    """Layers sandbox v1 applies here, tools a later version will use, and warnings."""
    is_root = os.geteuid() == 0
    rlimits = {name: hasattr(resource, name) for name in _RLIMITS}
    tools = {
        name: {"path": shutil.which(name), "purpose": purpose, "used": "not used by sandbox v1"}
        for name, purpose in _TOOLS.items()
    }
    warnings = [
        "sandbox v1 has no namespaces, no separate user and no seccomp: a candidate can read "
        "what this user can read and reach the network",
    ]
    if is_root:
        warnings.append(
            "running as root: RLIMIT_NPROC is not enforced and the candidate can read any "
            "process's /proc/<pid>/environ; run hifo as an ordinary user"
        )
    missing = [name for name, ok in rlimits.items() if not ok]
    if missing:
        warnings.append(f"rlimits unavailable on this platform: {', '.join(missing)}")
    return {
        "sandbox": "v1",
        "platform": f"{platform.system()} {platform.release()}",
        "python": sys.executable,
        "euid": os.geteuid(),
        "is_root": is_root,
        "layers": {
            "session": hasattr(os, "setsid"),
            "rlimits": rlimits,
            "rlimit_nproc_enforced": rlimits["RLIMIT_NPROC"] and not is_root,
            "scrubbed_env": True,
            "temp_dir": True,
            "exit_notification": "pidfd" if hasattr(os, "pidfd_open") else "polling every 5 ms",
            "parent_death_signal": platform.system() == "Linux",
            "namespaces": "not used by sandbox v1",
        },
        "tools": tools,
        "unprivileged_userns": _read_sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
        "warnings": warnings,
    }


def _read_sysctl(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None

"""What isolation this machine can give a candidate (for ``hifo doctor`` and each run's record).

Detection only: :func:`isolation_report` probes the tools and kernel features once per process
(two tiny ``bwrap``/``unshare`` runs) and says, for a level, which layers a run would get,
which are missing and how to add them. It never raises for a missing layer, ``strict``
included: refusing is the executor's job.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from ._layers import LAYERS, LEVELS, IsolationUnavailable, machine, probe, resolve


def isolation_report(level: str = "standard") -> dict[str, Any]:
    """Plain data (JSON-able): the machine's layers, the plan for ``level``, tools, warnings."""
    found = probe()
    offer = found.available()
    try:
        plan: dict[str, Any] = resolve(level, warn=False, probe_result=found).describe()
    except IsolationUnavailable as exc:
        plan = {"level": level, "refused": str(exc)}
    levels = {}
    for name in LEVELS:
        try:
            resolve(name, warn=False, probe_result=found)
            levels[name] = "runs"
        except IsolationUnavailable:
            levels[name] = "refuses to run (missing layers)"
    return {
        "sandbox": "v2",
        "platform": machine(),
        "python": sys.executable,
        "sandbox_python": found.python,
        "site_dirs": list(found.site_dirs),
        "euid": os.geteuid(),
        "is_root": found.is_root,
        "layers": {
            name: offer[name] or f"MISSING: {found.why_missing(name)} (fix: {found.fix(name)})" for name in LAYERS
        },
        "always": "own session, rlimits (address space, CPU, open files, file size, no core, processes), "
        "allowlisted environment, fresh temporary directory, capped output, every candidate process killed "
        "at its end (child subreaper), wall-clock deadline",
        "levels": levels,
        "plan": plan,
        "warm_workers": "a zygote per (solver module, sys.path, preload, disk quota) forks each candidate; "
        "exit notification by " + ("pidfd" if hasattr(os, "pidfd_open") else "polling every 5 ms"),
        "tools": {
            "bwrap": {"path": found.bwrap, "version": found.bwrap_version,
                      "usable": found.bwrap_error is None, "error": found.bwrap_error,
                      "user_namespaces": "allowed" if found.is_root or found.bwrap_error is None
                      else found.userns_blocked or "not the cause of the error above"},
            "unshare": {"path": found.unshare, "usable": found.unshare_error is None, "error": found.unshare_error},
            "setpriv": {"path": found.setpriv, "used": "--pdeathsig for the unshare launcher (identity is "
                        "dropped in-process with setresuid)"},
            "libseccomp": {"usable": found.seccomp_error is None, "backend": found.seccomp_backend,
                           "error": found.seccomp_error},
        },
        "warnings": list(plan.get("warnings", [])) or ([plan["refused"]] if "refused" in plan else []),
        "kernel": platform.release(),
    }

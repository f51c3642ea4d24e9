"""Helpers for the sandbox tests: isolation plans (real and with a layer taken away), process checks.

Tests that need a layer skip with the reason the machine lacks it; the fallback plans
(``unshare`` instead of bubblewrap, and no launcher at all) are built from the real probe with
a tool marked missing, so the fallback code paths run for real on a machine that has both.
"""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from hifo.sandbox._layers import probe, resolve


def standard_plan():
    return resolve("standard", warn=False)


def fallback_plan(launcher: str):
    """``standard`` as it resolves when bubblewrap (and, for "none", unshare) is missing."""
    found = probe()
    missing = {"bwrap_error": "simulated: not installed"}
    if launcher == "none":
        missing["unshare_error"] = "simulated: not installed"
    elif found.unshare_error is not None or not found.is_root:
        pytest.skip(f"the unshare launcher needs root and util-linux unshare: {found.unshare_error}")
    return resolve("standard", warn=False, probe_result=dataclasses.replace(found, **missing))


def needs(*layers: str):
    """Skip unless ``standard`` applies every one of ``layers`` here, saying what is missing."""
    plan = standard_plan()
    missing = [name for name in layers if name not in plan.applied]
    reasons = "; ".join(f"{name}: {probe().why_missing(name)}" for name in missing)
    return pytest.mark.skipif(bool(missing), reason=f"isolation layer missing here ({reasons})")


def gone(pid: int, within_s: float = 3.0) -> bool:
    """True once host ``pid`` no longer runs (absent, or a zombie waiting to be reaped)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def host_processes_with(token: str) -> list[int]:
    """Host pids whose command line contains ``token`` (works across pid namespaces)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found

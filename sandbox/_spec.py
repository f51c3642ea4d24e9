"""What makes two jobs able to share a warm worker (its own module: the launcher and the process
code both need it, and neither imports the other's internals for it)."""

from __future__ import annotations

from dataclasses import dataclass

from ._layers import IsolationPlan


@dataclass(frozen=True)
class ZygoteSpec:
    """What makes two jobs able to share a warm worker."""

    plan: IsolationPlan
    solver_module: str
    sys_path: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    disk_bytes: int = 256 * 1024 * 1024
    ro_paths: tuple[str, ...] = ()  # the import paths: the only non-system paths bound in (bwrap)

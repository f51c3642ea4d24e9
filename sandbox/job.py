"""What the sandbox is handed and what it hands back.

The sandbox knows nothing about evaluators or the agent: a :class:`Job` names the candidate
source, the function to take from it, and a *trusted* solver callable (``module:attr``) that
the child imports and calls as ``solver(candidate_function, instance)`` for each instance.
Whatever the solver returns must be JSON-serialisable; the parent never unpickles anything
that came from the child (or from the warm worker that forked it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "error", "timeout", "memory", "output_limit", "crashed", "invalid"]


@dataclass(frozen=True)
class JobLimits:
    timeout_s: float = 30.0  # wall clock for the whole job; the process group is killed after it
    cpu_s: int = 60  # RLIMIT_CPU
    memory_mb: int = 2048  # RLIMIT_AS
    max_output_bytes: int = 64 * 1024  # captured stdout+stderr kept, the rest dropped
    max_solution_bytes: int = 32 * 1024 * 1024  # result channel cap
    max_open_files: int = 64  # RLIMIT_NOFILE
    max_file_bytes: int = 16 * 1024 * 1024  # RLIMIT_FSIZE
    max_processes: int = 64  # RLIMIT_NPROC: tasks (processes and threads) of the candidate; not for root
    max_disk_bytes: int = 256 * 1024 * 1024  # size of the candidate's /tmp (bubblewrap or unshare tmpfs)


@dataclass(frozen=True)
class Job:
    code: str  # full candidate source (imports + function)
    entry: str  # name of the function to take from ``code``
    solver: str  # "package.module:Attr" (``Attr.solve`` if Attr is a class, else Attr itself)
    instances: list[Any]  # picklable; sent parent -> child only
    limits: JobLimits = field(default_factory=JobLimits)
    job_id: str = ""
    # Directories the child puts in front of its sys.path before importing ``solver`` and
    # unpickling ``instances`` (the child runs with ``python -I``, which ignores PYTHONPATH and
    # the working directory). Trusted input from the parent, like ``solver``.
    sys_path: tuple[str, ...] = ()
    # Modules the warm worker imports once, before forking candidates (the solver's module is
    # always imported): name the heavy libraries candidates use (e.g. ("numpy",), ("torch",)).
    preload: tuple[str, ...] = ()
    # The slot fence (:mod:`hifo.sandbox._fence`): ``{"imports": [module, ...]}`` the candidate may
    # import; None runs the candidate unfenced (a plain solver with no algorithm state to protect).
    fence: dict[str, Any] | None = None
    # Seconds each instance may take (None: no limit), enforced by the parent on its own clock from
    # the child's progress marks: an instance still running past its limit gets the candidate killed
    # at once (status "timeout", reason "overtime: ..."). Empty: only ``limits.timeout_s`` applies.
    instance_limits_s: tuple[float | None, ...] = ()


@dataclass
class SandboxResult:
    status: Status
    solutions: list[Any] = field(default_factory=list)  # one per instance, JSON-decoded
    error: str | None = None  # readable reason when status != "ok"
    stdout: str = ""  # capped
    stderr: str = ""  # capped
    wall_s: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)  # which layers were applied
    output_truncated: bool = False  # stdout/stderr went over max_output_bytes; the rest was dropped
    # seconds per instance; from the sandbox: timed by the parent between the child's progress marks
    # (its own clock, from outside the child); from InProcessExecutor: timed in the calling process
    instance_s: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

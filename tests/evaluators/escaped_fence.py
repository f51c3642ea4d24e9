"""Test support: a candidate that has escaped the slot fence (issue 28), emulated inside the real sandbox.

Named in a job's ``preload`` (with this directory in ``Job.sys_path``), this module is imported by the
sandbox's warm worker before it forks candidates. It replaces the sandbox's candidate loader with one that
ignores the fence, so whatever loads a candidate in that worker's children (the slot server of a
``slot_process`` evaluator; the sandbox child itself for a job without one) runs it as plain Python: the
real builtins, every module (``sys``, ``gc``, ``hifo``, ``elkai``), frames, and no audit window — what
issue 28's ``__array_interface__`` escape handed a candidate. Everything else stays as the sandbox makes
it: namespaces, uid, seccomp, rlimits, and the slot process with its restricted unpickler.

Warm workers are keyed by their ``preload`` list (``sandbox/_pool.py`` compares whole specs), so no job that
does not name this module ever meets the patched loader. Outside a sandbox worker importing it does nothing.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

PACKAGE = "_hifo_sandbox"  # the name the sandbox's worker loads hifo.sandbox under (sandbox/_launch.py)


def _install() -> bool:
    if PACKAGE not in sys.modules:
        return False
    execute = importlib.import_module(f"{PACKAGE}._execute")
    fenced_loader = execute.load_candidate

    def load_unfenced(code: str, entry: str, fence: dict[str, Any] | None = None) -> Any:
        return fenced_loader(code, entry, None)  # plain exec in a fresh module: the fence is gone

    execute.load_candidate = load_unfenced
    return True


INSTALLED = _install()

"""Package shape: exports, doctor report, dependency direction, cheap child imports, helpers."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hifo import sandbox
from hifo.sandbox import _execute, isolation_report
from hifo.sandbox._nest import tasks_of_user
from hifo.sandbox._process import LOAD_PACKAGE

PACKAGE = Path(sandbox.__file__).parent
OURS = {"hifo", "agents", "evaluators", "problems", "knowledge_base", "benchmarks", "tests"}


def test_curated_exports_resolve():
    assert sorted(sandbox.__all__) == sorted(sandbox._EXPORTS)
    for name in sandbox.__all__:
        assert getattr(sandbox, name).__doc__ or name in ("Status", "LEVELS")
    with pytest.raises(AttributeError):
        sandbox.nonexistent  # noqa: B018


def test_sandbox_imports_nothing_else_of_ours():
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not {n.split(".")[0] for n in names} & OURS, path.name


def test_worker_side_imports_stay_light():
    """The zygote and the candidate child load none of the parent-side machinery (nor ray)."""
    heavy = ("subprocess", "concurrent.futures", "_hifo_sandbox.runner", "_hifo_sandbox.executor", "_hifo_sandbox._process",
             "ray")
    code = LOAD_PACKAGE + (f"import json, _hifo_sandbox._child, _hifo_sandbox._zygote\n"
                           f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_isolation_report_describes_layers_levels_and_tools():
    report = isolation_report()
    json.dumps(report)  # plain data for `hifo doctor --json`
    assert report["sandbox"] == "v2" and report["is_root"] == (os.geteuid() == 0)
    assert set(report["layers"]) == {"unprivileged_user", "pid_namespace", "network_namespace", "read_only_fs",
                                     "bounded_disk", "seccomp"}
    assert set(report["tools"]) == {"setpriv", "unshare", "bwrap", "libseccomp"}
    assert report["levels"]["minimal"] == "runs" and report["levels"]["standard"] == "runs"
    missing = [name for name, how in report["layers"].items() if how.startswith("MISSING")]
    assert (report["levels"]["strict"] == "runs") == (not missing)
    assert report["plan"]["missing"] == missing
    for name in missing:  # every missing layer says how to get it
        assert "fix:" in report["layers"][name]
    assert isolation_report("minimal")["plan"]["level"] == "minimal"


def test_tasks_of_user_counts_at_least_this_process_threads():
    assert tasks_of_user(os.getuid()) >= 1
    assert tasks_of_user(2**31 - 7) == 0


def test_capped_text_keeps_the_budget_and_marks_the_drop():
    sink = bytearray()
    stream = _execute.CappedText(sink.extend, budget=10)
    assert stream.write("héllo") == 5  # 6 bytes
    assert stream.write("world!") == 6
    assert bytes(sink[:10]) == "héllo".encode() + b"worl" and stream.truncated
    assert b"output over the limit" in bytes(sink[10:])
    size = len(sink)
    stream.write("more")
    assert len(sink) == size  # the notice is written once
    with pytest.raises(TypeError):
        stream.write(b"bytes")

"""No secret of the parent reaches the candidate: not its environment, not through /proc."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap

import pytest
from sandbox_helpers import fallback_plan
from solvers import HERE

from hifo.sandbox._child import PASS_THROUGH_ENV, SINGLE_THREAD_ENV
from hifo.sandbox._numeric import PINNED_VARS, pinned_numeric_env

PROBE = textwrap.dedent(
    """
    import os
    def read(path):
        try:
            with open(path, 'rb') as handle:
                return handle.read().decode('utf-8', 'replace')
        except OSError as exc:
            return None
    def f(x):
        every = {p: read(f'/proc/{p}/environ') for p in os.listdir('/proc') if p.isdigit()}
        return {
            'environ': dict(os.environ),
            'self': read('/proc/self/environ'),
            'parent': read(f'/proc/{os.getppid()}/environ'),
            'every': every,
            'pids': sorted(int(p) for p in every),
        }
    """
)

# A separate parent process whose *exec-time* environment holds the secrets, so that
# /proc/<parent>/environ really contains them (os.environ edits would not show there).
PARENT = textwrap.dedent(
    f"""
    import json, os, sys
    sys.path.insert(0, {HERE!r})
    from solvers import make_job
    from hifo.sandbox import run_job
    from sandbox_helpers import fallback_plan
    level = sys.argv[1]
    plan = level if level in ("standard", "minimal") else fallback_plan(level)
    result = run_job(make_job(sys.stdin.read()), isolation=plan)
    print(json.dumps({{"pid": os.getpid(), "status": result.status, "error": result.error,
                      "solutions": result.solutions, "layers": result.isolation["layers"],
                      "gaps": result.isolation["gaps"]}}))
    """
)


@pytest.mark.parametrize("level", ["standard", "none"])
def test_api_keys_and_tokens_never_reach_the_child(level):
    if level != "standard":
        fallback_plan(level)  # skips with the reason when this fallback cannot run here
    key, token = "sk-" + secrets.token_hex(16), secrets.token_hex(16)
    token_name = f"HIFO_TEST_{secrets.token_hex(4).upper()}_TOKEN"
    env = {**os.environ, "OPENAI_API_KEY": key, token_name: token, "PYTHONPATH": "/nowhere"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PARENT, level], input=PROBE, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "ok", report["error"]
    seen = report["solutions"][0]

    # Always: the child's own environment is built from the allowlist only.
    allowed = {"PATH", "HOME", "TMPDIR", *SINGLE_THREAD_ENV, *PASS_THROUGH_ENV, *PINNED_VARS}
    assert set(seen["environ"]) <= allowed
    # the numeric kernels are pinned (issue 26): the same figures on every x86-64 CPU with AVX2
    for var, value in pinned_numeric_env().items():
        assert seen["environ"].get(var) == value, var
    assert seen["environ"]["OMP_NUM_THREADS"] == "1" and seen["environ"]["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    everything = json.dumps(seen)
    for secret in (key, token, token_name):
        assert secret not in everything  # not in its environ, nor in any /proc/<pid>/environ it can read

    layers = report["layers"]
    if layers["pid_namespace"]:
        assert report["pid"] not in seen["pids"]  # the parent is not even visible
    if layers["unprivileged_user"] or layers["pid_namespace"]:
        assert not any("/proc/<parent>/environ" in gap for gap in report["gaps"])


def test_minimal_level_declares_what_it_leaves_open():
    from hifo.sandbox import run_job
    from solvers import make_job

    result = run_job(make_job("def f(x):\n    return x\n"), isolation="minimal")
    assert result.ok
    assert result.isolation["level"] == "minimal" and result.isolation["namespaces"] == "none"
    gaps = " ".join(result.isolation["gaps"])
    assert "network" in gaps and "seccomp" in gaps and "pid namespace" in gaps
    if os.geteuid() == 0:
        assert "runs as root" in gaps

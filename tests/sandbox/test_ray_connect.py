"""A failed Ray Client connection leaves the process able to start Ray again.

Ray 2.60 turns client mode on before it connects to ``ray://`` and leaves it on when the connection fails, so
every later ``ray.init()`` in the process, a local one too, dies on an ``internal_kv`` assertion. CI met this:
one flaky client-server start-up failed ``test_search_through_ray_client`` and then every test of
``test_ray.py`` at set-up. ``RayExecutor`` clears the flag when its own ``ray.init`` fails.

The failed connection runs in a fresh interpreter: it leaves gRPC's threads behind, and a process with them
must not fork afterwards (gRPC skips its fork handlers; later tests that fork the pytest process, the seccomp
and slot-process tests, then died of SIGSEGV / SIGABRT when this ran in-process)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

pytest.importorskip("ray", reason="ray is not installed (optional extra: pip install 'hifo[ray]')")
pytest.importorskip("grpc", reason="Ray Client needs ray[client]")

SCRIPT = """
import json, sys
import ray
from ray._private import client_mode_hook
from ray.util.client import worker
from hifo.sandbox import RayExecutor

worker.INITIAL_TIMEOUT_SEC = worker.MAX_TIMEOUT_SEC = 1  # Ray's own retries, 1 s each instead of 5-30 s
try:
    RayExecutor(f"ray://127.0.0.1:{sys.argv[1]}")
    raised = None
except Exception as exc:
    raised = type(exc).__name__
print(json.dumps({"raised": raised, "client_mode": client_mode_hook.is_client_mode_enabled,
                  "initialized": ray.is_initialized()}))
"""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def test_a_failed_client_connection_leaves_client_mode_off():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(_closed_port())], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["raised"] == "ConnectionError"
    assert got["client_mode"] is False  # Ray alone leaves it True here
    assert got["initialized"] is False

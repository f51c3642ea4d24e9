"""A failed Ray Client connection leaves the process able to start Ray again.

Ray 2.60 turns client mode on before it connects to ``ray://`` and leaves it on when the connection fails, so
every later ``ray.init()`` in the process, a local one too, dies on an ``internal_kv`` assertion. CI met this:
one flaky client-server start-up failed ``test_search_through_ray_client`` and then every test of
``test_ray.py`` at set-up. ``RayExecutor`` clears the flag when its own ``ray.init`` fails."""

from __future__ import annotations

import socket

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra: pip install 'hifo[ray]')")
pytest.importorskip("grpc", reason="Ray Client needs ray[client]")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def test_a_failed_client_connection_leaves_client_mode_off(monkeypatch):
    from ray._private import client_mode_hook
    from ray.util.client import worker

    from hifo.sandbox import RayExecutor

    if ray.is_initialized():
        pytest.skip("a Ray instance is already initialised in this process")
    monkeypatch.setattr(worker, "INITIAL_TIMEOUT_SEC", 1)  # Ray's own retries, 1 s each instead of 5-30 s
    monkeypatch.setattr(worker, "MAX_TIMEOUT_SEC", 1)
    with pytest.raises(ConnectionError):
        RayExecutor(f"ray://127.0.0.1:{_closed_port()}")
    assert client_mode_hook.is_client_mode_enabled is False  # Ray alone leaves it True here
    assert not ray.is_initialized()

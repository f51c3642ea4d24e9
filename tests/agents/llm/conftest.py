"""Shared fixtures for the model-client tests. Every test here runs with outbound network blocked:
only loopback connections (the fake HTTP server) are allowed."""

import socket

import pytest


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and self.family != socket.AF_UNIX:
            raise OSError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only(socket.getaddrinfo))


def _loopback_only(real):
    def getaddrinfo(host, *args, **kwargs):
        if host not in (None, "127.0.0.1", "::1", "localhost"):
            raise socket.gaierror(f"test tried to resolve {host!r}")
        return real(host, *args, **kwargs)

    return getaddrinfo


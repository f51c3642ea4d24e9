"""Length-prefixed messages over a Unix stream socket, with file descriptors attached.

Used between the parent and a zygote, and between a zygote and its candidate child. Only the
message *format* lives here; who may unpickle what is decided by the callers: the parent
sends pickles *down* (it is trusted) but reads only JSON coming *up* from inside the sandbox.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct("<I")
MAX_MESSAGE = 1 << 20  # control messages are small; job payloads travel in a memfd
MAX_FDS = 8


class WireClosed(EOFError):
    """The other end closed the socket (or sent something that is not a message)."""


def send(sock: socket.socket, data: bytes, fds: tuple[int, ...] = ()) -> None:
    if len(data) > MAX_MESSAGE:
        raise ValueError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    frame = _HEADER.pack(len(data)) + data
    sent = socket.send_fds(sock, [frame], list(fds)) if fds else sock.send(frame)
    if sent < len(frame):
        sock.sendall(frame[sent:])


def recv(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One whole message and the descriptors that came with it; ``WireClosed`` on EOF."""
    head, fds = _recv_exact(sock, _HEADER.size, want_fds=True)
    (size,) = _HEADER.unpack(head)
    if size > MAX_MESSAGE:
        for fd in fds:
            _close(fd)
        raise WireClosed(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    body, _ = _recv_exact(sock, size, want_fds=False)
    return body, fds


def _recv_exact(sock: socket.socket, size: int, want_fds: bool) -> tuple[bytes, list[int]]:
    data = bytearray()
    fds: list[int] = []
    while len(data) < size:
        if want_fds and not data:
            chunk, got, _flags, _addr = socket.recv_fds(sock, size, MAX_FDS)
            fds.extend(got)
        else:
            chunk = sock.recv(size - len(data))
        if not chunk:
            for fd in fds:
                _close(fd)
            raise WireClosed("connection closed")
        data += chunk
    return bytes(data), fds


def send_json(sock: socket.socket, obj: dict[str, Any]) -> None:
    send(sock, json.dumps(obj, separators=(",", ":")).encode())


def recv_json(sock: socket.socket) -> dict[str, Any]:
    """Decode a message from inside the sandbox: JSON only, and it must be an object."""
    body, fds = recv(sock)
    for fd in fds:  # nothing from inside may hand the parent descriptors
        _close(fd)
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireClosed(f"malformed message: {exc}") from None
    if not isinstance(obj, dict):
        raise WireClosed("malformed message: not an object")
    return obj


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass

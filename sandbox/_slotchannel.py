"""The slot process's per-call channel (:mod:`hifo.sandbox._slotproc`): frames in an anonymous shared mapping,
one half per direction, each followed by its direction's frame counter; the waiting side spins on the counter
for a while, then blocks on an eventfd. Frames too large for the mapping, and all control, go over the socket
pair as length-prefixed frames (:func:`_send`, :func:`_recv`)."""

from __future__ import annotations

import mmap
import os
import socket
import struct
import time
from typing import Any

from . import _slotcodec

_LEN = struct.Struct("!Q")
_SEQ_COUNT = struct.Struct("<Q")
IN_PLACE = (b"c", b"a", b"r")  # frame kinds in the compact encoding: read in place (see _Channel.read)
MAX_FRAME = 1 << 30
CHANNEL_BYTES = 1 << 20  # each direction's shared-memory frame; larger frames go over the socket
_OVER_SOCKET = (1 << 64) - 1
_REQUEST, _ANSWER = 0, CHANNEL_BYTES
_SEQ = {_REQUEST: 2 * CHANNEL_BYTES, _ANSWER: 2 * CHANNEL_BYTES + 8}  # each direction's frame counter
# How long a side spins on the other's frame counter (yielding the CPU between looks) before it blocks on its
# eventfd: a blocked process's wake-up costs ~50 us on a 2-core VM, a look at shared memory ~1 us, and most
# slot calls (and the algorithm's work between them) take well under this. x86-64 only: its stores become
# visible in program order (the frame before the counter); elsewhere every call blocks on the eventfd.
SPIN_S = 2e-4 if __import__("platform").machine().lower() in ("x86_64", "amd64") else 0.0


def _spin_budget() -> float:
    """:data:`SPIN_S` when a core is likely free for the other side to run on at once (the 1-minute load
    average, which counts this job, below the CPUs this process may use less half a core), else 0: on a busy machine two spinning
    processes only take turns on a core (measured beside two CPU hogs: bpp_online's calls 82 -> 113 us)."""
    if not SPIN_S:
        return 0.0
    try:
        cpus = len(os.sched_getaffinity(0))
        return SPIN_S if os.getloadavg()[0] < cpus - 0.5 else 0.0
    except (OSError, AttributeError):
        return 0.0


class _Channel:
    """The per-call path: frames in an anonymous shared mapping (one half per direction), an eventfd
    per direction as the wake-up. Made by the algorithm process before it forks the slot zygote, so every
    slot server inherits it; between instances the algorithm drops its pages (MADV_REMOVE: the next
    server reads zeros) and drains both eventfds, so nothing a server left there reaches the next."""

    def __init__(self) -> None:
        self.mem = mmap.mmap(-1, 2 * CHANNEL_BYTES + 16)  # MAP_SHARED | MAP_ANONYMOUS; two frames, two counters
        self.view = memoryview(self.mem)
        self.to_slot = os.eventfd(0, os.EFD_NONBLOCK)
        self.to_algorithm = os.eventfd(0, os.EFD_NONBLOCK)
        self.sent = {_REQUEST: 0, _ANSWER: 0}  # this side's count of frames per direction (sent or awaited)
        self.spin_s = _spin_budget()
        self.spin = {_REQUEST: self.spin_s, _ANSWER: self.spin_s}  # this side's spin budget per direction (adaptive)

    def send(self, offset: int, kind: bytes, body: bytes, wake: int, sock: socket.socket) -> None:
        """Write a frame, then its direction's counter, then wake the other side (``wake``: its eventfd; the
        other side may already have seen the counter while spinning, so a wake-up only says "look again"); a
        frame too large for the mapping is announced there and follows on the socket."""
        n = len(body) + 1
        self.sent[offset] += 1
        seq = self.sent[offset].to_bytes(8, "little")
        if n + _LEN.size > CHANNEL_BYTES:
            self.mem[offset:offset + _LEN.size] = _LEN.pack(_OVER_SOCKET)
            self.mem[_SEQ[offset]:_SEQ[offset] + 8] = seq
            os.eventfd_write(wake, 1)
            _send(sock, kind, body)
            return
        start = offset + _LEN.size
        self.mem[offset:start] = _LEN.pack(n)
        self.mem[start:start + 1] = kind
        self.mem[start + 1:start + n] = body
        self.mem[_SEQ[offset]:_SEQ[offset] + 8] = seq
        os.eventfd_write(wake, 1)

    def send_value(self, offset: int, kind: bytes, value: Any, wake: int, sock: socket.socket) -> bool:
        """:meth:`send` of ``value``'s compact encoding (:mod:`hifo.sandbox._slotcodec`), written straight into the
        frame (no intermediate bytes); False, with nothing sent, when the codec does not carry ``value``."""
        start = offset + _LEN.size + 1
        try:
            end = _slotcodec.encode_into(value, self.mem, start, offset + CHANNEL_BYTES)
        except _slotcodec.Full:
            body = _slotcodec.encode(value)
            if body is None:
                return False
            self.send(offset, kind, body, wake, sock)  # too large for the mapping: over the socket
            return True
        if end is None:
            return False
        self.sent[offset] += 1
        _LEN.pack_into(self.mem, offset, end - offset - _LEN.size)
        self.mem[offset + _LEN.size] = kind[0]
        _SEQ_COUNT.pack_into(self.mem, _SEQ[offset], self.sent[offset])
        os.eventfd_write(wake, 1)
        return True

    def wait(self, offset: int, wake: int, poller: Any) -> set[int]:
        """Wait for the next frame in ``offset``'s direction: spin on its counter for up to :data:`SPIN_S`, then
        block in ``poller`` (which watches ``wake``, the eventfd the sender writes after the counter, and maybe
        other fds). Returns the set of other fds that became ready instead (empty: the frame is there)."""
        self.sent[offset] += 1
        want = self.sent[offset].to_bytes(8, "little")
        mem, at = self.mem, _SEQ[offset]
        # Adaptive: a spin that found the frame keeps the full budget; one that had to block halves it (on a
        # loaded machine, or for a slot whose calls take longer than the budget, spinning only takes the CPU
        # from the other side), down to none; every 32nd wait spins a quarter budget again, to notice a change.
        budget, full = self.spin[offset], self.spin_s
        if full and budget < full / 4 and self.sent[offset] % 32 == 0:
            budget = full / 4
        if budget:
            deadline = time.perf_counter() + budget
            looks = 0
            while mem[at:at + 8] != want:
                looks += 1
                if looks & 15 == 0:
                    if time.perf_counter() > deadline:
                        self.spin[offset] = budget / 2 if budget > full / 32 else 0.0
                        break
                    os.sched_yield()  # the other side may be waiting for this core
            else:
                self.spin[offset] = full
                return set()
        while mem[at:at + 8] != want:  # checked before every block: a wake-up is never lost
            ready = {fd for fd, _ in poller.poll()}
            if wake in ready:
                try:
                    os.eventfd_read(wake)
                except BlockingIOError:
                    pass
            others = ready - {wake}
            if others and mem[at:at + 8] != want:
                return others
        return set()

    def read(self, offset: int, sock: socket.socket) -> tuple[bytes, Any]:
        """The frame in ``offset``'s direction: its kind and body. The body of a compact-encoded frame (kinds in
        :data:`IN_PLACE`) is a memoryview of the mapping itself, to be decoded at once (:func:`_slotcodec.decode`
        reads each byte once, so the other side writing it meanwhile cannot make it inconsistent); any other body
        is a copy (bytes: later writes cannot change it)."""
        n = _LEN.unpack_from(self.mem, offset)[0]
        if n == _OVER_SOCKET:
            return _recv(sock)
        if not 1 <= n <= CHANNEL_BYTES - _LEN.size:
            raise EOFError("bad frame length")
        start = offset + _LEN.size
        kind = self.mem[start:start + 1]
        if kind in IN_PLACE:
            return kind, self.view[start + 1:start + n]
        return kind, self.mem[start + 1:start + n]

    def reset(self) -> None:
        self.mem.madvise(mmap.MADV_REMOVE)  # frames and counters read zero again
        self.sent = {_REQUEST: 0, _ANSWER: 0}
        self.spin = {_REQUEST: self.spin_s, _ANSWER: self.spin_s}
        for fd in (self.to_slot, self.to_algorithm):
            try:
                os.eventfd_read(fd)
            except BlockingIOError:
                pass


def _send(sock: socket.socket, kind: bytes, body: bytes) -> None:
    sock.sendall(_LEN.pack(len(body) + 1) + kind + body)


def _recv(sock: socket.socket) -> tuple[bytes, bytes]:
    size = _LEN.unpack(_exact(sock, _LEN.size))[0]
    if not 1 <= size <= MAX_FRAME:
        raise EOFError("bad frame length")
    frame = _exact(sock, size)
    return frame[:1], frame[1:]


def _exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("closed")
        buf += chunk
    return bytes(buf)

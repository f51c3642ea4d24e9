"""A slot in a process of its own, a fresh one per instance: the candidate sees only the slot's arguments.

For every included evaluator's slot (an evaluator sets ``slot_process = True``;
``Job.fence["process"]``; each call costs a round trip, see ``benchmarks/sandbox_overhead.py --slot-only``),
the sandbox child forks a *slot zygote*
before it unpickles the instances. The slot zygote closes the result pipe and the zygote's
socket and drops the instances' pickled bytes (freed, not zeroed); it never runs candidate code.
For each instance it forks a *slot server*: that process stacks the slot-server seccomp filter on the
candidate's (:func:`hifo.sandbox._seccomp.install_slot_server`: no new process, no exec, no ptrace, no signal
to another process; when the seccomp layer is applied), installs the fence's audit hook, loads
the candidate under the fence and answers calls on a socket pair: the algorithm process (the
child itself) sends the arguments, the slot server sends back the return value. At the end of
the instance the algorithm tells the server to leave; the zygote reaps it, kills whatever it
started (its process group) and forks the next server from its own pristine memory.

So the candidate shares no memory with the algorithm (it cannot patch the algorithm's modules,
read its caller's frames or the other instances, or reach the result channel, whatever the
in-process fence would have missed), and nothing it kept while solving one instance (module
globals, function attributes, caches, anything it mapped or opened, even after a fence escape)
exists in the process that serves the next: module state comes from a fresh load of the source.

Wire: frames of an 8-byte length, one kind byte and a body. Control goes over a socket pair: algorithm ->
zygote ``N`` (start a server); server -> algorithm ``R`` + its pid once loaded, or ``F``; zygote ->
algorithm ``X`` + how a server ended. Calls go through :class:`_Channel` (shared memory, eventfd
wake-ups; a frame over :data:`CHANNEL_BYTES` is announced there and follows on the socket): algorithm ->
server ``C`` + pickle of ``(args, kwargs)`` (trusted data), ``A`` (the same, and the arguments come back
too), ``c``/``a`` (the same in the compact encoding of :mod:`hifo.sandbox._slotcodec`, used whenever it carries
the values: ~10 us less per call than pickling both ways), ``E`` (leave); server -> algorithm ``r`` + the compact
encoding of the return value, or ``R`` + a pickle read by :class:`_Restricted` (plain containers,
numbers, strings and numpy arrays/scalars; no other class is ever looked up, so no code of the candidate
runs in the algorithm's process), or ``F`` + JSON ``{"status", "reason"}`` for a failure (exception,
fence violation, unencodable value). If a server dies during a call, its pidfd wakes the algorithm, which
then reads the zygote's ``X``.

Budgets: ``SlotProxy.slot_cpu_s`` is the CPU time of every slot server so far after it reported the
candidate loaded (read by the algorithm process from the server's process CPU clock, ``/proc/<pid>/stat``
where that fails, and the wall time of the calls where neither can be read), for evaluators whose budget
is the evaluating process's CPU time (``milp_primal``, ``fmip_guidance``); it is read when asked for, so a
call costs no clock reads. Loading (the fence's check and the candidate's module body) is left out on
every instance alike: the first server loads before the first instance, the others inside an instance's
first call, and in-process a candidate's load was never charged either. Each
process's memory limit is its own (RLIMIT_AS is per process), so a job may use up to twice
``memory_mb``.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import pickle
import select
import signal
import socket
import time
from typing import Any

from . import _execute, _seccomp, _slotcodec
from ._slotchannel import _ANSWER, _REQUEST, CHANNEL_BYTES, _Channel, _recv, _send  # noqa: F401 (CHANNEL_BYTES: tests)

PR_SET_PDEATHSIG = 1


class _Restricted(pickle.Unpickler):
    """Unpickles plain data and numpy arrays only (the slot process's answers)."""

    ALLOWED = {("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset")}
    NUMPY = {"_reconstruct", "_frombuffer", "ndarray", "dtype", "scalar"}

    def find_class(self, module: str, name: str) -> Any:
        numpy_ok = module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric",
                              "numpy._core.numeric")
        if (module, name) in self.ALLOWED or (numpy_ok and name in self.NUMPY):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the slot may return plain data and numpy arrays only, not {module}.{name}")


def loads_restricted(data: bytes) -> Any:
    return _Restricted(io.BytesIO(data)).load()


def fork(payload: dict[str, Any], close_fds: tuple[int, ...], limits: dict[str, Any], *,
         contain: bool = False) -> "SlotProxy":
    """In the sandbox child, before the instances are unpickled: start the slot process. Returns the
    proxy in the child; the slot process serves calls and never returns. ``contain``: each slot server
    loads the slot-server seccomp filter before the candidate (the sandbox passes its seccomp layer)."""
    if contain:
        _seccomp.library()  # imported here, once (it runs ldconfig): a server could not start it under its filter
    mine, theirs = socket.socketpair()
    channel = _Channel()
    pid = os.fork()
    if pid == 0:  # the slot process
        try:
            mine.close()
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            for fd in close_fds:  # the result pipe, the zygote's socket: out of the candidate's reach
                try:
                    os.close(fd)
                except OSError:
                    pass
            code, entry, fence = payload["code"], payload["entry"], payload["fence"]
            payload.clear()  # the instances' pickled bytes: the last reference goes
        except BaseException:
            os._exit(72)
        _zygote(theirs, channel, code, entry, fence, limits, contain)
    theirs.close()
    return SlotProxy(pid, mine, payload["entry"], channel)


def _zygote(sock: socket.socket, channel: _Channel, code: str, entry: str, fence: dict[str, Any],
            limits: dict[str, Any], contain: bool) -> None:
    """The slot zygote: on each ``N``, fork a slot server and wait for it; never runs candidate code."""
    while True:
        try:
            kind, _ = _recv(sock)
        except (OSError, EOFError):
            os._exit(0)
        if kind != b"N":
            os._exit(73)
        pid = os.fork()
        if pid == 0:
            try:
                ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with the zygote
                os.setpgid(0, 0)  # its own group: whatever it starts is killed with it
                keep = {0, 1, 2, sock.fileno(), channel.to_slot, channel.to_algorithm}
                for name in os.listdir("/proc/self/fd"):
                    if int(name) not in keep:
                        try:
                            os.close(int(name))
                        except OSError:
                            pass
            except BaseException:
                os._exit(72)
            _serve(sock, channel, code, entry, fence, limits, contain)
        try:
            status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            status = -1
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:  # the server is gone: say how (a proxy still waiting for an answer learns it died)
            _send(sock, b"X", _describe_status(status).encode())
        except OSError:
            os._exit(0)


def _describe_status(status: int) -> str:
    if status < 0:
        return "exit status lost"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _serve(sock: socket.socket, channel: _Channel, code: str, entry: str, fence: dict[str, Any],
           limits: dict[str, Any], contain: bool) -> None:
    """One slot server: load the candidate (its outcome over the socket), then answer calls over the channel
    until ``E``."""
    from . import _fence

    try:
        if contain:  # first: no candidate code (nor a module it imports) runs here without the filter
            try:
                _seccomp.install_slot_server()
            except Exception as exc:
                raise _execute.JobFailure("error", f"sandbox setup failed: slot-server seccomp filter: "
                                                   f"{_execute.one_line(exc)}") from None
        _slotcodec.freeze()  # torch.Tensor as loaded, before the candidate could rebind it
        _fence.install()
        function = _execute.load_candidate(code, entry, fence)
    except _execute.JobFailure as failure:
        _send_failure(sock, failure.status, failure.reason)
        os._exit(0)
    except BaseException as exc:
        _send_failure(sock, *_execute.describe_exception(exc, "while loading the candidate", limits))
        os._exit(0)
    _send(sock, b"R", pickle.dumps(os.getpid()))  # loaded

    def answer(kind: bytes, body: bytes) -> None:
        channel.send(_ANSWER, kind, body, channel.to_algorithm, sock)

    poller = select.poll()
    poller.register(channel.to_slot, select.POLLIN)
    while True:
        try:
            channel.wait(_REQUEST, channel.to_slot, poller)
            kind, body = channel.read(_REQUEST, sock)
        except (OSError, EOFError):
            os._exit(0)
        if kind not in (b"C", b"A", b"c", b"a"):
            os._exit(0)  # "E": the instance is over
        # from the algorithm process (trusted): the compact encoding, or a pickle of what it does not carry
        args, kwargs = _slotcodec.decode(body) if kind in (b"c", b"a") else pickle.loads(body)
        try:
            value = function(*args, **kwargs)
            if kind in (b"A", b"a"):  # the arguments as the call left them go back too (state the slot keeps)
                value = (value, args, kwargs)
            violation = _fence.take_violation()
            if violation:
                answer(b"F", _failure("error", violation))
                continue
            # exact built-in, numpy and torch types only: runs no candidate method
            if channel.send_value(_ANSWER, b"r", value, channel.to_algorithm, sock):
                continue
            _fence._enter()  # pickling may run the candidate's own methods: inside the audit window
            try:
                data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                _fence._leave()
        except BaseException as exc:  # noqa: BLE001  (reported, the process goes on serving)
            violation = _fence.take_violation()
            if violation:
                answer(b"F", _failure("error", violation))
            else:
                answer(b"F", _failure(*_execute.describe_exception(exc, "in the slot process", limits)))
            continue
        answer(b"R", data)


class SlotProxy:
    """The candidate's function as the algorithm sees it: each call goes to the current slot server.

    ``pid`` is the slot zygote's; ``server_pid`` the server of the current instance (None between
    instances: the next call, or :meth:`ready`, starts one). :meth:`next_instance` ends the server, so
    the next instance is served by a fresh load of the candidate in a fresh process. Calls travel through
    the shared-memory channel; loading, the end of a server and oversized frames through the socket."""

    def __init__(self, pid: int, sock: socket.socket, entry: str, channel: _Channel) -> None:
        self.pid, self.sock, self.channel, self.__name__ = pid, sock, channel, entry
        self.server_pid: int | None = None
        self.servers = 0  # slot servers started so far (one per instance)
        self._ended_cpu_s = 0.0  # CPU seconds of the servers that have ended (after loading), measured from outside
        self._load_cpu_s = 0.0  # the current server's CPU seconds when it reported the candidate loaded
        self._unclocked_s = 0.0  # wall time of calls to servers whose CPU time could not be read
        self.calls = 0
        self._tick = os.sysconf("SC_CLK_TCK")
        self._poll: Any = None
        self._clock_failed = False
        self._pidfd: int | None = None

    def ready(self) -> "SlotProxy":
        """Start the server of the first instance and wait until the candidate is loaded; raises
        JobFailure with the slot process's reason."""
        if self.server_pid is None:
            self.channel.reset()  # a fresh server counts its frames from zero, and reads zeros
            _send(self.sock, b"N", b"")
            pid = self._decode(*self._recv_socket())
            if not isinstance(pid, int):
                raise _execute.JobFailure("invalid", "the slot process answered with a malformed frame")
            self.server_pid = pid
            self.servers += 1
            self._pidfd = os.pidfd_open(pid)
            self._poll = select.poll()
            self._poll.register(self.channel.to_algorithm, select.POLLIN)
            self._poll.register(self._pidfd, select.POLLIN)
            loaded = self._cpu()
            if loaded is None:  # no clock for this server: its calls are charged their wall time
                self._clock_failed = True
            self._load_cpu_s = loaded or 0.0
        return self

    def next_instance(self) -> None:
        """The instance is over: its server leaves (and takes everything it kept with it); returns once
        the zygote has reaped it and the channel is wiped."""
        if self.server_pid is None:
            return
        self._drop_server()
        self.channel.send(_REQUEST, b"E", b"", self.channel.to_slot, self.sock)
        kind, _ = self._recv_socket()
        if kind != b"X":
            raise _execute.JobFailure("invalid", "the slot process answered after the end of its instance")
        self.channel.reset()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(b"C", args, kwargs)

    def call_returning_args(self, *args: Any, **kwargs: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        """``(value, args, kwargs)``: the value and the arguments as the slot's call left them, for slots that
        keep state in an argument they mutate (a ``memory`` dict); read like any answer (plain data only)."""
        value, args_after, kwargs_after = self._call(b"A", args, kwargs)
        return value, tuple(args_after), dict(kwargs_after)

    def _call(self, kind: bytes, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.ready()
        started = time.perf_counter()
        try:
            if not self.channel.send_value(_REQUEST, kind.lower(), (args, kwargs), self.channel.to_slot, self.sock):
                body = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
                self.channel.send(_REQUEST, kind, body, self.channel.to_slot, self.sock)
            if self.channel.wait(_ANSWER, self.channel.to_algorithm, self._poll):
                # the server died without answering (its pidfd): the zygote says how
                self._drop_server()
                return self._decode(*self._recv_socket())
            try:
                frame = self.channel.read(_ANSWER, self.sock)
            except (OSError, EOFError):
                raise _execute.JobFailure("invalid", "the slot process answered with a malformed frame") from None
            return self._decode(*frame)
        finally:
            if self._clock_failed:
                self._unclocked_s += time.perf_counter() - started
            self.calls += 1

    @property
    def slot_cpu_s(self) -> float:
        """CPU seconds of all slot servers so far after loading (the current one read now), measured from
        outside them. Under the sandbox's RLIMIT_CPU a server's process clock, read from here, can lag by up
        to a scheduler tick until the server next blocks (see ``problems/milp/_highs.py::cpu_now``): the lag
        shifts time between neighbouring calls (or from its loading to its first call), not out of the total."""
        current = self._cpu() if self.server_pid is not None else 0.0
        if current is None:
            self._clock_failed, current = True, 0.0
        elif self.server_pid is not None:
            current = max(current - self._load_cpu_s, 0.0)
        return self._ended_cpu_s + current + self._unclocked_s

    def _drop_server(self) -> None:
        if self.server_pid is not None:
            spent = self._cpu()  # before it leaves (a dead server's clock is gone: its calls count as wall time)
            if spent is None:
                self._clock_failed = True
            else:
                self._ended_cpu_s += max(spent - self._load_cpu_s, 0.0)
            self._load_cpu_s = 0.0
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self.server_pid = None

    def _recv_socket(self) -> tuple[bytes, bytes]:
        try:
            return _recv(self.sock)
        except (OSError, EOFError):
            raise _execute.JobFailure("crashed", f"the slot process died ({self._exit_status()})") from None

    def _decode(self, kind: bytes, body: bytes) -> Any:
        if kind == b"X":
            self.server_pid = None
            raise _execute.JobFailure("crashed", f"the slot process died ({body.decode('utf-8', 'replace')})")
        if kind == b"r":
            try:
                return _slotcodec.decode(body, tensors=False)  # an answer is plain data, as unpickled ones
            except ValueError as exc:
                raise _execute.JobFailure("invalid", f"slot answer refused: {exc}") from None
        if kind == b"F":
            failure = json.loads(body.decode("utf-8", "replace"))
            raise _execute.JobFailure(str(failure.get("status") or "error"), str(failure.get("reason") or "?"))
        if kind != b"R":
            raise _execute.JobFailure("invalid", "the slot process answered with a malformed frame")
        try:
            return loads_restricted(body)
        except Exception as exc:
            raise _execute.JobFailure("invalid", f"slot answer refused: {_execute.one_line(exc)}") from None

    def _cpu(self) -> float | None:
        """CPU seconds of the current server so far: its process CPU clock (one clock_gettime), else /proc."""
        pid = self.server_pid
        if pid is None:
            return None
        try:
            return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / self._tick
        except (OSError, IndexError, ValueError):
            return None

    def _exit_status(self) -> str:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return "exit status lost"
        if pid == 0:
            return "connection lost"
        if os.WIFSIGNALED(status):
            return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exit code {os.WEXITSTATUS(status)}"

    def close(self) -> None:
        try:
            self.sock.close()
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass


def _failure(status: str, reason: str) -> bytes:
    return json.dumps({"status": status, "reason": reason}).encode("utf-8", "replace")


def _send_failure(sock: socket.socket, status: str, reason: str) -> None:
    _send(sock, b"F", _failure(status, reason))

"""Hostile candidates, each contained with a clear failed status, and the pool keeps serving.

All run through one warm pool at the machine's ``standard`` level (the fallback launchers get
their own subset in test_fallback.py). Tests that rely on a layer skip, naming it, when the
machine lacks it.
"""

from __future__ import annotations

import os
import secrets
import socket
import time

import pytest
from sandbox_helpers import host_processes_with, needs
from solvers import HERE, make_job

from hifo.sandbox import run_job


def run(job, pool):
    return run_job(job, warm=pool)


def test_infinite_loop_is_killed_at_the_wall_clock_timeout(pool):
    code = "def f(x):\n    print('before the loop', flush=True)\n    while True:\n        pass\n"
    started = time.monotonic()
    result = run(make_job(code, timeout_s=1.0), pool)
    assert result.status == "timeout"
    assert result.error == "killed after 1.0 s wall-clock timeout"
    assert time.monotonic() - started < 3.0
    assert "before the loop" in result.stdout  # output survives the kill


def test_sleeping_past_the_deadline_while_ignoring_sigterm(pool):
    code = ("import signal, time\n"
            "def f(x):\n"
            "    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
            "        signal.signal(sig, signal.SIG_IGN)\n"
            "    time.sleep(60)\n")
    result = run(make_job(code, timeout_s=1.0), pool)
    assert result.status == "timeout" and result.wall_s < 3.0


def test_cpu_limit_is_reported(pool):
    code = "def f(x):\n    while True:\n        pass\n"
    result = run(make_job(code, cpu_s=1, timeout_s=10.0), pool)
    assert result.status == "timeout"
    assert result.error == "CPU time limit exceeded (1 s)"
    assert result.wall_s < 5


@pytest.mark.parametrize(
    "body",
    ["blocks = []\n    while True:\n        blocks.append(bytearray(10 ** 7))", "return len(bytearray(10 ** 11))"],
)
def test_memory_bomb_hits_the_address_space_limit(pool, body):
    result = run(make_job(f"def f(x):\n    {body}\n", memory_mb=256, timeout_s=10.0), pool)
    assert result.status == "memory"
    assert result.error.startswith("memory limit 256 MB exceeded")
    assert result.wall_s < 5


@needs("bounded_disk")
def test_disk_bomb_of_small_files_fills_only_its_quota(pool):
    code = ("def f(x):\n"
            "    for i in range(1000):\n"
            "        with open(f'chunk{i}', 'wb') as out:\n"
            "            out.write(b'z' * 2 ** 20)\n")
    result = run(make_job(code, max_disk_bytes=8 * 2**20, max_file_bytes=4 * 2**20), pool)
    assert result.status == "error"
    assert "No space left on device" in result.error  # the tmpfs is full, the host disk is not


def test_huge_file_hits_rlimit_fsize(pool):
    code = ("def f(x):\n    with open('big.bin', 'wb') as out:\n        for _ in range(50):\n"
            "            out.write(b'z' * 2 ** 20)\n    return 1\n")
    result = run(make_job(code, max_file_bytes=2**20), pool)
    assert result.status == "output_limit"
    assert result.error.startswith("output file size limit exceeded (1 MB per file)")


def test_print_flood_is_capped_and_the_run_completes(pool):
    code = ("def f(x):\n    for _ in range(100):\n        print('x' * 10 ** 6)\n"
            "    print('end', file=__import__('sys').stderr)\n    return 7\n")
    result = run(make_job(code, max_output_bytes=4096, timeout_s=20.0), pool)
    assert result.ok and result.solutions == [7]
    assert result.output_truncated
    assert result.stdout.startswith("x" * 2000)
    assert len(result.stdout.encode()) < 4096 + 200 and result.stdout.endswith("[hifo sandbox: output truncated]")
    assert "end" in result.stderr  # stderr keeps its half of the budget


def test_raw_fd_flood_stops_at_the_file_size_limit(pool):
    code = "import os\ndef f(x):\n    for _ in range(100):\n        os.write(1, b'y' * 10 ** 6)\n    return 1\n"
    result = run(make_job(code, max_file_bytes=2 * 2**20, max_output_bytes=1024), pool)
    assert result.status == "output_limit"
    assert "output file size limit exceeded (2 MB per file)" in result.error
    assert result.output_truncated and len(result.stdout) < 1024 + 100


def test_result_pipe_flood_is_cut_off(pool):
    code = "import os, sys\ndef f(x):\n    while True:\n        os.write(int(sys.argv[-1]), b'[' * 65536)\n"
    result = run(make_job(code, max_solution_bytes=100_000, timeout_s=10.0), pool)
    assert result.status == "output_limit"
    assert "result channel exceeded" in result.error
    assert result.wall_s < 5


def test_fake_result_on_stdout_does_not_change_the_result(pool):
    fake = '{"status": "ok", "solutions": [999], "error": null}'
    code = f"import os\ndef f(x):\n    print({fake!r}, flush=True)\n    os.write(1, {fake!r}.encode())\n    return 1\n"
    result = run(make_job(code), pool)
    assert result.ok and result.solutions == [1]
    assert fake in result.stdout


def test_garbage_on_the_result_pipe_is_invalid_not_ok(pool):
    code = "import os, sys\ndef f(x):\n    os.write(int(sys.argv[-1]), b'garbage')\n    return 1\n"
    result = run(make_job(code), pool)
    assert result.status == "invalid"
    assert result.error.startswith("result channel carried malformed data")


def test_ctypes_segfault_is_crashed(pool):
    code = "import ctypes\ndef f(x):\n    return ctypes.string_at(0)\n"
    result = run(make_job(code), pool)
    assert result.status == "crashed"
    assert result.error == "crashed with SIGSEGV"
    assert "Segmentation fault" in result.stderr  # faulthandler's dump, from fd 2


@pytest.mark.parametrize("ends", ["timeout", "return"])
def test_subprocesses_that_try_to_outlive_the_candidate_are_killed(pool, ends):
    token = f"1000{secrets.randbelow(10**8)}"  # a unique `sleep` argument to find them on the host
    code = (
        "import os, subprocess, time\n"
        "def f(x):\n"
        f"    subprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
        "    if os.fork() == 0:  # double fork + setsid: a daemon that detached from everything\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execvp('sleep', ['sleep', '{token}.5'])\n"
        "        os._exit(0)\n"
        "    time.sleep(0.3)\n"
        f"    {'time.sleep(60)' if ends == 'timeout' else 'return 1'}\n"
    )
    result = run(make_job(code, timeout_s=1.5), pool)
    assert result.status == ("timeout" if ends == "timeout" else "ok"), result.error
    deadline = time.monotonic() + 3
    while host_processes_with(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes_with(f"sleep {token}") == []


@needs("unprivileged_user")
def test_fork_storm_is_bounded_and_leaves_nothing(pool):
    code = "import os\ndef f(x):\n    print(os.getuid(), flush=True)\n    while True:\n        os.fork()\n"
    started, before = time.monotonic(), _pids()
    result = run(make_job(code, max_processes=32, timeout_s=5.0), pool)
    assert result.status in ("error", "timeout"), result.status
    assert result.status == "timeout" or "BlockingIOError" in result.error  # RLIMIT_NPROC bit
    assert time.monotonic() - started < 8
    uid = int(result.stdout.split()[0])
    assert uid != 0 and _left_by(uid, before) == []  # as root its uid is leased to its worker alone


@needs("unprivileged_user")
def test_thread_storm_is_bounded(pool):
    code = ("import threading, time\n"
            "def f(x):\n"
            "    print(__import__('os').getuid(), flush=True)\n"
            "    while True:\n"
            "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")
    before = _pids()
    result = run(make_job(code, max_processes=32, timeout_s=5.0), pool)
    assert result.status == "error"
    assert "can't start new thread" in result.error
    assert _left_by(int(result.stdout.split()[0]), before) == []


def test_files_outside_the_temp_dir_cannot_be_read(pool, tmp_path):
    secret = tmp_path / "api_key.txt"
    secret.write_text("sk-" + secrets.token_hex(16))
    secret.chmod(0o600)
    result = run(make_job(f"def f(x):\n    return open({str(secret)!r}).read()\n"), pool)
    assert result.status == "error"
    assert result.error.startswith(("PermissionError", "FileNotFoundError")), result.error
    assert secret.read_text() not in result.stdout + result.stderr + result.error


def test_files_outside_the_temp_dir_cannot_be_written(pool, tmp_path):
    module = os.path.join(HERE, "solvers.py")
    before = open(module).read()
    for target in (module, str(tmp_path / "dropped.txt"), "/etc/hifo-was-here"):
        result = run(make_job(f"def f(x):\n    open({target!r}, 'a').write('pwned')\n"), pool)
        assert result.status == "error", target
        assert result.error.startswith(("PermissionError", "OSError", "FileNotFoundError")), result.error
    assert open(module).read() == before
    assert not (tmp_path / "dropped.txt").exists() and not os.path.exists("/etc/hifo-was-here")


def test_tampering_with_the_evaluator_module_stays_in_its_own_process(pool):
    from solvers import check_scaled

    tamper = "import sys\ndef f(x):\n    sys.modules['solvers'].SCALE = 10 ** 6\n    return x\n"
    forged = run(make_job(tamper, solver="solvers:scaled"), pool)
    assert forged.ok and forged.solutions == [{"value": 1, "scale": 10**6}]
    assert not check_scaled(1, forged.solutions[0])  # the trusted scorer's recomputation rejects it
    honest = run(make_job("def f(x):\n    return x\n", solver="solvers:scaled"), pool)
    assert honest.solutions == [{"value": 1, "scale": 10}]  # the warm worker itself is pristine


class _Listener:
    """A loopback TCP server, a UDP socket and an abstract Unix socket on the host."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self.abstract = f"\0hifo-test-{secrets.token_hex(4)}"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.abstract)
        self.unix.listen()
        self.tcp.settimeout(0.2)
        self.unix.settimeout(0.2)
        self.accepted = 0

    def poll(self) -> int:
        for sock in (self.tcp, self.unix):
            try:
                sock.accept()[0].close()
                self.accepted += 1
            except (TimeoutError, OSError):
                pass
        try:
            self.udp.recv(100)
            self.accepted += 1
        except (TimeoutError, OSError):
            pass
        return self.accepted


@needs("network_namespace")
@pytest.mark.parametrize("kind", ["tcp", "udp", "unix"])
def test_no_socket_reaches_the_host_loopback_included(pool, kind):
    server = _Listener()
    target = {
        "tcp": f"s = socket.create_connection(('127.0.0.1', {server.tcp.getsockname()[1]}), timeout=1)",
        "udp": f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.sendto(b'x', ('127.0.0.1', "
        f"{server.udp.getsockname()[1]}))",
        "unix": f"s = socket.socket(socket.AF_UNIX)\n    s.connect({server.abstract!r})",
    }[kind]
    result = run(make_job(f"import socket\ndef f(x):\n    {target}\n    return 'connected'\n"), pool)
    assert result.status == "error", result.solutions
    assert result.error.split(":")[0] in ("PermissionError", "OSError", "ConnectionRefusedError", "TimeoutError")
    assert server.poll() == 0


@needs("pid_namespace", "unprivileged_user")
def test_candidate_cannot_signal_its_worker_or_see_the_host(pool):
    code = ("import os, signal\n"
            "def uid(pid):\n"
            "    for line in open(f'/proc/{pid}/status'):\n"
            "        if line.startswith('Uid:'):\n"
            "            return int(line.split()[1])\n"
            "def f(x):\n"
            "    seen = {int(p): uid(p) for p in os.listdir('/proc') if p.isdigit()}\n"
            "    denied = []\n"
            "    for pid in seen:\n"
            "        if pid != os.getpid():\n"
            "            try:\n"
            "                os.kill(pid, signal.SIGKILL)\n"
            "            except PermissionError:\n"
            "                denied.append(pid)\n"
            "    return [seen, denied, os.getpid(), os.getuid()]\n")
    result = run(make_job(code), pool)
    assert result.ok, result.error
    seen, denied, me, uid = result.solutions[0]
    seen = {int(pid): owner for pid, owner in seen.items()}
    # its own pid namespace (sandbox._nest): only the namespace's init and itself; the SIGKILL it sent
    # init was refused (root's init) or dropped by the kernel (an ordinary user's): it still ran to its end
    assert os.getpid() not in seen and set(seen) <= {1, me} and me == 2
    assert uid != 0


def test_the_pool_keeps_serving_after_all_of_the_above(pool):
    result = run(make_job("def f(x):\n    return x + 1\n", instances=[1, 2]), pool)
    assert result.ok and result.solutions == [2, 3]
    assert result.isolation["warm_worker"] is True


def _processes_of(uid: int, within_s: float = 3.0, before: frozenset[int] = frozenset()) -> list[int]:
    """Host processes (not zombies) still owned by ``uid``, waiting up to ``within_s`` for none.

    As an ordinary user the candidate has the user's own uid (pytest, the worker, ...): then only
    processes that appeared since ``before`` count, bar the worker's next spare and the private
    namespace it prepares (a new process whose parent, the worker, is still there, and its
    descendants; the finished candidate's spare is gone)."""
    deadline = time.monotonic() + within_s
    while True:
        parents = {}
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid and int(name) not in before:
                    with open(f"/proc/{name}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                        if fields[0] not in ("Z", "X"):
                            parents[int(name)] = int(fields[1])
            except OSError:
                continue
        spare = {pid for pid, ppid in parents.items() if before and ppid in before and os.path.exists(f"/proc/{ppid}")}
        grown = True
        while grown:
            more = {pid for pid, ppid in parents.items() if ppid in spare} - spare
            spare |= more
            grown = bool(more)
        left = sorted(set(parents) - spare)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _pids() -> frozenset[int]:
    return frozenset(int(name) for name in os.listdir("/proc") if name.isdigit())


def _left_by(uid: int, before: frozenset[int]) -> list[int]:
    return _processes_of(uid, before=before if uid == os.getuid() else frozenset())

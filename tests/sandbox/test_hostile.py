"""run_job against hostile candidates: each case must end quickly with the right status."""

from __future__ import annotations

import os
import time

import pytest
from solvers import make_job

from sandbox import run_job


def _gone(pid: int, within_s: float = 3.0) -> bool:
    """True once ``pid`` no longer runs (absent, or a zombie waiting for init to reap it)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_infinite_loop_is_killed_at_the_wall_clock_timeout():
    code = "def f(x):\n    print('before the loop', flush=True)\n    while True:\n        pass\n"
    started = time.monotonic()
    result = run_job(make_job(code, timeout_s=1.0))
    assert result.status == "timeout"
    assert result.error == "killed after 1.0 s wall-clock timeout"
    assert time.monotonic() - started < 3.0
    assert "before the loop" in result.stdout  # output survives the kill


def test_cpu_limit_is_reported():
    code = "def f(x):\n    while True:\n        pass\n"
    result = run_job(make_job(code, cpu_s=1, timeout_s=10.0))
    assert result.status == "timeout"
    assert result.error == "CPU time limit exceeded (1 s)"
    assert result.wall_s < 5


@pytest.mark.parametrize(
    "body",
    ["blocks = []\n    while True:\n        blocks.append(bytearray(10 ** 7))", "return len(bytearray(10 ** 11))"],
)
def test_memory_bomb_hits_the_address_space_limit(body):
    result = run_job(make_job(f"def f(x):\n    {body}\n", memory_mb=256, timeout_s=10.0))
    assert result.status == "memory"
    assert result.error.startswith("memory limit 256 MB exceeded")
    assert result.wall_s < 5


def test_print_flood_is_capped_and_the_run_completes():
    code = "def f(x):\n    for _ in range(100):\n        print('x' * 10 ** 6)\n    print('end', file=__import__('sys').stderr)\n    return 7\n"
    result = run_job(make_job(code, max_output_bytes=4096, timeout_s=20.0))
    assert result.ok and result.solutions == [7]
    assert result.output_truncated
    assert result.stdout.startswith("x" * 2000)
    assert len(result.stdout.encode()) < 4096 + 200 and result.stdout.endswith("[hifo sandbox: output truncated]")
    assert "end" in result.stderr  # stderr keeps its half of the budget


def test_raw_fd_flood_stops_at_the_file_size_limit():
    code = "import os\ndef f(x):\n    for _ in range(100):\n        os.write(1, b'y' * 10 ** 6)\n    return 1\n"
    result = run_job(make_job(code, max_file_bytes=2 * 2**20, max_output_bytes=1024))
    assert result.status == "output_limit"
    assert "output file size limit exceeded (2 MB per file)" in result.error
    assert result.output_truncated and len(result.stdout) < 1024 + 100


def test_huge_file_hits_rlimit_fsize():
    code = "def f(x):\n    with open('big.bin', 'wb') as out:\n        for _ in range(50):\n            out.write(b'z' * 2 ** 20)\n    return 1\n"
    result = run_job(make_job(code, max_file_bytes=2**20))
    assert result.status == "output_limit"
    assert result.error.startswith("output file size limit exceeded (1 MB per file)")


def test_fake_result_on_stdout_does_not_change_the_result():
    fake = '{"status": "ok", "solutions": [999], "error": null}'
    code = f"import os\ndef f(x):\n    print({fake!r}, flush=True)\n    os.write(1, {fake!r}.encode())\n    return 1\n"
    result = run_job(make_job(code))
    assert result.ok and result.solutions == [1]
    assert fake in result.stdout


def test_garbage_on_the_result_pipe_is_invalid_not_ok():
    code = "import os, sys\ndef f(x):\n    os.write(int(sys.argv[-1]), b'garbage')\n    return 1\n"
    result = run_job(make_job(code))
    assert result.status == "invalid"
    assert result.error.startswith("result channel carried malformed data")


def test_ctypes_segfault_is_crashed():
    code = "import ctypes\ndef f(x):\n    return ctypes.string_at(0)\n"
    result = run_job(make_job(code))
    assert result.status == "crashed"
    assert result.error == "crashed with SIGSEGV"
    assert "Segmentation fault" in result.stderr  # faulthandler's dump, from fd 2


def test_grandchildren_die_with_the_timeout():
    code = (
        "import os, subprocess, time\n"
        "def f(x):\n"
        "    spawned = subprocess.Popen(['sleep', '60'])\n"
        "    forked = os.fork()\n"
        "    if forked == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    print(spawned.pid, forked, flush=True)\n"
        "    time.sleep(60)\n"
    )
    result = run_job(make_job(code, timeout_s=1.5))
    assert result.status == "timeout"
    pids = [int(p) for p in result.stdout.split()]
    assert len(pids) == 2
    assert all(_gone(pid) for pid in pids), pids


def test_grandchildren_die_when_the_candidate_returns_normally():
    code = "import subprocess\ndef f(x):\n    return subprocess.Popen(['sleep', '60']).pid\n"
    result = run_job(make_job(code))
    assert result.ok, result.error
    assert _gone(result.solutions[0])


def test_result_pipe_flood_is_cut_off():
    code = "import os, sys\ndef f(x):\n    while True:\n        os.write(int(sys.argv[-1]), b'[' * 65536)\n"
    result = run_job(make_job(code, max_solution_bytes=100_000, timeout_s=10.0))
    assert result.status == "output_limit"
    assert "result channel exceeded" in result.error
    assert result.wall_s < 5


def test_chmod_and_symlink_tricks_do_not_break_cleanup_or_output():
    code = (
        "import os\n"
        "def f(x):\n"
        "    os.makedirs('locked/inner')\n"
        "    os.chmod('locked/inner', 0)\n"
        "    os.chmod('locked', 0)\n"
        "    os.remove('../stdout')\n"
        "    os.symlink('/etc/hostname', '../stdout')\n"
        "    print('still captured')\n"
        "    return os.getcwd()\n"
    )
    result = run_job(make_job(code))
    assert result.ok, result.error
    assert result.stdout == "still captured\n"
    assert not os.path.exists(os.path.dirname(result.solutions[0]))

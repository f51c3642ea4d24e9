"""RayExecutor on a local Ray instance: same runner per node, streaming, retries on a lost worker."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import as_completed

import pytest
from sandbox_helpers import gone, host_processes_with
from solvers import make_job

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra: pip install 'hifo[ray]')")

SLEEPY = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"


@pytest.fixture(scope="module")
def executor():
    from hifo.sandbox import RayExecutor

    if ray.is_initialized():
        pytest.skip("a Ray instance is already initialised in this process")
    with RayExecutor(max_workers=2, isolation="standard", max_retries=2,
                     init_kwargs={"object_store_memory": 80 * 1024 * 1024}) as ex:
        yield ex


def test_results_stream_back_as_they_finish_with_the_nodes_isolation(executor):
    slow = executor.submit(make_job(SLEEPY, instances=[2.0]))
    fast = [executor.submit(make_job(SLEEPY, instances=[0.05])) for _ in range(3)]
    order = list(as_completed([slow, *fast], timeout=120))
    assert order[-1] is slow  # the quick ones did not wait for it
    results = [f.result() for f in order]
    assert all(r.ok for r in results), [r.error for r in results]
    iso = results[0].isolation
    assert iso["sandbox"] == "v2" and iso["level"] == "standard" and iso["warm_worker"] is True
    assert iso["node"] and iso["worker_pid"] != os.getpid()  # it ran in a Ray worker, not here


def test_hostile_candidates_are_contained_on_the_node(executor):
    loop = executor.submit(make_job("def f(x):\n    while True:\n        pass\n", timeout_s=1.0))
    crash = executor.submit(make_job("import ctypes\ndef f(x):\n    return ctypes.string_at(0)\n"))
    assert loop.result(timeout=60).status == "timeout"
    assert crash.result(timeout=60).status == "crashed"
    again = executor.submit(make_job("def f(x):\n    return x * 3\n", instances=[2])).result(timeout=60)
    assert again.ok and again.solutions == [6]


def test_a_task_whose_worker_dies_is_retried_elsewhere(executor):
    future = executor.submit(make_job(SLEEPY, instances=[2.5], timeout_s=30.0))
    victim = None
    deadline = time.monotonic() + 30
    while victim is None and time.monotonic() < deadline:
        victim = _running_task_worker()
        time.sleep(0.1)
    assert victim is not None, "the task never showed up in a Ray worker"
    time.sleep(0.5)  # let it start its warm worker
    orphans = [pid for pid in host_processes_with("_hifo_sandbox._zygote import main") if victim in _ancestors(pid)]
    os.kill(victim, signal.SIGKILL)  # as if its node went away
    result = future.result(timeout=120)
    assert result.ok and result.solutions == [2.5]
    assert result.isolation["worker_pid"] != victim
    assert orphans and all(gone(pid) for pid in orphans)  # its sandbox died with it (--die-with-parent)


def _running_task_worker() -> int | None:
    """The Ray worker now executing ``run_on_node`` (Ray titles its process after the task)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if handle.read().startswith(b"ray::run_on_node"):
                    return int(name)
        except OSError:
            continue
    return None


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            break
        chain.append(pid)
    return chain

"""Warm workers: a pristine process per candidate, cheap to start, replaced when they die."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time

import pytest
from solvers import make_job

from hifo.sandbox import LocalExecutor, WarmPool, run_job
from hifo.sandbox._pool import UidLease
from hifo.sandbox._process import ZygoteSpec
from hifo.sandbox.runner import as_plan, spec_for


def test_every_candidate_gets_a_pristine_process(pool):
    dirty = ("import json, sys\n"
             "json.leftover = 'from the previous candidate'\n"
             "def f(x):\n"
             "    sys.modules['solvers'].SCALE = -1\n"
             "    return 1\n")
    assert run_job(make_job(dirty, preload=("json",)), warm=pool).ok
    probe = ("import json, sys\n"
             "FRESH = 'hifo_candidate' in sys.modules and sys.modules['hifo_candidate'].__dict__.get('FRESH')\n"
             "def f(x):\n"
             "    return [hasattr(json, 'leftover'), sys.modules['solvers'].SCALE, FRESH]\n")
    result = run_job(make_job(probe, preload=("json",)), warm=pool)
    assert result.solutions == [[False, 10, None]]


def test_preloaded_libraries_are_already_imported_in_the_candidate(pool):
    code = "import sys\nLOADED = 'numpy' in sys.modules\ndef f(x):\n    import numpy\n    return LOADED\n"
    assert run_job(make_job(code, preload=("numpy",)), warm=pool).solutions == [True]
    assert run_job(make_job(code), warm=pool).solutions == [False]  # another spec, another worker


def test_warm_overhead_is_a_small_fraction_of_a_fresh_spawn(pool):
    job = make_job("def f(x):\n    return x\n", preload=("numpy",))
    run_job(job, warm=pool)
    warm = []
    for _ in range(15):
        started = time.perf_counter()
        assert run_job(job, warm=pool).ok
        warm.append(time.perf_counter() - started)
    fresh = []
    for _ in range(3):
        started = time.perf_counter()
        assert run_job(job, warm=False).ok
        fresh.append(time.perf_counter() - started)
    # A fresh interpreter importing numpy costs ~0.3 s here; forking a warm one a few ms.
    assert statistics.median(warm) < statistics.median(fresh) / 4, (warm, fresh)


def test_a_worker_killed_while_idle_is_replaced_transparently():
    pool = WarmPool()
    job = make_job("def f(x):\n    return x\n")
    assert run_job(job, warm=pool).ok
    (zygote, _), = pool._idle.values()
    os.killpg(zygote.proc.pid, signal.SIGKILL)
    zygote.proc.wait()
    result = run_job(job, warm=pool)
    assert result.ok and pool.replaced == 1 and pool.started == 2
    pool.close()


def test_a_worker_killed_mid_job_fails_that_candidate_only():
    pool = WarmPool()
    sleepy = make_job("import time\ndef f(x):\n    time.sleep(x)\n    return x\n", instances=[5])
    with LocalExecutor(max_workers=1, pool=pool) as executor:
        assert executor.submit(make_job("def f(x):\n    return x\n", instances=[0])).result().ok
        (zygote, _), = pool._idle.values()
        running = executor.submit(sleepy)
        time.sleep(0.5)
        os.killpg(zygote.proc.pid, signal.SIGKILL)
        result = running.result(timeout=10)
        assert result.status == "crashed" and "worker died" in result.error
        assert executor.submit(make_job("def f(x):\n    return x\n", instances=[3])).result().solutions == [3]
    pool.close()


def test_idle_workers_are_capped_least_recently_used_first():
    pool = WarmPool(max_idle=1)
    assert run_job(make_job("def f(x):\n    return 1\n"), warm=pool).ok
    (first, _), = pool._idle.values()
    assert run_job(make_job("def f(x):\n    return 2\n", preload=("json",)), warm=pool).ok
    assert pool.idle_count() == 1 and not first.alive  # the older spec's worker was closed
    pool.close()


def test_sandbox_uids_are_leased_exclusively_across_processes():
    plan = as_plan("standard")
    if not plan.drop_user:
        pytest.skip("no uid drop here (not root, or no interpreter a sandbox uid can read)")
    held = [UidLease.acquire(plan.uid_base, plan.uid_count) for _ in range(2)]
    try:
        other = subprocess.run(
            [sys.executable, "-c", "from sandbox._pool import UidLease; "
             f"print(UidLease.acquire({plan.uid_base}, {plan.uid_count}).uid)"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        uids = [lease.uid for lease in held] + [int(other)]
        assert len(set(uids)) == 3 and all(plan.uid_base <= u < plan.uid_base + plan.uid_count for u in uids)
    finally:
        for lease in held:
            lease.release()


def test_spec_separates_what_cannot_share_a_worker():
    plan = as_plan("standard")
    base = spec_for(make_job("x = 1", solver="solvers:apply"), plan)
    assert base == spec_for(make_job("y = 2", solver="solvers:apply", timeout_s=3.0), plan)  # limits: per fork
    assert base != spec_for(make_job("x = 1", solver="solvers:scaled", preload=("numpy",)), plan)
    assert base != spec_for(make_job("x = 1", max_disk_bytes=1 << 20), plan)  # the tmpfs is per worker
    assert isinstance(base, ZygoteSpec) and base.solver_module == "solvers"


@pytest.mark.slow
def test_torch_heuristic_runs_warm_with_one_thread(pool):
    import torch  # noqa: F401  (a hard dependency)
    code = ("import torch\n"
            "def f(x):\n"
            "    return [torch.get_num_threads(), float(torch.tensor([x, 2.0]).sum())]\n")
    job = make_job(code, preload=("torch",), memory_mb=8192, timeout_s=120.0)
    first = run_job(job, warm=pool)
    assert first.ok, first.error
    started = time.perf_counter()
    second = run_job(job, warm=pool)
    assert second.ok and second.solutions == [[1, 3.0]]
    assert time.perf_counter() - started < 1.0  # importing torch alone takes seconds

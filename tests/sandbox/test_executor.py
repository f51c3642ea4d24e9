"""LocalExecutor (parallel, cancellable, warm or fresh), make_executor, and the unsafe InProcessExecutor."""

from __future__ import annotations

import time
from concurrent.futures import Future

from solvers import make_job

import pytest

from hifo.sandbox import Executor, InProcessExecutor, LocalExecutor, WarmPool, make_executor, run_job

SLEEPY = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"


def test_local_executor_runs_jobs_in_parallel():
    jobs = [make_job(SLEEPY, instances=[1.5]) for _ in range(4)]
    started = time.monotonic()
    with LocalExecutor(max_workers=4) as executor:
        assert isinstance(executor, Executor)
        results = list(executor.map(jobs))
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == ["ok"] * 4
    assert [r.solutions for r in results] == [[1.5]] * 4
    # One at a time would take at least 6 s; in parallel about 1.5 s plus spawning.
    assert elapsed < 4.0, f"4 x 1.5 s jobs took {elapsed:.2f} s on 4 workers"


def test_map_keeps_submission_order():
    code = "def f(x):\n    return x * 10\n"
    with LocalExecutor(max_workers=2) as executor:
        results = list(executor.map(make_job(code, instances=[i]) for i in range(5)))
    assert [r.solutions for r in results] == [[0], [10], [20], [30], [40]]


def test_jobs_not_started_can_be_cancelled():
    executor = LocalExecutor(max_workers=1)
    first = executor.submit(make_job(SLEEPY, instances=[0.5]))
    pending = [executor.submit(make_job(SLEEPY, instances=[0.5])) for _ in range(3)]
    assert all(f.cancel() for f in pending)
    assert first.result(timeout=10).ok
    assert all(f.cancelled() for f in pending)
    executor.shutdown()


@pytest.mark.parametrize("warm", [True, False])
def test_shutdown_with_cancel_kills_running_children(warm):
    executor = LocalExecutor(max_workers=2, warm=warm)
    running = executor.submit(make_job(SLEEPY, instances=[30], timeout_s=60.0))
    queued = [executor.submit(make_job(SLEEPY, instances=[30])) for _ in range(2)]
    time.sleep(0.3 if warm else 1.0)
    started = time.monotonic()
    executor.shutdown(wait=True, cancel_futures=True)
    assert time.monotonic() - started < 5
    result = running.result(timeout=1)
    assert result.status == "error" and result.error == "cancelled: executor shut down"
    assert queued[1].cancelled()  # the one that never got a worker


def test_in_process_executor_matches_the_sandbox_on_trusted_code():
    code = "def f(x):\n    print('hi')\n    return [x, x + 0.5]\n"
    job = make_job(code, instances=[1, 2])
    with InProcessExecutor() as executor:
        future = executor.submit(job)
        assert isinstance(future, Future) and future.done()
        local = future.result()
    sandboxed = run_job(job)
    assert local.ok and local.solutions == sandboxed.solutions == [[1, 1.5], [2, 2.5]]
    assert local.stdout == sandboxed.stdout == "hi\nhi\n"
    assert local.isolation["sandbox"] == "none" and "UNSAFE" in local.isolation["warning"]


def test_in_process_executor_reports_errors_and_invalid_solutions():
    executor = InProcessExecutor()
    error = executor.submit(make_job("def f(x):\n    return 1 / 0\n")).result()
    invalid = executor.submit(make_job("def f(x):\n    return float('nan')\n")).result()
    assert error.status == "error" and error.error.startswith("ZeroDivisionError")
    assert invalid.status == "invalid"


def test_make_executor_builds_what_the_cli_flags_ask_for():
    with make_executor("local", "standard", max_workers=2) as executor:
        assert isinstance(executor, LocalExecutor) and executor.max_workers == 2 and executor.warm
        assert executor.plan.level == "standard"
        assert executor.submit(make_job("def f(x):\n    return -x\n")).result().solutions == [-1]
    with pytest.raises(ValueError):
        make_executor("local", address="ray://nowhere:10001")
    with pytest.raises(ValueError):
        make_executor("slurm")


def test_each_job_keeps_its_own_deadline_on_a_shared_worker():
    pool = WarmPool()
    with LocalExecutor(max_workers=1, pool=pool) as executor:
        slow = executor.submit(make_job(SLEEPY, instances=[10], timeout_s=0.5))
        quick = executor.submit(make_job(SLEEPY, instances=[0.1], timeout_s=5.0))
        assert slow.result().status == "timeout" and quick.result().ok
    assert pool.started == 1 and pool.reused == 1  # the timed-out candidate's worker served the next one
    pool.close()


def test_cancel_one_job_kills_it_while_it_runs_and_spares_the_others():
    executor = LocalExecutor(max_workers=2)
    try:
        doomed = executor.submit(make_job(SLEEPY, instances=[30], timeout_s=60.0))
        other = executor.submit(make_job(SLEEPY, instances=[1.0], timeout_s=60.0))
        queued = executor.submit(make_job(SLEEPY, instances=[30], timeout_s=60.0))
        time.sleep(0.5)
        started = time.monotonic()
        assert executor.cancel(queued, "not needed") and queued.cancelled()
        assert executor.cancel(doomed, "wall-time budget spent")
        res = doomed.result(timeout=20)
        assert time.monotonic() - started < 10
        assert not res.ok and "wall-time budget spent" in (res.error or "")
        assert other.result(timeout=20).ok
        assert not executor.cancel(other)  # finished: nothing to cancel
    finally:
        executor.shutdown(wait=True, cancel_futures=True)

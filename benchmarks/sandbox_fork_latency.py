"""Warm fork latency: median round trip of ``run_job(warm=pool)`` for a trivial candidate.

    python -m benchmarks.sandbox_fork_latency [N]

One warm worker (``standard`` isolation: every layer this machine applies), 5 warm-up jobs,
then N (default 80) jobs of ``def f(x): return x``; prints the median and the 10th percentile.
To compare with another version of the sandbox, run the same file with that version first on
``PYTHONPATH`` (issue 20 did so with main's ``sandbox/`` under ``/var/tmp/base/hifo/sandbox``).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path


def main(n: int = 80) -> dict[str, float]:
    warnings.simplefilter("ignore")
    import hifo.sandbox as sandbox
    from hifo.sandbox import Job, JobLimits, WarmPool, run_job

    here = str(Path(__file__).resolve().parent)
    job = Job(code="def f(x):\n    return x\n", entry="f", solver="sandbox_fork_latency:apply", instances=[1],
              limits=JobLimits(), sys_path=(here,))
    pool = WarmPool()
    try:
        for _ in range(5):
            run_job(job, warm=pool)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            result = run_job(job, warm=pool)
            times.append(time.perf_counter() - started)
            assert result.ok, result.error
    finally:
        pool.close()
    out = {"median_ms": statistics.median(times) * 1000, "p10_ms": sorted(times)[len(times) // 10] * 1000}
    print(f"{sandbox.__file__}: median {out['median_ms']:.1f} ms, p10 {out['p10_ms']:.1f} ms, n={n}")
    return out


def apply(function, instance):  # the solver the sandbox imports (this module, by file name)
    return function(instance)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)

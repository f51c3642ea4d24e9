"""Per-candidate cost of the sandbox: a fresh child per job versus running in-process.

    python -m benchmarks.sandbox_overhead [--runs 40] [--inprocess-runs 400] [--jobs 40]

Measures, for a trivial numpy heuristic (and a pure-Python one, to separate numpy's import):
the median wall time of ``run_job`` (spawn, limits, import, run, reap), of
``InProcessExecutor`` (no isolation), their difference (the sandbox overhead), and the
throughput of ``LocalExecutor`` with 1 and 2 workers. Writes
``benchmarks/results/sandbox_overhead.json``.

This module is also the solver the sandbox child imports, so its top level stays light:
everything else, numpy included, is imported inside the functions that need it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "sandbox_overhead.json"

NUMPY_HEURISTIC = """\
import numpy as np


def priority(item, bins):
    return -(bins - item)
"""

PYTHON_HEURISTIC = """\
def priority(item, bins):
    return [-(b - item) for b in bins]
"""


def solve(priority: Callable[[float, Any], Any], instance: dict[str, Any]) -> int:
    """Pick the bin with the highest priority for one item (the trusted 'algorithm').
    numpy is imported only for the numpy variant, so the pure-Python row shows the cost
    of the sandbox without numpy's import."""
    bins = instance["bins"]
    if not instance["numpy"]:
        scores = priority(instance["item"], bins)
        return max(range(len(bins)), key=scores.__getitem__)
    import numpy as np

    return int(np.argmax(priority(instance["item"], np.asarray(bins, dtype=float))))


def _job(numpy: bool):
    from sandbox import Job

    instance = {"item": 0.3, "bins": [1.0, 0.5, 0.7, 0.35], "numpy": numpy}
    code = NUMPY_HEURISTIC if numpy else PYTHON_HEURISTIC
    return Job(code=code, entry="priority", solver="benchmarks.sandbox_overhead:solve",
               instances=[instance], sys_path=(str(REPO),))


def _median_s(run: Callable[[], Any], n: int) -> float:
    import statistics

    times = []
    for _ in range(n):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _checked(result: Any) -> Any:
    if not result.ok:
        raise SystemExit(f"benchmark job failed: {result.status}: {result.error}")
    return result


def _throughput(workers: int, jobs: int) -> float:
    from sandbox import LocalExecutor

    started = time.perf_counter()
    with LocalExecutor(max_workers=workers) as executor:
        for result in executor.map(_job(numpy=True) for _ in range(jobs)):
            _checked(result)
    return jobs / (time.perf_counter() - started)


def measure(runs: int, inprocess_runs: int, jobs: int) -> dict[str, Any]:
    import os
    import platform
    import subprocess
    import sys

    from sandbox import InProcessExecutor, run_job

    startup = {
        label: _median_s(lambda c=code: subprocess.run([sys.executable, "-I", "-c", c], check=True), runs)
        for label, code in (("python_startup", "pass"), ("python_startup_import_numpy", "import numpy"))
    }
    inprocess = InProcessExecutor()
    rows = {}
    for label, numpy in (("numpy_heuristic", True), ("python_heuristic", False)):
        job = _job(numpy)
        sandboxed = _median_s(lambda: _checked(run_job(job)), runs)
        local = _median_s(lambda: _checked(inprocess.submit(job).result()), inprocess_runs)
        rows[label] = {"run_job_s": sandboxed, "in_process_s": local, "overhead_s": sandboxed - local}
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "parameters": {"runs": runs, "inprocess_runs": inprocess_runs, "throughput_jobs": jobs},
        "startup_median_s": startup,
        "per_candidate_median_s": rows,
        "throughput_jobs_per_s": {"1_worker": _throughput(1, jobs), "2_workers": _throughput(2, jobs)},
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"sandbox overhead ({report['machine']['cpus']} CPUs, Python {report['machine']['python']})")
    for label, value in report["startup_median_s"].items():
        print(f"  {label:<34} {value * 1e3:9.1f} ms")
    print(f"  {'heuristic':<18} {'run_job':>10} {'in-process':>12} {'overhead':>10}")
    for label, row in report["per_candidate_median_s"].items():
        print(f"  {label:<18} {row['run_job_s'] * 1e3:8.1f} ms {row['in_process_s'] * 1e3:9.3f} ms "
              f"{row['overhead_s'] * 1e3:7.1f} ms")
    for label, value in report["throughput_jobs_per_s"].items():
        print(f"  LocalExecutor {label:<20} {value:9.1f} jobs/s")


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="sandboxed runs per median")
    parser.add_argument("--inprocess-runs", type=int, default=400, help="in-process runs per median")
    parser.add_argument("--jobs", type=int, default=40, help="jobs per throughput measurement")
    args = parser.parse_args(argv)
    report = measure(args.runs, args.inprocess_runs, args.jobs)
    print_table(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()

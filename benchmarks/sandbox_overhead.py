"""Per-candidate cost of the sandbox: warm worker vs fresh spawn vs in-process; throughput.

    python -m benchmarks.sandbox_overhead [--quick] [--isolation standard] [--no-ray] [--slot-only]

For a numpy heuristic, a torch heuristic and a pure-Python one (to separate the libraries'
import cost), the median wall time per candidate of

* in-process (``InProcessExecutor``: no isolation at all, the floor),
* warm (``run_job(warm=pool)``: forked from a zygote that imported the solver and
  ``Job.preload`` once),
* fresh (``run_job(warm=False)``: a zygote started for the job alone, i.e. a new interpreter
  that imports the libraries each time),

their overhead over in-process, then the throughput (candidates per minute) of
``LocalExecutor`` with 1 and 2 workers (warm and fresh) and of ``RayExecutor`` on a local Ray
instance with 2 CPUs; then the slot process (``sandbox/_slotproc.py``, issue 28): per candidate through the
warm worker with the slot in the algorithm's process (the fence only) vs in a process of its own (a fresh
server per instance, calls over the shared-memory channel), for ``bpp_online``'s Best Fit on its train set
(one call per item), for the slots issue 28 moved (``tsp_gls``'s guide, ``optimizer_update``'s update rule: whole
train-set evaluations of a baseline, thousands of calls) and for a one-call slot (the numpy job above), and the
cost of one call through
:class:`~hifo.sandbox._slotproc.SlotProxy` (``--slot-only``: just this part, written to
``sandbox_overhead_slot.json``). Every sandboxed run uses the machine's ``--isolation`` level (all the
layers it can apply; listed in the output). Writes ``benchmarks/results/sandbox_overhead.json``
(``sandbox_overhead_quick.json`` with ``--quick``).

This module is also the solver the sandbox child imports, so its top level stays light:
numpy and torch are imported inside the functions that need them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

HEURISTICS = {
    "python": "def priority(item, bins):\n    return [-(b - item) for b in bins]\n",
    "numpy": "import numpy as np\n\n\ndef priority(item, bins):\n    return -(bins - item) + np.zeros_like(bins)\n",
    "torch": "import torch\n\n\ndef priority(item, bins):\n    return -(bins - item) + torch.zeros_like(bins)\n",
}
PRELOAD = {"python": (), "numpy": ("numpy",), "torch": ("torch",)}
MEMORY_MB = {"python": 2048, "numpy": 2048, "torch": 8192}  # torch maps a lot of address space


def solve(priority: Callable[[float, Any], Any], instance: dict[str, Any]) -> int:
    """Pick the bin with the highest priority for one item (the trusted 'algorithm')."""
    bins, kind = instance["bins"], instance["kind"]
    if kind == "python":
        scores = priority(instance["item"], bins)
        return max(range(len(bins)), key=scores.__getitem__)
    if kind == "numpy":
        import numpy as np

        return int(np.argmax(priority(instance["item"], np.asarray(bins, dtype=float))))
    import torch

    torch.set_num_threads(1)
    return int(torch.argmax(priority(instance["item"], torch.tensor(bins, dtype=torch.float64))))


def solve_bpp_timed(priority: Callable[[float, Any], Any], instance: dict[str, Any]) -> dict[str, Any]:
    """The online bin-packing loop alone, timed inside the sandbox child: per-call cost without the job's."""
    from hifo.problems.binpacking import online_pack

    started = time.perf_counter()
    online_pack(priority, instance["items"], instance["capacity"])
    return {"loop_s": time.perf_counter() - started, "calls": len(instance["items"])}


def _job(kind: str):
    from hifo.sandbox import Job, JobLimits

    instance = {"item": 0.3, "bins": [1.0, 0.5, 0.7, 0.35], "kind": kind}
    return Job(code=HEURISTICS[kind], entry="priority", solver="benchmarks.sandbox_overhead:solve",
               instances=[instance], sys_path=(str(REPO),), preload=PRELOAD[kind],
               limits=JobLimits(memory_mb=MEMORY_MB[kind], timeout_s=120.0, cpu_s=120))


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


def per_candidate(kinds: list[str], runs: dict[str, int], isolation: str) -> dict[str, Any]:
    from hifo.sandbox import InProcessExecutor, WarmPool, run_job

    inprocess = InProcessExecutor()
    rows = {}
    for kind in kinds:
        job = _job(kind)
        pool = WarmPool()
        _checked(run_job(job, isolation=isolation, warm=pool))  # start the zygote: not per candidate
        _checked(inprocess.submit(job).result())  # first import, likewise
        local = _median_s(lambda: _checked(inprocess.submit(job).result()), runs["inprocess"])
        warm = _median_s(lambda: _checked(run_job(job, isolation=isolation, warm=pool)), runs["warm"])
        fresh = _median_s(lambda: _checked(run_job(job, isolation=isolation, warm=False)),
                          runs["fresh_torch" if kind == "torch" else "fresh"])
        pool.close()
        rows[kind] = {"in_process_s": local, "warm_s": warm, "fresh_s": fresh,
                      "warm_overhead_s": warm - local, "fresh_overhead_s": fresh - local}
    return rows


def _throughput(make: Callable[[], Any], jobs: int, kind: str = "numpy") -> float:
    """Candidates per minute once warm (one warm-up round per worker is not counted)."""
    executor = make()
    try:
        workers = getattr(executor, "max_workers", 2) or 2
        for result in executor.map(_job(kind) for _ in range(2 * workers)):
            _checked(result)
        started = time.perf_counter()
        for result in executor.map(_job(kind) for _ in range(jobs)):
            _checked(result)
        return 60.0 * jobs / (time.perf_counter() - started)
    finally:
        executor.shutdown()


def throughput(jobs: int, fresh_jobs: int, isolation: str, ray: bool) -> dict[str, Any]:
    from hifo.sandbox import LocalExecutor, WarmPool

    rows: dict[str, Any] = {}
    for workers in (1, 2):
        pool = WarmPool()
        rows[f"local_warm_{workers}_workers"] = _throughput(
            lambda w=workers, p=pool: LocalExecutor(w, isolation=isolation, pool=p), jobs)
        pool.close()
        rows[f"local_fresh_{workers}_workers"] = _throughput(
            lambda w=workers: LocalExecutor(w, isolation=isolation, warm=False), fresh_jobs)
    if ray:
        try:
            import ray as _ray  # noqa: F401
        except ImportError:
            rows["ray_2_cpus"] = "skipped: ray is not installed (pip install 'hifo[ray]')"
        else:
            from hifo.sandbox import RayExecutor

            rows["ray_2_cpus"] = _throughput(lambda: RayExecutor(max_workers=2, isolation=isolation), jobs)
    return rows


def slot_process(runs: int, isolation: str) -> dict[str, Any]:
    """Per-candidate wall time with the slot in the algorithm's process vs in a slot process, and per call."""
    import dataclasses

    from hifo.agents.evaluation import make_job
    from hifo.evaluators.registry import get_evaluator
    from hifo.sandbox import WarmPool, run_job

    ev = get_evaluator("bpp_online")
    instances = ev.load_instances("train")
    cases = {"bpp_online_train_best_fit": (make_job(ev, ev.baselines["best_fit"], instances),
                                           sum(len(i.items) for i in instances), len(instances)),
             "one_call_numpy": (dataclasses.replace(_job("numpy"), fence={"imports": ["numpy"]}), 1, 1),
             **moved_slots()}
    rows: dict[str, Any] = {}
    for label, (job, calls, n_instances) in cases.items():
        pool = WarmPool()
        times = {}
        for mode, process in (("in_process_slot_s", False), ("slot_process_s", True)):
            fenced = dataclasses.replace(job, fence=dict(job.fence or {}, process=process))
            _checked(run_job(fenced, isolation=isolation, warm=pool))  # warm-up
            times[mode] = _median_s(lambda f=fenced: _checked(run_job(f, isolation=isolation, warm=pool)), runs)
        pool.close()
        overhead = times["slot_process_s"] - times["in_process_slot_s"]
        rows[label] = {**times, "calls": calls, "instances": n_instances, "overhead_s": overhead,
                       "overhead_per_call_us": 1e6 * overhead / calls}
    loop_job = dataclasses.replace(
        cases["bpp_online_train_best_fit"][0], solver="benchmarks.sandbox_overhead:solve_bpp_timed",
        instances=[{"items": [float(v) for v in i.items], "capacity": float(i.capacity)} for i in instances],
        sys_path=(str(REPO),), instance_limits_s=())
    pool = WarmPool()
    loops: dict[str, float] = {}
    for mode, process in (("in_process_slot_us", False), ("slot_process_us", True)):
        fenced = dataclasses.replace(loop_job, fence=dict(loop_job.fence or {}, process=process))
        _checked(run_job(fenced, isolation=isolation, warm=pool))
        per_call = []
        for _ in range(runs):
            sols = _checked(run_job(fenced, isolation=isolation, warm=pool)).solutions
            per_call.append(1e6 * sum(x["loop_s"] for x in sols) / sum(x["calls"] for x in sols))
        loops[mode] = sorted(per_call)[len(per_call) // 2]
    pool.close()
    loops["overhead_us"] = loops["slot_process_us"] - loops["in_process_slot_us"]
    rows["bpp_loop_per_call_in_sandbox"] = loops
    rows["proxy_call_us"] = proxy_call_us(20_000 if runs > 5 else 5_000)
    return rows


def moved_slots() -> dict[str, tuple[Any, int, int]]:
    """The slots issue 28 moved out of the algorithm's process that are called many times per instance:
    ``tsp_gls`` (one call per GLS iteration, n x n matrices both ways) and ``optimizer_update`` (one call per
    hidden matrix per training step, its state dict both ways): ``(job, calls, instances)`` on the train sets."""
    from hifo.agents.evaluation import make_job
    from hifo.evaluators.registry import get_evaluator
    from hifo.problems.optimizers import build_model, split_params

    gls = get_evaluator("tsp_gls")
    tours = gls.load_instances("train")
    opt = get_evaluator("optimizer_update")
    runs = opt.load_instances("train")
    opt_calls = sum(run.steps * len(split_params(build_model(run.task, run.seed))[0]) for run in runs)
    return {"tsp_gls_train_eoh_utility": (make_job(gls, gls.baselines["eoh_utility"], tours),
                                          sum(t.iterations * t.perturbation_moves for t in tours), len(tours)),
            "optimizer_update_train_muon": (make_job(opt, opt.baselines["muon"], runs), opt_calls, len(runs))}


def proxy_call_us(calls: int) -> dict[str, float]:
    """Median over 5 rounds of the wall time of one ``priority(item, bins)`` call through a slot proxy (with the
    compact codec of ``sandbox/_slotcodec.py``, and ``_pickle_only`` with everything pickled as before it), and the
    same call in-process, for ``bins`` of 100 and 1,000 floats (outside the sandbox: the channel alone)."""
    import statistics

    import numpy as np

    from hifo.sandbox import _fence, _slotproc

    from hifo.sandbox import _slotcodec

    code = "import numpy as np\n\n\ndef priority(item, bins):\n    return -(bins - item)\n"
    fence = {"imports": list(_fence.DEFAULT_SLOT_IMPORTS), "process": True}
    local = _fence.load(code, "priority", _fence.DEFAULT_SLOT_IMPORTS)
    out = {}
    codec = _slotcodec.encode_into
    for mode in ("", "_pickle_only"):  # with the compact codec, then without it (the server forks after the swap)
        if mode:
            _slotcodec.encode_into = lambda value, buf, at, limit: None  # type: ignore[assignment]
        proxy = _slotproc.fork({"code": code, "entry": "priority", "fence": fence}, (), {"memory_mb": 2048}).ready()
        try:
            for size in (100, 1000):
                bins = np.random.default_rng(0).random(size)
                for label, fn in (("slot_process", proxy), ("in_process", local)):
                    if label == "in_process" and mode:
                        continue
                    rounds = []
                    for _ in range(5):
                        started = time.perf_counter()
                        for _ in range(calls // 5):
                            fn(0.3, bins)
                        rounds.append((time.perf_counter() - started) / (calls // 5))
                    out[f"{label}{mode}_bins{size}"] = 1e6 * statistics.median(rounds)
        finally:
            proxy.close()
            _slotcodec.encode_into = codec
    out.update(codec_us(calls))
    return out


def codec_us(calls: int) -> dict[str, float]:
    """The compact codec alone (no channel, no other process): median over 5 rounds of writing one
    ``priority(0.3, bins)`` call and its answer into a shared mapping (:func:`encode_into`, as the channel does) and
    reading them back in place (:func:`decode`), bins of 100 and 1,000 floats; and pickle's ``dumps`` + ``loads``
    of the same values."""
    import mmap
    import pickle
    import statistics

    import numpy as np

    from hifo.sandbox import _slotcodec

    mem = mmap.mmap(-1, 1 << 20)
    view = memoryview(mem)
    out = {}
    for size in (100, 1000):
        bins = np.random.default_rng(0).random(size)
        values = (((0.3, bins), {}), -(bins - 0.3))

        def compact() -> None:
            for value in values:
                end = _slotcodec.encode_into(value, mem, 0, 1 << 20)
                _slotcodec.decode(view[:end])

        def pickled() -> None:
            for value in values:
                pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

        for label, fn in (("codec", compact), ("pickle", pickled)):
            rounds = []
            for _ in range(5):
                started = time.perf_counter()
                for _ in range(calls // 5):
                    fn()
                rounds.append((time.perf_counter() - started) / (calls // 5))
            out[f"{label}_call_and_answer_bins{size}"] = 1e6 * statistics.median(rounds)
    return out


def measure(quick: bool, isolation: str, ray: bool) -> dict[str, Any]:
    import os
    import platform
    import subprocess
    import sys

    from hifo.sandbox import isolation_report

    runs = ({"inprocess": 50, "warm": 15, "fresh": 3, "fresh_torch": 2} if quick
            else {"inprocess": 400, "warm": 60, "fresh": 15, "fresh_torch": 5})
    jobs, fresh_jobs = (20, 6) if quick else (120, 30)
    startup = {
        label: _median_s(lambda c=code: subprocess.run([sys.executable, "-I", "-c", c], check=True),
                         3 if quick else 10)
        for label, code in (("python", "pass"), ("python_import_numpy", "import numpy"),
                            ("python_import_torch", "import torch"))
    }
    report = isolation_report(isolation)
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_avg_1m": os.getloadavg()[0]},
        "parameters": {"quick": quick, "isolation": isolation, "runs": runs, "throughput_jobs": jobs,
                       "throughput_jobs_fresh": fresh_jobs},
        "isolation": {"plan": report["plan"], "sandbox_python": report["sandbox_python"]},
        "startup_median_s": startup,
        "per_candidate_median_s": per_candidate(["python", "numpy", "torch"], runs, isolation),
        "throughput_candidates_per_min": throughput(jobs, fresh_jobs, isolation, ray),
        "slot_process": slot_process(3 if quick else 7, isolation),
    }


def print_slot_table(rows: dict[str, Any]) -> None:
    print("  slot in the algorithm's process vs a slot process (warm worker, per candidate, median)")
    for label, row in rows.items():
        if label in ("proxy_call_us", "bpp_loop_per_call_in_sandbox"):
            continue
        print(f"    {label:<28} {row['in_process_slot_s'] * 1e3:9.1f} ms -> {row['slot_process_s'] * 1e3:9.1f} ms"
              f"  (+{row['overhead_s'] * 1e3:.1f} ms; {row['calls']} calls, {row['instances']} instances: "
              f"{row['overhead_per_call_us']:.1f} us per call)")
    loop = rows["bpp_loop_per_call_in_sandbox"]
    print(f"  bpp_online's loop alone, per call inside the sandbox: {loop['in_process_slot_us']:.1f} us in-process slot, "
          f"{loop['slot_process_us']:.1f} us slot process (+{loop['overhead_us']:.1f} us)")
    print("  one call through the proxy vs in-process (us): " +
          ", ".join(f"{k} {v:.1f}" for k, v in rows["proxy_call_us"].items()))


def print_table(report: dict[str, Any]) -> None:
    plan = report["isolation"]["plan"]
    layers = ", ".join(name for name, on in plan.get("layers", {}).items() if on) or "none"
    print(f"sandbox overhead ({report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
          f"load {report['machine']['load_avg_1m']:.1f}; isolation {plan.get('level')}: {layers})")
    for label, value in report["startup_median_s"].items():
        print(f"  startup {label:<28} {value * 1e3:9.1f} ms")
    print(f"  {'heuristic':<10} {'in-process':>11} {'warm':>9} {'fresh':>10} {'warm ovh':>9} {'fresh ovh':>10}")
    for kind, row in report["per_candidate_median_s"].items():
        print(f"  {kind:<10} {row['in_process_s'] * 1e3:8.3f} ms {row['warm_s'] * 1e3:6.1f} ms "
              f"{row['fresh_s'] * 1e3:7.1f} ms {row['warm_overhead_s'] * 1e3:6.1f} ms "
              f"{row['fresh_overhead_s'] * 1e3:7.1f} ms")
    print("  throughput (numpy heuristic, candidates per minute)")
    for label, value in report["throughput_candidates_per_min"].items():
        shown = f"{value:9.0f}" if isinstance(value, float) else value
        print(f"    {label:<26} {shown}")
    print_slot_table(report["slot_process"])


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    parser.add_argument("--isolation", default="standard", choices=["strict", "standard", "minimal"])
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray measurement")
    parser.add_argument("--slot-only", action="store_true", help="only the slot-process comparison")
    args = parser.parse_args(argv)
    if args.slot_only:
        import os
        import platform

        report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                              "load_avg_1m": os.getloadavg()[0]},
                  "parameters": {"quick": args.quick, "isolation": args.isolation},
                  "slot_process": slot_process(3 if args.quick else 7, args.isolation)}
        print(f"slot process ({report['machine']['cpus']} CPUs, load {report['machine']['load_avg_1m']:.1f})")
        print_slot_table(report["slot_process"])
        path = RESULTS / "sandbox_overhead_slot.json"
        path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {path.relative_to(REPO)}")
        return
    report = measure(args.quick, args.isolation, not args.no_ray)
    print_table(report)
    path = RESULTS / ("sandbox_overhead_quick.json" if args.quick else "sandbox_overhead.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path.relative_to(REPO)}")


if __name__ == "__main__":
    main()

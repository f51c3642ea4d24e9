"""Cost of the slot fence (issue 13): ms per candidate with and without it.

    python -m benchmarks.sandbox_fence [--reps 15]

Three figures, each the median (and minimum) over ``--reps`` runs, plain and fenced alternately:

* ``sandbox_ms``: one numpy candidate through a warm sandbox worker (``run_job(warm=pool)``),
  the benchmark of :mod:`benchmarks.sandbox_overhead`, with ``Job.fence`` unset and set; the
  difference is what the fence costs per candidate (static check, guarded compile, audit hook);
* ``load_ms``: compiling and loading the candidate in-process, plain vs fenced;
* ``instances_ms``: the fenced numpy job with 1 instance and with 101 instances through the warm
  worker; ``per_instance_ms`` = (101 - 1 instances) / 100 bounds the cost of the parent-timed
  budgets (one progress byte written by the child per instance, read and timestamped by the
  parent) together with the solver call and the JSON encoding of each instance;
* ``slot_process_ms``: the fenced numpy job through the warm worker with the candidate in the
  job's process and in a slot process of its own (:mod:`hifo.sandbox._slotproc`: fork, fenced
  load there, one call over the pipe);
* ``slot_call_ms``: one call of the ``milp_primal`` baseline heuristic on a train instance
  (its LP point, the sparse matrix, ...) directly and through a slot process (pickled arguments,
  restricted unpickling of the answer, CPU read from /proc);
* ``bpp_call_ms``: the Best Fit baseline of ``bpp_online`` packing one train instance
  in-process, plain vs fenced: the run-time price of the guarded attribute reads/writes and of
  the audit window around each of the ~thousands of calls to the heuristic.

Writes ``benchmarks/results/sandbox_overhead_fence.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "sandbox_overhead_fence.json"


def _paired_ms(plain: Callable[[], Any], fenced: Callable[[], Any], reps: int) -> dict[str, float]:
    """Medians of the two, measured alternately (a shared machine's load drifts between runs)."""
    times: dict[str, list[float]] = {"plain": [], "fenced": []}
    for _ in range(reps):
        for key, run in (("plain", plain), ("fenced", fenced)):
            started = time.perf_counter()
            run()
            times[key].append(time.perf_counter() - started)
    out = {key: round(statistics.median(values) * 1000, 3) for key, values in times.items()}
    out.update({f"{key}_min": round(min(values) * 1000, 3) for key, values in times.items()})
    return out


def _checked(result: Any) -> Any:
    if not result.ok:
        raise SystemExit(f"benchmark job failed: {result.status}: {result.error}")
    return result


def _slot_call_ms(reps: int) -> dict[str, float]:
    from hifo.evaluators.registry import get_evaluator
    from hifo.problems.milp import solve_lp
    from hifo.sandbox import _execute, _fence, _slotproc

    ev = get_evaluator("milp_primal")
    inst = ev.load_instances("train")[0]["milp"]
    lp = solve_lp(inst)
    call_args = (lp.x, lp.reduced_cost, inst.c, inst.A, inst.row_lo, inst.row_hi, inst.lb, inst.ub, inst.is_int)
    source, allowed = ev.baseline_source(), tuple(ev.slot_imports)
    direct = _execute.load_candidate(source, ev.template.name, {"imports": list(allowed)})
    proxy = _slotproc.fork({"code": source, "entry": ev.template.name, "fence": {"imports": list(allowed)}},
                           (), {"memory_mb": ev.limits.memory_mb}).ready()
    try:
        out = _paired_ms(lambda: direct(*call_args), lambda: proxy(*call_args), reps)
    finally:
        proxy.close()
        _fence.take_violation()
    out["n_vars"], out["nnz"] = int(inst.n_vars), int(inst.A.nnz)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()

    from benchmarks.sandbox_overhead import _job
    from hifo.evaluators.registry import get_evaluator
    from hifo.sandbox import WarmPool, run_job
    from hifo.sandbox import _execute, _fence

    fence = {"imports": list(_fence.DEFAULT_SLOT_IMPORTS)}
    plain_job = _job("numpy")
    fenced_job = dataclasses.replace(plain_job, fence=fence)
    figures: dict[str, Any] = {}
    pool = WarmPool()
    try:
        for job in (plain_job, fenced_job):  # warm the worker (and check both work)
            result = run_job(job, warm=pool)
            if not result.ok:
                raise SystemExit(f"benchmark job failed: {result.status}: {result.error}")
        figures["sandbox_ms"] = _paired_ms(lambda: run_job(plain_job, warm=pool),
                                           lambda: run_job(fenced_job, warm=pool), args.reps)
        many_job = dataclasses.replace(fenced_job, instances=list(fenced_job.instances) * 101)
        many = _paired_ms(lambda: run_job(fenced_job, warm=pool), lambda: _checked(run_job(many_job, warm=pool)),
                          args.reps)
        instances_ms = {"one": many["plain"], "many": many["fenced"], "one_min": many["plain_min"],
                        "many_min": many["fenced_min"], "many_instances": 101}
        instances_ms["per_instance_ms"] = round((many["fenced"] - many["plain"]) / 100, 4)
        instances_ms["per_instance_min_ms"] = round((many["fenced_min"] - many["plain_min"]) / 100, 4)
        slot_job = dataclasses.replace(fenced_job, fence=dict(fence, process=True))
        _checked(run_job(slot_job, warm=pool))
        figures["slot_process_ms"] = _paired_ms(lambda: run_job(fenced_job, warm=pool),
                                                lambda: _checked(run_job(slot_job, warm=pool)), args.reps)
    finally:
        pool.close()
    figures_instances = instances_ms

    ev = get_evaluator("bpp_online")
    source = ev.baselines["best_fit"]
    instance = ev.load_instances("train")[0]
    allowed = tuple(ev.slot_imports)
    figures["load_ms"] = _paired_ms(lambda: _execute.load_candidate(source, "priority"),
                                    lambda: _fence.load(source, "priority", allowed), args.reps)
    plain_fn = _execute.load_candidate(source, "priority")
    fenced_fn = _fence.load(source, "priority", allowed)
    figures["bpp_call_ms"] = _paired_ms(lambda: ev.solve(plain_fn, instance), lambda: ev.solve(fenced_fn, instance),
                                        args.reps)
    figures["bpp_call_ms"]["items"] = len(instance.items)
    figures["slot_call_ms"] = _slot_call_ms(args.reps)
    for entry in figures.values():  # the minimum is the steadier estimate on a loaded machine
        if "plain" not in entry:
            continue
        entry["overhead_ms"] = round(entry["fenced"] - entry["plain"], 3)
        entry["overhead_min_ms"] = round(entry["fenced_min"] - entry["plain_min"], 3)
    figures["instances_ms"] = figures_instances
    report = {"benchmark": "sandbox_fence", "reps": args.reps, "python": platform.python_version(),
              "machine": platform.machine(), "figures": figures,
              "note": "in-process figures run without the audit hook (it is installed in sandbox children only)"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

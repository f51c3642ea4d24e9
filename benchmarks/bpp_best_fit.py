"""Time FunSearch's online bin-packing loop with Best Fit, in-process.

    python -m benchmarks.bpp_best_fit [--repeats 7] [--set weibull_5k]

Runs ``BinPackingOnline.solve`` + ``score`` on every instance of the set, ``--repeats``
times, and reports the median and spread of the wall time together with the figures
reached. Writes ``benchmarks/results/bpp_best_fit.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from hifo.evaluators.bpp_online import BinPackingOnline

RESULTS = Path(__file__).resolve().parent / "results" / "bpp_best_fit.json"


def _compile(source: str, entry: str):
    namespace: dict = {}
    exec(compile(source, "<baseline>", "exec"), namespace)
    return namespace[entry]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--set", dest="instance_set", default="weibull_5k")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    ev = BinPackingOnline()
    instances = ev.load_instances(args.instance_set)
    rows = []
    for name in ("best_fit", "first_fit"):
        heuristic = _compile(ev.baselines[name], ev.template.name)
        solve_s, score_s = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            solutions = [ev.solve(heuristic, inst) for inst in instances]
            t1 = time.perf_counter()
            metrics = ev.aggregate([ev.score(i, s) for i, s in zip(instances, solutions)])
            score_s.append(time.perf_counter() - t1)
            solve_s.append(t1 - t0)
        rows.append({"heuristic": name, "mean_bins": metrics["mean_bins"], "mean_l1": metrics["mean_l1"],
                     "excess_percent": metrics["excess_percent"],
                     "solve_median_s": statistics.median(solve_s), "solve_min_s": min(solve_s),
                     "solve_max_s": max(solve_s), "score_median_s": statistics.median(score_s)})

    print(f"instance set {args.instance_set}: {len(instances)} instances, "
          f"{sum(i.num_items for i in instances)} items; {args.repeats} repeats")
    print(f"{'heuristic':<11}{'mean bins':>11}{'excess %':>10}{'solve s (median)':>18}"
          f"{'min':>8}{'max':>8}{'score s':>9}")
    for r in rows:
        print(f"{r['heuristic']:<11}{r['mean_bins']:>11.2f}{r['excess_percent']:>10.2f}"
              f"{r['solve_median_s']:>18.3f}{r['solve_min_s']:>8.3f}{r['solve_max_s']:>8.3f}"
              f"{r['score_median_s']:>9.4f}")
    out = {"benchmark": "bpp_best_fit", "instance_set": args.instance_set, "repeats": args.repeats,
           "python": platform.python_version(), "numpy": np.__version__,
           "machine": platform.machine(), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()

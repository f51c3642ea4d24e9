"""TOPTWVP (the team variant of OPTWVP): profit gap and time of greedy insertion, the team ILS
and the exact MILP, for ``m`` vehicles.

    python -m benchmarks.toptwvp [--sizes 20,50] [--vehicles 2,3] [--count 10]

Instances: :func:`generate_instance` (seeds ``7000 + n * 100 + k``; the horizon of the
single-vehicle problem, per vehicle — the official TOPTWVP settings are not reproduced here).
Methods, all followed by stage 2 (STO) route by route:

* ``greedy`` -- :func:`construct_team`, parallel insertion with the density rule;
* ``ils`` -- one run of :func:`team_ils` (``--ils-stale`` non-improving iterations);
* ``milp`` -- :func:`solve_milp` with ``vehicles=m`` (HiGHS, ``--milp-limit`` s per instance).

Gap: ``(best - profit) / best`` in percent, ``best`` the MILP profit where proved optimal, else the
best any method found; times are CPU seconds per instance (one thread). Writes ``benchmarks/results/toptwvp.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hifo.problems.optwvp import check_team, construct_team, density_scorer, generate_instance, solve_milp, team_ils

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("greedy", "ils", "milp")


def _timed(fn):
    t0 = time.process_time()  # CPU seconds: the machine is shared, and everything runs on one thread
    out = fn()
    return out, time.process_time() - t0


def run(sizes, vehicles, count: int, milp_limit: float, ils_stale: int) -> dict:
    rows = {}
    for n in sizes:
        for m in vehicles:
            per = {k: {"gap": [], "time": []} for k in METHODS}
            proved = 0
            for k in range(count):
                inst = generate_instance(n, 7000 + n * 100 + k)
                (g_routes, g), tg = _timed(lambda: construct_team(inst, m, density_scorer))
                (i_routes, il), ti = _timed(lambda: team_ils(inst, m, seed=k, max_no_improve=ils_stale))
                milp, tm = _timed(lambda: solve_milp(inst, time_limit=milp_limit, vehicles=m))
                for routes in (g_routes, i_routes, milp["routes"]):
                    check_team(inst, routes, m)  # independent feasibility check
                proved += bool(milp["optimal"])
                best = milp["profit"] if milp["optimal"] else max(g, il, milp["profit"])
                for key, prof, t in (("greedy", g, tg), ("ils", il, ti), ("milp", milp["profit"], tm)):
                    per[key]["gap"].append(100.0 * (best - prof) / best if best > 0 else 0.0)
                    per[key]["time"].append(t)
            rows[f"n{n}_m{m}"] = {"n": n, "vehicles": m, "instances": count, "milp_proved_optimal": proved,
                                  **{key: {"gap_mean": float(np.mean(v["gap"])), "gap_max": float(np.max(v["gap"])),
                                           "time_mean_s": float(np.mean(v["time"]))} for key, v in per.items()}}
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,50")
    ap.add_argument("--vehicles", default="2,3")
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--milp-limit", type=float, default=60.0)
    ap.add_argument("--ils-stale", type=int, default=150)
    ap.add_argument("--out", type=Path, default=RESULTS / "toptwvp.json")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    vehicles = [int(x) for x in args.vehicles.split(",")]
    rows = run(sizes, vehicles, args.count, args.milp_limit, args.ils_stale)
    print(f"{'n':>4} {'m':>2} {'proved':>6} " + " ".join(f"{k + ' gap %':>12} {'s':>6}" for k in METHODS))
    for r in rows.values():
        print(f"{r['n']:>4} {r['vehicles']:>2} {r['milp_proved_optimal']:>3}/{r['instances']:<2} " +
              " ".join(f"{r[k]['gap_mean']:>12.2f} {r[k]['time_mean_s']:>6.2f}" for k in METHODS))
    payload = {"benchmark": "toptwvp", "command": "python -m benchmarks.toptwvp " + " ".join(argv or []),
               "args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    return payload


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

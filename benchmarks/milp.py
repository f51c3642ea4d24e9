"""Primal gap at equal time per MILP family: HiGHS alone, HiGHS + FMIP, HiGHS + a primal heuristic.

    python -m benchmarks.milp            # test set (3 instances per family), 2 s per instance
    python -m benchmarks.milp --quick    # train set (1 per family), 0.4 s
    python -m benchmarks.milp --heuristic best.py   # plug in an evolved milp_primal heuristic

Every method gets the same wall-clock budget per instance, *including* its own LP solve,
sampling or heuristic time. Solutions are verified with the trusted checker; the gap is
Berthold's primal gap against ``evaluators/data/milp/best_known.json`` (HiGHS, 30 s), the
primal integral is normalised by the budget. Without ``--heuristic`` the third column is
``milp_primal``'s ``lp_fix_integral`` baseline (no evolved heuristic is stored in the repo).
Writes ``benchmarks/results/milp.json`` (``milp_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from hifo.evaluators.milp_primal import MILPPrimal, best_known, run_primal_heuristic
from hifo.problems.milp import FAMILIES, check_solution, collection, primal_gap, primal_integral, solve_highs

RESULTS = Path(__file__).parent / "results"


def _metrics(inst, x, traj, best, horizon):
    x = check_solution(inst, x)  # raises if a method returned garbage
    obj = inst.objective(x)
    ref = min(obj, best)
    traj = [(t, max(o, obj)) for t, o in traj] + [(horizon, obj)]
    return {"gap": primal_gap(obj, ref), "integral": primal_integral(traj, ref, horizon) / horizon}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--heuristic", type=Path, default=None, help="file defining primal_heuristic")
    ap.add_argument("--no-fmip", action="store_true")
    args = ap.parse_args(argv)
    set_name = "train" if args.quick else "test"
    T = args.time_limit or (0.4 if args.quick else 2.0)
    refs = best_known()
    ns: dict = {}
    src = args.heuristic.read_text() if args.heuristic else MILPPrimal.baselines["lp_fix_integral"]
    exec(src, ns)
    heuristic = ns["primal_heuristic"]
    methods = ["highs", "highs+heuristic"]
    net = None
    if not args.no_fmip:
        import torch

        from hifo.problems.milp import fmip
        torch.set_num_threads(1)
        net = fmip.load_model()
        methods.insert(1, "highs+fmip")
    rows = []
    for inst in collection(set_name):
        best = refs[inst.name]["objective"]
        row = {"family": inst.family, "instance": inst.name}
        r = solve_highs(inst, time_limit=T)
        row["highs"] = _metrics(inst, r.x, r.trajectory, best, T)
        if net is not None:
            start = time.perf_counter()
            _, res = fmip.fmip_solve(net, inst, time_limit=T)
            row["highs+fmip"] = {**_metrics(inst, res.x, res.trajectory, best, T), "stage": res.stage,
                                 "wall": time.perf_counter() - start}
        sol = run_primal_heuristic(heuristic, inst, T)
        row["highs+heuristic"] = {**_metrics(inst, np.asarray(sol["x"]), sol["trajectory"], best, T),
                                  "stage": sol["stage"]}
        rows.append(row)
        print(inst.name, {m: round(row[m]["gap"], 4) for m in methods}, flush=True)
    table = defaultdict(dict)
    for fam in FAMILIES:
        fam_rows = [r for r in rows if r["family"] == fam]
        for m in methods:
            table[fam][m] = {k: float(np.mean([r[m][k] for r in fam_rows])) for k in ("gap", "integral")}
    table["all"] = {m: {k: float(np.mean([r[m][k] for r in rows])) for k in ("gap", "integral")}
                    for m in methods}
    print(f"\nprimal gap (primal integral / T) at T = {T} s per instance, set '{set_name}'")
    print(f"{'family':10s}" + "".join(f"{m:>26s}" for m in methods))
    for fam, vals in table.items():
        print(f"{fam:10s}" + "".join(f"{vals[m]['gap']:>15.4f} ({vals[m]['integral']:.4f})" for m in methods))
    out = {"command": "python -m benchmarks.milp" + (" --quick" if args.quick else ""),
           "time_limit_s": T, "set": set_name, "heuristic": str(args.heuristic or "lp_fix_integral"),
           "table": table, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("milp_quick.json" if args.quick else "milp.json")).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()

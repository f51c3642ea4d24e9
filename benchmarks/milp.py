"""Primal integral at equal CPU time per MILP family: HiGHS alone and HiGHS after a hand-off.

    python -m benchmarks.milp                    # test set (3 per family), 1 CPU s, 2 seeds (~4 CPU min)
    python -m benchmarks.milp --quick            # train set (1 per family), 1 CPU s
    python -m benchmarks.milp --heuristic best.py   # add an evolved milp_primal heuristic
    python -m benchmarks.milp --fmip             # add HiGHS + FMIP (needs torch and the weights)

Every method gets the same budget of CPU seconds per instance, *including* its own LP solve,
sampling or heuristic time (the CPU clock, not the evaluators' deterministic work ticks: the point
here is what each pipeline buys with equal CPU time, FMIP's sampling included), and runs once per
seed (HiGHS's random seed and the dives' random subsets). Methods: ``highs`` (HiGHS alone),
``lp_hint_only`` and ``lp_fix_integral``
(``milp_primal``'s two baselines through the official neural-diving hand-off), optionally an
evolved heuristic and FMIP. Solutions are verified with the trusted checker. The primary metric
is Berthold's primal integral normalised by the budget, against
``evaluators/data/milp/best_known.json`` (HiGHS, ``REF_TIME_LIMIT`` CPU s); the final primal gap
is reported beside it. ``separation`` gives, for each pair of methods, the mean paired difference
of the per-instance integral (averaged over seeds) with a 95 % t-interval over instances, and
the same within each family over its (instance, seed) runs: an interval that excludes 0
separates the two methods beyond seed and instance noise.
Writes ``benchmarks/results/milp.json`` (``milp_quick.json`` with ``--quick``; with ``--fmip``
``milp_fmip.json`` / ``milp_fmip_quick.json``, so the table without FMIP is kept).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

from hifo.evaluators.milp_primal import (REF_TIME_LIMIT, MILPPrimal, best_known,
                                         run_primal_heuristic)
from hifo.problems.milp import (FAMILIES, check_solution, collection, primal_gap, primal_integral,
                                solve_highs)

RESULTS = Path(__file__).parent / "results"


def _metrics(inst, x, traj, best, horizon):
    x = check_solution(inst, x)  # raises if a method returned garbage
    obj = inst.objective(x)
    ref = min(obj, best)
    traj = [(t, max(o, obj)) for t, o in traj] + [(horizon, obj)]
    return {"gap": primal_gap(obj, ref), "integral": primal_integral(traj, ref, horizon) / horizon}


def _heuristic(src: str):
    ns: dict = {}
    exec(src, ns)  # trusted baselines or the user's own file, as before
    return ns["primal_heuristic"]


def _ci(diffs: np.ndarray) -> tuple[float, float, float]:
    m = float(diffs.mean())
    if len(diffs) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs)))
    return m, m - half, m + half


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=None, help="CPU seconds per instance")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--families", nargs="*", default=list(FAMILIES))
    ap.add_argument("--heuristic", type=Path, default=None, help="file defining primal_heuristic")
    ap.add_argument("--fmip", action="store_true")
    args = ap.parse_args(argv)
    set_name = "train" if args.quick else "test"
    T = args.time_limit or 1.0
    refs = best_known()
    heuristics = {name: _heuristic(src) for name, src in MILPPrimal.baselines.items()}
    if args.heuristic:
        heuristics["evolved"] = _heuristic(args.heuristic.read_text())
    methods = ["highs", *heuristics]
    net = None
    if args.fmip:
        import torch

        from hifo.problems.milp import fmip
        torch.set_num_threads(1)
        net = fmip.load_model()
        methods.append("fmip")
    rows = []
    for inst in collection(set_name, tuple(args.families)):
        best = refs[inst.name]["objective"]
        for seed in range(args.seeds):
            row = {"family": inst.family, "instance": inst.name, "seed": seed}
            r = solve_highs(inst, time_limit=T, seed=seed)
            row["highs"] = _metrics(inst, r.x, r.trajectory, best, T)
            for name, h in heuristics.items():
                sol = run_primal_heuristic(h, inst, T, 0.0, seed=seed, clock="cpu")
                row[name] = {**_metrics(inst, np.asarray(sol["x"]), sol["trajectory"], best, T),
                             "stage": sol["stage"]}
            if net is not None:
                _, res = fmip.fmip_solve(net, inst, time_limit=T, seed=seed)
                row["fmip"] = {**_metrics(inst, res.x, res.trajectory, best, T), "stage": res.stage}
            rows.append(row)
            print(inst.name, seed, {m: round(row[m]["integral"], 4) for m in methods}, flush=True)
    table = defaultdict(dict)
    for fam in [*args.families, "all"]:
        fam_rows = [r for r in rows if fam in ("all", r["family"])]
        for m in methods:
            table[fam][m] = {k: float(np.mean([r[m][k] for r in fam_rows])) for k in ("integral", "gap")}
    per_inst = {m: np.array([np.mean([r[m]["integral"] for r in rows if r["instance"] == name])
                             for name in dict.fromkeys(r["instance"] for r in rows)])
                for m in methods}
    separation = {}
    for a, b in itertools.combinations(methods, 2):
        mean, lo, hi = _ci(per_inst[a] - per_inst[b])
        separation[f"{a} - {b}"] = {"mean": mean, "ci95": [lo, hi],
                                    "separated": bool(lo > 0 or hi < 0)}
        for fam in args.families:  # within a family: over its (instance, seed) runs
            d = np.array([r[a]["integral"] - r[b]["integral"] for r in rows if r["family"] == fam])
            mean, lo, hi = _ci(d)
            separation[f"{fam}: {a} - {b}"] = {"mean": mean, "ci95": [lo, hi],
                                               "separated": bool(lo > 0 or hi < 0)}
    print(f"\nprimal integral / T (final primal gap) at T = {T} CPU s per instance, set "
          f"'{set_name}', {args.seeds} seeds")
    print(f"{'family':10s}" + "".join(f"{m:>24s}" for m in methods))
    for fam, vals in table.items():
        print(f"{fam:10s}" + "".join(f"{vals[m]['integral']:>15.4f} ({vals[m]['gap']:.4f})" for m in methods))
    print("\npaired difference of the integral (all: per instance; family: per run), mean [95% CI]")
    for k, v in separation.items():
        print(f"  {k:34s} {v['mean']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
              + ("  separated" if v["separated"] else ""))
    given = sys.argv[1:] if argv is None else list(argv)
    out = {"command": " ".join(["python -m benchmarks.milp", *given]),
           "time_limit_cpu_s": T, "ref_time_limit_cpu_s": REF_TIME_LIMIT, "set": set_name,
           "seeds": args.seeds, "methods": methods, "table": table, "separation": separation,
           "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "milp" + ("_fmip" if args.fmip else "") + ("_quick" if args.quick else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()

"""OPTWVP (DeCoST): profit gap and time of greedy, ILS, the learned constructor and the MILP.

    python -m benchmarks.optwvp [--quick]              # the comparison table
    python -m benchmarks.optwvp --train [--train-steps N --train-seconds S]
    python -m benchmarks.optwvp --make-refs            # evaluator data (= hifo data optwvp-refs)

The comparison runs, for n = 20, 50, 100 (nodes including the depot), on generated instances
(seeds 5000 + n * 100 + k, disjoint from the evaluator sets and from training):

* ``greedy`` — :func:`construct_route` with the density rule ``p * room / (1 + shift)``;
* ``ils`` — one run of :func:`iterated_local_search` (150 non-improving iterations);
* ``learned`` / ``learned+16`` — the trained DeCoST policy, greedy decoding / best of the
  greedy and 16 sampled rollouts; all three go through stage 2 (STO);
* ``milp`` — HiGHS on the exact model, ``--milp-limit`` seconds per instance.

The gap is ``(best - profit) / best`` in percent, ``best`` being the MILP optimum where proved
(otherwise the best profit any method found); time is wall seconds per instance, on one
thread. ``--train`` trains the policy on CPU and writes ``problems/optwvp/weights/``;
``--make-refs`` solves the evaluator sets (MILP, then best of 3 ILS runs as a check) and
writes ``evaluators/data/optwvp/refs.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hifo.problems.optwvp import (
    construct_route,
    density_scorer,
    generate_instance,
    iterated_local_search,
    learned_routes,
    routes_optimal,
    solve_milp,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SIZES = (20, 50, 100)
METHODS = ("greedy", "ils", "learned", "learned+16", "milp")


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run_comparison(count: int, milp_limit: float, ils_stale: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from hifo.problems.optwvp._learned import load_policy

    model = load_policy()
    rows = {}
    for n in SIZES:
        per = {m: {"profit": [], "seconds": []} for m in METHODS}
        ref, proved = [], []
        for k in range(count):
            inst = generate_instance(n, 5000 + n * 100 + k)
            (g_route, g_prof), tg = _timed(lambda: construct_route(inst, density_scorer))
            (i_route, i_prof), ti = _timed(lambda: iterated_local_search(inst, seed=k, max_no_improve=ils_stale))
            l_route, tl = _timed(lambda: learned_routes([inst], model=model)[0])
            s_route, ts = _timed(lambda: learned_routes([inst], model=model, samples=16)[0])
            milp, tm = _timed(lambda: solve_milp(inst, time_limit=milp_limit))
            profits = routes_optimal(inst, [g_route, i_route, l_route, s_route, milp["route"]])[1]
            for m, prof, sec in zip(METHODS, profits, (tg, ti, tl, ts, tm)):
                per[m]["profit"].append(float(prof))
                per[m]["seconds"].append(sec)
            proved.append(bool(milp["optimal"]))
            ref.append(float(milp["profit"]) if milp["optimal"] else float(max(profits)))
        ref_arr = np.asarray(ref)
        rows[n] = {"instances": count, "milp_proved": int(sum(proved)), "reference_mean": float(ref_arr.mean())}
        for m in METHODS:
            prof = np.asarray(per[m]["profit"])
            gap = np.where(ref_arr > 0, (ref_arr - prof) / np.maximum(ref_arr, 1e-12) * 100.0, 0.0)
            rows[n][m] = {"gap_percent": float(gap.mean()), "profit": float(prof.mean()),
                          "seconds": float(np.mean(per[m]["seconds"]))}
    return rows


def print_table(rows: dict) -> None:
    head = f"{'method':<12}" + "".join(f"{'n=' + str(n) + ' gap%':>14}{'time s':>9}" for n in rows)
    print(head)
    print("-" * len(head))
    for m in METHODS:
        line = f"{m:<12}"
        for n, r in rows.items():
            line += f"{r[m]['gap_percent']:>14.2f}{r[m]['seconds']:>9.3f}"
        print(line)
    print("MILP proved optimal on " + ", ".join(f"{r['milp_proved']}/{r['instances']} (n={n})"
                                                 for n, r in rows.items()))


def train(steps: int, seconds: float | None, seed: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from hifo.problems.optwvp._learned import WEIGHTS_PATH, save_policy
    from hifo.problems.optwvp._train import train_policy

    model, hist = train_policy(sizes=SIZES, steps=steps, time_limit=seconds, seed=seed)
    meta = {"steps": len(hist), "sizes": list(SIZES), "seed": seed,
            "seconds": hist[-1]["seconds"] if hist else 0.0,
            "command": f"python -m benchmarks.optwvp --train --train-steps {steps}"
                       + (f" --train-seconds {seconds:g}" if seconds else "")}
    save_policy(model, WEIGHTS_PATH, meta)
    print(f"saved {WEIGHTS_PATH} ({WEIGHTS_PATH.stat().st_size / 1024:.0f} KiB)")
    # every 10th step is enough for a learning curve and keeps the JSON small
    return {"meta": meta, "history": [h for i, h in enumerate(hist) if i % 10 == 0 or i == len(hist) - 1]}


def make_refs(milp_limit: float, ils_runs: int) -> None:
    """Write ``evaluators/data/optwvp/refs.json`` (``hifo data optwvp-refs``)."""
    from hifo.evaluators.optwvp_refs import make_optwvp_refs

    make_optwvp_refs(milp_limit, ils_runs)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 instances per size, shorter limits")
    ap.add_argument("--count", type=int, default=10, help="instances per size")
    ap.add_argument("--milp-limit", type=float, default=60.0)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--train-steps", type=int, default=1500)
    ap.add_argument("--train-seconds", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--make-refs", action="store_true")
    ap.add_argument("--ils-runs", type=int, default=3)
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.make_refs:
        make_refs(args.milp_limit, args.ils_runs)
        return {}
    if args.train:
        res = train(args.train_steps, args.train_seconds, args.seed)
        (RESULTS / "optwvp_train.json").write_text(json.dumps(res, indent=1))
        return res
    count = 3 if args.quick else args.count
    rows = run_comparison(count, 20.0 if args.quick else args.milp_limit, 50 if args.quick else 150)
    print_table(rows)
    res = {"command": "python -m benchmarks.optwvp" + (" --quick" if args.quick else ""),
           "rows": {str(n): r for n, r in rows.items()}}
    (RESULTS / ("optwvp_quick.json" if args.quick else "optwvp.json")).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()

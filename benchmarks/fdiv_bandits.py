"""Offline f-divergence-regularised contextual bandits: n x suboptimality of the regularised objective against
the sample size n, on covered and starved data, for the paper's learners and what a user would pick instead.

    python -m benchmarks.fdiv_bandits            # 4 contexts x 5 actions, 100 bandits per cell (about 1 min)
    python -m benchmarks.fdiv_bandits --quick    # 20 bandits per cell

Data: behaviour policy with single-policy concentrability C* ~ kappa, either *covered* (mu = pi*/kappa +
(1 - 1/kappa) nu, the spare mass on the actions the optimum plays least) or *starved* (mu = pi*/kappa off the
optimum's mode, the rest on the mode: the same C*, the actions off the mode seen only as often as C* forces).
Learners, reverse KL: KL-PCB (pessimistic, Hoeffding bonus, delta = 0.1; the paper's), the plug-in Gibbs policy
(no pessimism), LCB-greedy (argmax of r^ - b: pessimism without the regulariser) and greedy argmax r^. Chi-square
(strongly convex f): the plug-in maximiser (the paper's learner for this case), the same with the pessimistic
estimate r^ - b (what pessimism costs where the paper says it is not needed), LCB-greedy and greedy. Reported per
cell and n: mean, 90th percentile and maximum over bandits of n * (J(pi*) - J(pi)) (one logged dataset per bandit),
and the log-log slope of the mean suboptimality against n (-1 is the paper's eps^-1 rate). Results go to
``benchmarks/results/fdiv_bandits.json`` (``--quick``: ``fdiv_bandits_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.problems.fdiv_bandits import (COVERAGES, concentrability, greedy_policy, lcb_greedy_policy, log_log_slope,
                                        make_bandit, pessimistic_policy, plugin_policy, sample, statistics,
                                        suboptimality)

RESULTS = Path(__file__).parent / "results"
NS = (500, 2000, 8000, 32000)
KAPPAS = (4.0, 16.0)
ETAS = (4.0, 10.0)
S, A = 4, 5
LEARNERS = {
    "kl": {"kl_pcb": lambda b, c, m: pessimistic_policy(c, m, b.pi_ref, b.eta, "kl"),
           "plugin": lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, "kl"),
           "lcb_greedy": lambda b, c, m: lcb_greedy_policy(c, m),
           "greedy": lambda b, c, m: greedy_policy(c, m)},
    "chi2": {"plugin": lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, "chi2"),
             "pessimistic": lambda b, c, m: pessimistic_policy(c, m, b.pi_ref, b.eta, "chi2"),
             "lcb_greedy": lambda b, c, m: lcb_greedy_policy(c, m),
             "greedy": lambda b, c, m: greedy_policy(c, m)},
}


def cell(divergence: str, eta: float, coverage: str, kappa: float, seeds: range) -> dict[str, Any]:
    scaled: dict[str, list[list[float]]] = {m: [] for m in LEARNERS[divergence]}
    bandits = [make_bandit(S, A, eta, kappa, s, divergence, coverage) for s in seeds]
    for n in NS:
        per: dict[str, list[float]] = {m: [] for m in scaled}
        for s, b in zip(seeds, bandits):
            c, m = statistics(b.r.shape, *sample(b, n, 1000 + s))
            for name, learner in LEARNERS[divergence].items():
                per[name].append(n * suboptimality(b, learner(b, c, m)))
        for name in scaled:
            scaled[name].append(per[name])
    out: dict[str, Any] = {"concentrability_mean": float(np.mean([concentrability(b) for b in bandits]))}
    for name, rows in scaled.items():
        mean = np.array([np.mean(r) for r in rows])
        out[name] = {"n_subopt_mean": mean.tolist(), "n_subopt_p90": [float(np.quantile(r, 0.9)) for r in rows],
                     "n_subopt_max": [float(np.max(r)) for r in rows],
                     "slope": log_log_slope(np.array(NS), mean / np.array(NS))}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    seeds = range(20 if args.quick else 100)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"setup": {"contexts": S, "actions": A, "eta": ETAS, "n": NS, "kappa": KAPPAS,
                                        "coverage": COVERAGES, "bandits_per_cell": len(seeds), "delta": 0.1,
                                        "data": "r ~ U[0,1], Bernoulli rewards, pi_ref = softmax(N(0,1))"},
                              "cells": {}}
    print(f"{'f':>4} {'eta':>3} {'coverage':>8} {'C*':>5} {'learner':>11} "
          + " ".join(f"{'n=' + str(n):>13}" for n in NS) + "   slope   (n*subopt mean / p90)")
    for divergence in LEARNERS:
        for eta in ETAS:
            for coverage in COVERAGES:
                for kappa in KAPPAS:
                    row = cell(divergence, eta, coverage, kappa, seeds)
                    result["cells"][f"{divergence}_eta{eta:g}_{coverage}_kappa{kappa:g}"] = row
                    for name in LEARNERS[divergence]:
                        r = row[name]
                        print(f"{divergence:>4} {eta:>3g} {coverage:>8} {row['concentrability_mean']:>5.1f} {name:>11} "
                              + " ".join(f"{m:>6.0f}/{p:<6.0f}" for m, p in zip(r["n_subopt_mean"], r["n_subopt_p90"]))
                              + f"   {r['slope']:+.2f}", flush=True)
    result["seconds"] = time.perf_counter() - t0
    print(f"{result['seconds']:.1f} s")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("fdiv_bandits_quick.json" if args.quick else "fdiv_bandits.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

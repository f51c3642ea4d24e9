"""Offline f-divergence-regularised contextual bandits: suboptimality of the regularised objective
against the sample size n, for the paper's learners and what a user would pick instead.

    python -m benchmarks.fdiv_bandits            # 4 contexts x 5 actions, eta = 4, 100 bandits per cell (about 13 s)
    python -m benchmarks.fdiv_bandits --quick    # 20 bandits per cell (a few seconds)

Reverse KL: KL-PCB (pessimistic, Hoeffding bonus, delta = 0.1), the plug-in Gibbs policy (no pessimism)
and greedy argmax (ignores the regulariser). Chi-square (strongly convex f): the plug-in maximiser (the
paper's learner for this case) and greedy. Data: behaviour policy mu = pi*/kappa + (1 - 1/kappa) nu with
single-policy concentrability ~kappa. Reported: mean and 90th percentile of J(pi*) - J(pi) over bandits,
and the log-log slope of the mean against n (the paper: -1 for both learners). Results go to
``benchmarks/results/fdiv_bandits.json`` (``--quick``: ``fdiv_bandits_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.problems.fdiv_bandits import (concentrability, greedy_policy, hoeffding_bonus, kl_pcb, log_log_slope,
                                        make_bandit, plugin_policy, sample, statistics, suboptimality)

RESULTS = Path(__file__).parent / "results"
NS = (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)
KAPPAS = (1.0, 4.0, 16.0)
S, A, ETA = 4, 5, 4.0
LEARNERS = {
    "kl": {"kl_pcb": lambda b, c, m: kl_pcb(c, m, b.pi_ref, b.eta, hoeffding_bonus),
           "plugin": lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, "kl"),
           "greedy": lambda b, c, m: greedy_policy(c, m)},
    "chi2": {"plugin": lambda b, c, m: plugin_policy(c, m, b.pi_ref, b.eta, "chi2"),
             "greedy": lambda b, c, m: greedy_policy(c, m)},
}


def cell(divergence: str, kappa: float, seeds: range) -> dict[str, Any]:
    gaps: dict[str, list[list[float]]] = {m: [] for m in LEARNERS[divergence]}
    conc = []
    for n in NS:
        per: dict[str, list[float]] = {m: [] for m in gaps}
        for s in seeds:
            b = make_bandit(S, A, ETA, kappa, s, divergence)
            if n == NS[0]:
                conc.append(concentrability(b))
            c, m = statistics(b.r.shape, *sample(b, n, 1000 + s))
            for name, learner in LEARNERS[divergence].items():
                per[name].append(suboptimality(b, learner(b, c, m)))
        for name in gaps:
            gaps[name].append(per[name])
    out: dict[str, Any] = {"concentrability_mean": float(np.mean(conc))}
    for name, rows in gaps.items():
        mean = np.array([np.mean(r) for r in rows])
        out[name] = {"mean": mean.tolist(), "p90": [float(np.quantile(r, 0.9)) for r in rows],
                     "slope": log_log_slope(np.array(NS), mean),
                     "slope_last4": log_log_slope(np.array(NS[-4:]), mean[-4:])}
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    seeds = range(20 if args.quick else 100)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"setup": {"contexts": S, "actions": A, "eta": ETA, "n": NS, "kappa": KAPPAS,
                                        "bandits_per_cell": len(seeds), "delta": 0.1,
                                        "data": "r ~ U[0,1], Bernoulli rewards, pi_ref = softmax(N(0,1))"},
                              "cells": {}}
    print(f"{'divergence':>10} {'kappa':>5} {'C*':>5} {'learner':>8} " + " ".join(f"{n:>9}" for n in NS) + "   slope")
    for divergence in LEARNERS:
        for kappa in KAPPAS:
            row = cell(divergence, kappa, seeds)
            result["cells"][f"{divergence}_kappa{kappa:g}"] = row
            for name in LEARNERS[divergence]:
                r = row[name]
                print(f"{divergence:>10} {kappa:>5g} {row['concentrability_mean']:>5.1f} {name:>8} "
                      + " ".join(f"{v:>9.2e}" for v in r["mean"]) + f"   {r['slope']:+.2f}")
    result["seconds"] = time.perf_counter() - t0
    print(f"{result['seconds']:.1f} s")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("fdiv_bandits_quick.json" if args.quick else "fdiv_bandits.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

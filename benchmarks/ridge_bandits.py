"""SGD for single-index (ridge) bandits: regret and burn-in length against dimension and horizon for SGD
under the paper authors' schedule (``paper``: Rajaraman & Han's staged burn-in and capped decays as their
simulation code sets them, constants picked on ridge_schedule's train instances; ``paper_authors``: their own
constants), under our schedules (``two_phase`` has guessed constants, ``mean_field`` derives its learning phase from
the update's drift), a fixed step, a 1/sqrt(t) step, and what a user would pick instead: explore-then-commit,
OFUL / LinUCB (f = x) and GLM-UCB (f = x|x|, x^3).

    python -m benchmarks.ridge_bandits            # f = x, x|x|, x^3; d = 10, 20, 40; T = 10,000; 8 replicas (~4 min)
    python -m benchmarks.ridge_bandits --quick    # d = 10, 20; T = 4,000; 4 replicas

Per cell: mean per-round regret at T/4, T/2 and T (cumulative regret / rounds so far), the median round at which
the overlap <theta_t, theta*> first reaches 0.5 and 0.9 (the burn-in; "-" if never), and the final overlap.
ETC explores with uniform random actions for a fraction of T (0.05, 0.1 or 0.2; the best in hindsight is
reported, i.e. ETC is tuned with knowledge of T and theta*'s regret), then commits to the normalised moment
estimate. ``ucb`` is OFUL for f = x and GLM-UCB otherwise (:mod:`hifo.problems.ridge_bandits._ucb`). The
``evaluator`` section runs the same learners on the ``ridge_schedule`` evaluator's published test instances
(same theta*, theta_0, replicas and metric as its stored figures), for the side-by-side. Results go to
``benchmarks/results/ridge_bandits.json`` (``--quick``: ``ridge_bandits_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.problems.ridge_bandits import (AUTHORS_CONSTANTS, DEGREE, Trace, explore_then_commit, first_time, fixed_schedule,
                                         make_instance, mean_field_schedule, paper_schedule, run_sgd, run_ucb,
                                         two_phase_schedule)

RESULTS = Path(__file__).parent / "results"
SIGMA = 0.1
ETC_FRACTIONS = (0.05, 0.1, 0.2)


def inverse_sqrt_schedule(T: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(T, dtype=float)
    return 0.5 / np.sqrt(d) / np.sqrt(1.0 + t / (d * d)), np.full(T, 0.7)


def summarise(regret: np.ndarray, overlap: np.ndarray) -> dict[str, Any]:
    T = regret.shape[1]
    cum = np.cumsum(regret, axis=1)
    hit = {lvl: [first_time(o, lvl) for o in overlap] for lvl in (0.5, 0.9)}
    return {"regret_per_round": {f"{q}": float(cum[:, int(T * q) - 1].mean() / int(T * q)) for q in (0.25, 0.5, 1.0)},
            "burn_in_0.5": float(np.median(hit[0.5])), "burn_in_0.9": float(np.median(hit[0.9])),
            "reached_0.9": float(np.mean(np.array(hit[0.9]) < T)), "final_overlap": float(overlap[:, -1].mean())}


def schedules(link: str, d: int, T: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {"paper": paper_schedule(T, d, DEGREE[link]),
            "paper_authors": paper_schedule(T, d, DEGREE[link], **AUTHORS_CONSTANTS),
            "mean_field": mean_field_schedule(T, d, DEGREE[link], SIGMA), "two_phase": two_phase_schedule(T, d, DEGREE[link]),
            "fixed": fixed_schedule(T, d), "inverse_sqrt": inverse_sqrt_schedule(T, d)}


def evaluator_side_by_side() -> dict[str, dict[str, float]]:
    """The learners on ridge_schedule's published test instances, scored as the evaluator scores (mean per-round
    regret over its 4 replicas, averaged over instances); the SGD rows equal its stored figures."""
    from hifo.evaluators.ridge_schedule import REPLICAS, RidgeSchedule

    ev = RidgeSchedule()
    ev.public_seeds = True
    rows: dict[str, list[float]] = {}
    for inst in ev.load_instances("test"):
        pairs = [make_instance(inst.d, inst.seed + r) for r in range(REPLICAS)]
        ts, th0 = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
        for name, sched in schedules(inst.link, inst.d, inst.horizon).items():
            tr = run_sgd(ts, th0, inst.link, *sched, SIGMA, 7919 + inst.seed)
            rows.setdefault(name, []).append(float(tr.regret.mean()))
        tr = run_ucb(ts, inst.link, inst.horizon, SIGMA, 7919 + inst.seed)
        rows.setdefault("ucb", []).append(float(tr.regret.mean()))
    return {name: {"regret": float(np.mean(v)), "per_instance": v} for name, v in rows.items()}


def cell(link: str, d: int, T: int, replicas: int) -> dict[str, Any]:
    pairs = [make_instance(d, s) for s in range(replicas)]
    ts, th0 = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    out: dict[str, Any] = {}
    for name, sched in schedules(link, d, T).items():
        tr = run_sgd(ts, th0, link, *sched, SIGMA, 11)
        out[name] = summarise(tr.regret, tr.overlap)
    tr = run_ucb(ts, link, T, SIGMA, 11)
    out["ucb"] = summarise(tr.regret, tr.overlap)
    best = None
    for frac in ETC_FRACTIONS:
        trs: list[Trace] = [explore_then_commit(ts[i], link, T, int(frac * T), SIGMA, 11 + i) for i in range(replicas)]
        row = summarise(np.stack([t.regret for t in trs]), np.stack([t.overlap for t in trs]))
        row["explore_fraction"] = frac
        if best is None or row["regret_per_round"]["1.0"] < best["regret_per_round"]["1.0"]:
            best = row
    out["etc_best"] = best
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    dims, T, replicas = ((10, 20), 4000, 4) if args.quick else ((10, 20, 40), 10_000, 8)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"setup": {"links": list(DEGREE), "d": dims, "T": T, "replicas": replicas,
                                        "sigma": SIGMA, "etc_fractions": ETC_FRACTIONS}, "cells": {}}
    methods = ("paper", "paper_authors", "mean_field", "two_phase", "fixed", "inverse_sqrt", "etc_best", "ucb")
    print(f"{'link':>9} {'d':>3} " + " ".join(f"{m:>18}" for m in methods) + "   (regret/round @T, burn-in to 0.9)")
    for link in DEGREE:
        for d in dims:
            row = cell(link, d, T, replicas)
            result["cells"][f"{link}_d{d}"] = row
            print(f"{link:>9} {d:>3} " + " ".join(
                f"{row[m]['regret_per_round']['1.0']:>8.3f} {row[m]['burn_in_0.9']:>9.0f}" for m in methods), flush=True)
    result["evaluator"] = evaluator_side_by_side()
    print("ridge_schedule test set (published seeds), mean per-round regret: "
          + ", ".join(f"{k} {v['regret']:.4f}" for k, v in result["evaluator"].items()))
    result["seconds"] = time.perf_counter() - t0
    print(f"{result['seconds']:.1f} s")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("ridge_bandits_quick.json" if args.quick else "ridge_bandits.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()

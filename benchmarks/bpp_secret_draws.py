"""What bpp_online's secret test draws give the baselines (issue 28: the ``test`` set is drawn per run).

    python -m benchmarks.bpp_secret_draws [--draws 12]

For ``--draws`` evaluator objects (each its own secret key, as each run has), Best Fit's and First Fit's excess
over the L1 bound on the ``test`` draw (5 x 5,000 Weibull(3, 45) items, FunSearch's sizes), against the published
Weibull 5k set the stored figures use (Best Fit 3.98 %). The baselines are trusted code, run in-process. Writes
``benchmarks/results/bpp_secret_draws.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def measure(draws: int) -> dict:
    from hifo.evaluators.registry import get_evaluator
    from hifo.sandbox import _fence

    first = get_evaluator("bpp_online")
    fns = {n: _fence.load(src, "priority", _fence.DEFAULT_SLOT_IMPORTS) for n, src in first.baselines.items()}
    per_draw: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(draws):
        ev = get_evaluator("bpp_online")
        instances = ev.load_instances("test")
        for name, fn in fns.items():
            per_draw[name].append(ev.aggregate([ev.score(i, ev.solve(fn, i)) for i in instances])["excess_percent"])
    first.public_seeds = True
    published = {name: first.aggregate([first.score(i, first.solve(fn, i)) for i in first.load_instances("test")])
                 ["excess_percent"] for name, fn in fns.items()}
    gap = [a - b for a, b in zip(per_draw["first_fit"], per_draw["best_fit"])]
    return {"draws": draws, "published_weibull_5k": published,
            "secret_draws": {n: {"mean": statistics.mean(v), "sd": statistics.stdev(v), "min": min(v), "max": max(v),
                                 "values": v} for n, v in per_draw.items()},
            "first_fit_minus_best_fit": {"mean": statistics.mean(gap), "sd": statistics.stdev(gap), "min": min(gap)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=12)
    args = ap.parse_args()
    if args.draws < 2:
        raise SystemExit("--draws must be at least 2 (a spread needs two)")
    out = measure(args.draws)
    for name, row in out["secret_draws"].items():
        print(f"{name:<10} secret draws: mean {row['mean']:.3f} %  sd {row['sd']:.3f}  range {row['min']:.3f}-"
              f"{row['max']:.3f}   published Weibull 5k: {out['published_weibull_5k'][name]:.3f} %")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bpp_secret_draws.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS / 'bpp_secret_draws.json'}")


if __name__ == "__main__":
    main()

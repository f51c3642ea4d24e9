"""Truncated BPTT with burn-in: test error of a GRU simulation model against the burn-in length, side
by side with truncation without burn-in (m = 0) and full BPTT over the whole record.

    python -m benchmarks.tbptt            # window 32, m in {0, 4, ..., 28}, seeds 0-1, full BPTT seed 0 (~4 min)
    python -m benchmarks.tbptt --quick    # m in {0, 8, 16, 24}, seed 0, no full BPTT (~30 s)

Setting (:mod:`hifo.problems.tbptt`): a simulated Wiener-Hammerstein system (1,000 training and 500
test samples, independent inputs), a 12-unit GRU, 300 Adam steps (lr 0.02) on 32 random windows
each; full BPTT takes the same 300 steps, each through the whole training record. Errors are the
RMSE of the free-run simulation from a zero state (first 50 steps skipped). One torch thread.
Results go to ``benchmarks/results/tbptt.json`` (``--quick``: ``tbptt_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hifo.problems.tbptt import make_data, train_full, train_tbptt

RESULTS = Path(__file__).parent / "results"
KW = dict(epochs=30, steps=10, hidden=12, lr=2e-2)
WINDOW = 32


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    seeds = (0,) if args.quick else (0, 1)
    burn_ins = (0, 8, 16, 24) if args.quick else tuple(range(0, WINDOW, 4))
    t0 = time.perf_counter()
    sweep: dict[str, dict[str, float]] = {}
    print(f"{'burn-in':>8} " + " ".join(f"{'seed ' + str(s) + ' test':>12} {'train':>7}" for s in seeds))
    for m in burn_ins:
        runs = []
        for s in seeds:
            data = make_data(s, n_train=1000, n_test=500)
            runs.append(train_tbptt(data, window=WINDOW, burn_in=lambda e, losses, m=m: m, batch=32, seed=s, **KW))
        sweep[str(m)] = {"test_rmse": float(np.mean([r.test_rmse for r in runs])),
                         "train_rmse": float(np.mean([r.train_rmse for r in runs])),
                         "per_seed_test": [r.test_rmse for r in runs]}
        print(f"{m:8d} " + " ".join(f"{r.test_rmse:12.4f} {r.train_rmse:7.4f}" for r in runs), flush=True)
    best = min(sweep, key=lambda k: sweep[k]["test_rmse"])
    result: dict[str, Any] = {"window": WINDOW, "seeds": list(seeds), "sweep": sweep, "best_burn_in": int(best),
                              "reduction_vs_no_burn_in": 1 - sweep[best]["test_rmse"] / sweep["0"]["test_rmse"]}
    print(f"best burn-in {best}: test RMSE {sweep[best]['test_rmse']:.4f} vs {sweep['0']['test_rmse']:.4f} "
          f"without ({100 * result['reduction_vs_no_burn_in']:.1f} % lower)")
    if not args.quick:
        t = time.perf_counter()
        full = train_full(make_data(0, n_train=1000, n_test=500), seed=0, **KW)
        result["full_bptt_seed0"] = {"test_rmse": full.test_rmse, "train_rmse": full.train_rmse,
                                     "wall_s": round(time.perf_counter() - t, 1)}
        print(f"full BPTT (seed 0): test {full.test_rmse:.4f} train {full.train_rmse:.4f} "
              f"({result['full_bptt_seed0']['wall_s']} s)")
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("tbptt_quick.json" if args.quick else "tbptt.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} ({result['wall_s']} s)")
    return result


if __name__ == "__main__":
    main()

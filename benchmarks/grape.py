"""GrAPE vs DFA vs backprop on digits: accuracy against steps and cosine with the true gradient.

    python -m benchmarks.grape            # MLP, CNN and tiny transformer, 300 steps, seeds 0-1 (about 1 minute on one thread)
    python -m benchmarks.grape --quick    # MLP only, 100 steps, seed 0 (a few seconds)

GrAPE runs twice: with no anchor steps (pure forward-mode alignment) and with a uniform anchor
schedule of 5% of the steps (one backprop step every 20). The curve records test accuracy and the
cosine between each method's weight update and the exact backprop gradient on the same mini-batch
(``hidden_grad_cos``: the hidden layers only, which are the ones DFA/GrAPE approximate). Results go to
``benchmarks/results/grape.json`` (``--quick``: ``grape_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from hifo.problems.grape import train

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    models, steps, seeds = (("mlp",), 100, (0,)) if args.quick else (("mlp", "cnn", "transformer"), 300, (0, 1))
    variants = {"backprop": ("backprop", None), "dfa": ("dfa", None), "grape_no_anchor": ("grape", None),
                "grape_anchor5%": ("grape", lambda s, T, a, l, n: s % 20 == 0)}
    out: dict = {"steps": steps, "seeds": list(seeds), "runs": []}
    print(f"{'model':11} {'method':16} {'seed':>4} {'acc@25%':>8} {'acc@end':>8} {'hidden cos (mean)':>18} "
          f"{'parallel':>9} {'s':>6}")
    for model in models:
        for name, (method, rule) in variants.items():
            for seed in seeds:
                t = time.perf_counter()
                run, _ = train(method, model, steps, seed, anchor_rule=rule, log_every=steps // 10)
                d = run.to_dict()
                d.update(variant=name, seed=seed, wall_s=time.perf_counter() - t)
                # mean over logged points that are not anchor steps (an anchor's cosine is 1 by construction)
                cos = [c["hidden_grad_cos"] for c in run.curve if c["step"] not in set(run.anchors)]
                d["mean_hidden_grad_cos"] = float(np.mean(cos))
                quarter = next(c["test_acc"] for c in run.curve if c["step"] >= steps // 4)
                d["acc_quarter"] = quarter
                out["runs"].append(d)
                print(f"{model:11} {name:16} {seed:>4} {quarter:8.3f} {run.test_acc:8.3f} {d['mean_hidden_grad_cos']:18.3f} "
                      f"{d['layer_parallel_fraction']:9.2f} {d['wall_s']:6.1f}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("grape_quick.json" if args.quick else "grape.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()

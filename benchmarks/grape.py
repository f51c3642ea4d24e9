"""GrAPE vs DFA vs FDFA vs backprop on digits: accuracy against steps and cosine with the true gradient.

    python -m benchmarks.grape            # MLP, CNN and tiny transformer, 300 steps, seeds 0-1
    python -m benchmarks.grape --deep     # the deep models of grape_anchor (8-layer MLP, 4-block transformer)
    python -m benchmarks.grape --quick    # MLP only, 100 steps, seed 0 (a few seconds)

GrAPE runs with no anchor steps (pure forward-mode alignment) and with anchor schedules of 5% of the steps
(uniform: one backprop step every 20; ``--deep`` also front-loaded: the first 5%). FDFA (Bacho & Chu, official
code github.com/Florian-BACHO/FDFA) is the forward-gradient DFA a user would pick instead of GrAPE. The curve
records test accuracy and the cosine between each method's weight update and the exact backprop gradient on
the same mini-batch (``hidden_grad_cos``: the hidden layers only, which DFA/FDFA/GrAPE approximate). Results
go to ``benchmarks/results/grape.json`` (``--deep``: ``grape_deep.json``; ``--quick``: ``grape_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from hifo.problems.grape import train

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deep", action="store_true")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--models", nargs="+")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        models, steps, seeds = ("mlp",), 100, (0,)
    elif args.deep:
        models, steps, seeds = ("mlp8", "transformer4"), 300, (0, 1)
    else:
        models, steps, seeds = ("mlp", "cnn", "transformer"), 300, (0, 1)
    models, steps, seeds = args.models or models, args.steps or steps, args.seeds or seeds
    every = 20  # 5 % of the steps
    variants: dict = {"backprop": ("backprop", None), "dfa": ("dfa", None), "fdfa": ("fdfa", None),
                      "grape_no_anchor": ("grape", None),
                      "grape_anchor5%": ("grape", lambda s, T, a, l, n: s % every == 0)}
    if args.deep:
        variants["grape_front5%"] = ("grape", lambda s, T, a, l, n: s < T // every)
    out: dict = {"steps": steps, "seeds": list(seeds), "runs": []}
    print(f"load {os.getloadavg()[0]:.1f}")
    print(f"{'model':12} {'method':16} {'seed':>4} {'acc@25%':>8} {'acc@end':>8} {'loss@end':>8} "
          f"{'hidden cos (mean)':>18} {'parallel':>9} {'s':>6}")
    for model in models:
        for name, (method, rule) in variants.items():
            for seed in seeds:
                t = time.perf_counter()
                run, _ = train(method, model, steps, seed, anchor_rule=rule, log_every=steps // 10)
                d = run.to_dict()
                d.update(variant=name, seed=seed, wall_s=time.perf_counter() - t, load=os.getloadavg()[0])
                # mean over logged points that are not anchor steps (an anchor's cosine is 1 by construction)
                cos = [c["hidden_grad_cos"] for c in run.curve if c["step"] not in set(run.anchors)]
                d["mean_hidden_grad_cos"] = float(np.mean(cos))
                quarter = next(c["test_acc"] for c in run.curve if c["step"] >= steps // 4)
                d["acc_quarter"] = quarter
                out["runs"].append(d)
                print(f"{model:12} {name:16} {seed:>4} {quarter:8.3f} {run.test_acc:8.3f} {run.test_loss:8.3f} "
                      f"{d['mean_hidden_grad_cos']:18.3f} {d['layer_parallel_fraction']:9.2f} {d['wall_s']:6.1f}",
                      flush=True)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("grape_quick.json" if args.quick else "grape_deep.json" if args.deep else "grape.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()

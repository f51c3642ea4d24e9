"""Positional encodings on associative recall beyond the training length: NoPE, RoPE, GRAPE-M (learned commuting
planes and spectrum), ALiBi, GRAPE-A (the paper's softplus query+key gates, eq. 4.6, and the official query-gated
case) and FoX (forget-gate path form).

    python -m benchmarks.grape_pe                      # plain recall, all seven encodings, seed 0
    python -m benchmarks.grape_pe --task latest --seeds 0 1 2   # latest-value recall (grape_spectrum's task)
    python -m benchmarks.grape_pe --quick              # rope and alibi only
    python -m benchmarks.grape_pe --kinds grape_a grape_a_q --seeds 0 1   # a subset; merged into the results file

Each model (2 layers, d=64, 4 heads, no absolute positions) is trained for 500 steps on sequences of
length 32 (:mod:`hifo.problems.grape_pe`) and tested on 256 fresh sequences of length 32, 64 and 128
(same content, longer distances between a query and its key). ``--task latest`` writes every key twice and
asks for the later value (position is needed to answer). Results go to ``benchmarks/results/grape_pe.json``
(``--task latest``: ``grape_pe_latest.json``; ``--quick``: ``grape_pe_quick.json``); rows of a run replace the
rows of the same encoding and seed already there, so subsets can be measured separately.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from hifo.problems.grape_pe import PE_KINDS, accuracy, train_model

RESULTS = Path(__file__).parent / "results"
TASKS = {"recall": 1, "latest": 2}  # task -> writes per key


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per encoding: the mean and the seed-to-seed standard deviation of each accuracy (ddof 1)."""
    out: dict[str, dict] = {}
    for pe in dict.fromkeys(r["pe"] for r in rows):
        accs = [r["acc"] for r in rows if r["pe"] == pe]
        out[pe] = {"seeds": len(accs)}
        for L in accs[0]:
            vals = [a[L] for a in accs]
            out[pe][f"mean@{L}"] = float(np.mean(vals))
            out[pe][f"sd@{L}"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else None
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--task", choices=sorted(TASKS), default="recall")
    ap.add_argument("--kinds", nargs="+", choices=PE_KINDS)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    writes = TASKS[args.task]
    kinds = args.kinds or (("rope", "alibi") if args.quick else PE_KINDS)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("grape_pe_quick.json" if args.quick else
                      "grape_pe.json" if args.task == "recall" else f"grape_pe_{args.task}.json")
    out: dict = {"task": args.task, "writes": writes, "train_len": 32, "test_lens": [32, 64, 128], "steps": 500,
                 "rows": []}
    if path.exists() and not args.quick:
        old = json.loads(path.read_text())
        if old.get("task", "recall") == args.task:
            out["rows"] = [r for r in old["rows"] if not (r["pe"] in kinds and r["seed"] in args.seeds)]
    print(f"task {args.task} (writes {writes}); load {os.getloadavg()[0]:.1f}")
    print(f"{'pe':9} {'seed':>4} {'acc@32':>7} {'acc@64':>7} {'acc@128':>8} {'train s':>8}")
    for pe in kinds:
        for seed in args.seeds:
            t0 = time.perf_counter()
            model = train_model(pe, seed, writes=writes)
            secs = time.perf_counter() - t0
            acc = {str(L): accuracy(model, L, seed=seed, writes=writes) for L in out["test_lens"]}
            out["rows"].append({"pe": pe, "seed": seed, "acc": acc, "train_s": secs, "load": os.getloadavg()[0],
                                "params": sum(p.numel() for p in model.parameters())})
            print(f"{pe:9} {seed:>4} {acc['32']:7.3f} {acc['64']:7.3f} {acc['128']:8.3f} {secs:8.1f}", flush=True)
            out["summary"] = summary(out["rows"])
            path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()

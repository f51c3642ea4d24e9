"""Positional encodings on associative recall beyond the training length: NoPE, RoPE, GRAPE-M (learned commuting
planes and spectrum), ALiBi, GRAPE-A (learned slopes, query-adaptive) and FoX (forget-gate path form).

    python -m benchmarks.grape_pe            # all six, seed 0 (326 s of training measured on a heavily shared 2-core machine)
    python -m benchmarks.grape_pe --quick    # rope and alibi only

Each model (2 layers, d=64, 4 heads, no absolute positions) is trained for 500 steps on sequences of
length 32 (:mod:`hifo.problems.grape_pe`) and tested on 256 fresh sequences of length 32, 64 and 128
(same content, longer distances between a query and its key). Results go to
``benchmarks/results/grape_pe.json`` (``--quick``: ``grape_pe_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from hifo.problems.grape_pe import PE_KINDS, accuracy, train_model

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    kinds = ("rope", "alibi") if args.quick else PE_KINDS
    out: dict = {"train_len": 32, "test_lens": [32, 64, 128], "steps": 500, "rows": []}
    print(f"{'pe':8} {'seed':>4} {'acc@32':>7} {'acc@64':>7} {'acc@128':>8} {'train s':>8}")
    for pe in kinds:
        for seed in args.seeds:
            t0 = time.perf_counter()
            model = train_model(pe, seed)
            secs = time.perf_counter() - t0
            acc = {L: accuracy(model, L, seed=seed) for L in out["test_lens"]}
            out["rows"].append({"pe": pe, "seed": seed, "acc": acc, "train_s": secs,
                                "params": sum(p.numel() for p in model.parameters())})
            print(f"{pe:8} {seed:>4} {acc[32]:7.3f} {acc[64]:7.3f} {acc[128]:8.3f} {secs:8.1f}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("grape_pe_quick.json" if args.quick else "grape_pe.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()

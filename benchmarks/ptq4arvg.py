"""Min-max, SmoothQuant-style and PTQ4ARVG post-training quantization of a tiny autoregressive image generator.

    python -m benchmarks.ptq4arvg            # W8A8, W6A6, W4A4; 3 calibration draws + DGC (a few minutes)
    python -m benchmarks.ptq4arvg --quick    # W4A4 only, one calibration draw

The generator (2 adaLN blocks, d = 48, learned positions; :mod:`hifo.problems.ptq4arvg`) is trained here on
generated 8x8 images of 4 classes. Every block linear layer and the output head are quantized. Methods:
``minmax``, ``smoothquant``, ``ptq4arvg`` (the official placement: GPS on qkv/fc1/head, grouped token-wise
percentile ranges on proj/fc2) and ``ptq4arvg_v1`` (this project's first version). Each is calibrated on 16
sequences: the first 16 of three pools of 192 (three random draws; mean and standard deviation) and DGC's
choice from the first pool, and scored by held-out next-pixel NLL (nats/token; 512 images). ``diff`` columns:
PTQ4ARVG minus min-max and minus SmoothQuant (negative: PTQ4ARVG better). Results:
``benchmarks/results/ptq4arvg.json`` (``--quick``: ``ptq4arvg_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from hifo.problems.ptq4arvg import (METHODS, dgc_select, nll, outlier_stats, quantize_model, sample_features,
                                    sequences, trained_arvg)

RESULTS = Path(__file__).parent / "results"
POOLS = (5, 6, 8)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = trained_arvg()
    val = sequences(512, 7)
    pools = {seed: sequences(192, seed) for seed in (POOLS[:1] if args.quick else POOLS)}
    fp = nll(model, val)
    first = pools[POOLS[0]]
    out: dict = {"fp_nll": fp, "params": sum(p.numel() for p in model.parameters()),
                 "outliers": outlier_stats(model, first[:64]), "rows": [], "summary": []}
    print(f"full precision NLL {fp:.4f} nats/token; outliers {out['outliers']}")
    dgc = dgc_select(sample_features(model, first), 16)
    print(f"{'bits':>4} {'method':12} {'first16 mean':>12} {'sd':>7} {'dgc':>8}")
    for bits in ((4,) if args.quick else (8, 6, 4)):
        means = {}
        for method in METHODS:
            draws = []
            for seed, pool in pools.items():
                value = nll(quantize_model(model, method, bits, pool[:16]), val)
                draws.append(value)
                out["rows"].append({"bits": bits, "method": method, "calib": f"first16/pool{seed}", "nll": value})
            value = nll(quantize_model(model, method, bits, first[dgc]), val)
            out["rows"].append({"bits": bits, "method": method, "calib": f"dgc/pool{POOLS[0]}", "nll": value})
            sd = statistics.stdev(draws) if len(draws) > 1 else 0.0
            means[method] = statistics.fmean(draws)
            out["summary"].append({"bits": bits, "method": method, "nll_mean": means[method], "nll_sd": sd,
                                   "nll_dgc": value})
            print(f"{bits:>4} {method:12} {means[method]:12.4f} {sd:7.4f} {value:8.4f}", flush=True)
        diff = {"bits": bits, "ptq4arvg_minus_minmax": means["ptq4arvg"] - means["minmax"],
                "ptq4arvg_minus_smoothquant": means["ptq4arvg"] - means["smoothquant"]}
        out.setdefault("diffs", []).append(diff)
        print(f"     diff vs min-max {diff['ptq4arvg_minus_minmax']:+.4f}, vs SmoothQuant "
              f"{diff['ptq4arvg_minus_smoothquant']:+.4f}")
    out["wall_s"] = time.perf_counter() - t0
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("ptq4arvg_quick.json" if args.quick else "ptq4arvg.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path} ({out['wall_s']:.0f} s)")
    return out


if __name__ == "__main__":
    main()

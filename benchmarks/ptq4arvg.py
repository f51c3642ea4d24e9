"""Min-max, SmoothQuant-style and PTQ4ARVG post-training quantization of a tiny autoregressive image generator.

    python -m benchmarks.ptq4arvg            # W8A8, W6A6, W4A4; first-k and DGC calibration (about 2 minutes)

The generator (2 adaLN blocks, d = 48, learned positions; :mod:`hifo.problems.ptq4arvg`) is trained here on
generated 8x8 images of 4 classes. Each method is calibrated on 16 sequences taken from a pool of 192, either
the first 16 (a random draw) or DGC's choice, and scored by held-out next-pixel NLL (nats/token; 512 images).
Also reports activation outlier statistics. Results: ``benchmarks/results/ptq4arvg.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from hifo.problems.ptq4arvg import (METHODS, dgc_select, nll, outlier_stats, quantize_model, sample_features,
                                    sequences, trained_arvg)

RESULTS = Path(__file__).parent / "results"


def main() -> dict:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = trained_arvg()
    val, pool = sequences(512, 7), sequences(192, 5)
    fp = nll(model, val)
    out: dict = {"fp_nll": fp, "params": sum(p.numel() for p in model.parameters()),
                 "train_s": time.perf_counter() - t0, "outliers": outlier_stats(model, pool[:64]), "rows": []}
    print(f"full precision NLL {fp:.4f} nats/token; outliers {out['outliers']}")
    picks = {"first": list(range(16)), "dgc": dgc_select(sample_features(model, pool), 16)}
    print(f"{'bits':>4} {'method':12} {'calib':6} {'nll':>8} {'gap':>8}")
    for bits in (8, 6, 4):
        for method in METHODS:
            for calib, idx in picks.items():
                value = nll(quantize_model(model, method, bits, pool[idx]), val)
                out["rows"].append({"bits": bits, "method": method, "calib": calib, "nll": value, "gap": value - fp})
                print(f"{bits:>4} {method:12} {calib:6} {value:8.4f} {value - fp:8.4f}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "ptq4arvg.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path}")
    return out


if __name__ == "__main__":
    main()

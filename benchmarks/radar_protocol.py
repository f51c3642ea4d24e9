"""RADAR's ablation under greedy decoding and under a sampling test protocol, in and out of
distribution (ATSP only: there is no RADAR model for ACVRP in this repository).

    python -m benchmarks.radar_protocol            # tmat20 test set + TSPLIB ATSP (n <= 100)
    python -m benchmarks.radar_protocol --quick    # 3 instances per set

The five CPU-trained n = 20 models (``radar_atsp20_{radar, no_sinkhorn, no_svd,
no_svd_no_sinkhorn, matnet}``, ``python -m benchmarks.train_radar``; ``matnet`` is MatNet's
two-stream encoder, the baseline without SVD and Sinkhorn) decode every instance with one
rollout per start node (POMO) under three protocols:

* ``greedy x1``: the canonical encoding, greedy;
* ``greedy x8``: 8 encodings (random SVD sign flips / one-hot ID redraws), greedy, best kept
  (what ``benchmarks.routing`` reports);
* ``sample x16``: 16 encodings, each decoded by *sampling* (temperature 1), best kept -- our
  reading of the official test protocol (sampling with many augmentations); the official
  code's exact counts are not reproduced here.

Gaps are to LKH-3 (tmat20) or the optimum (TSPLIB), from the stored references of
``radar_tune``. For each protocol and set, the paired difference of the per-instance gap
between RADAR and each ablation has a 95 % t-interval: an interval excluding 0 confirms the
ablation at that scale. Writes ``benchmarks/results/radar_protocol.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from hifo.evaluators import radar_tune
from hifo.problems.routing import RadarSettings, load_radar, radar_solve

RESULTS = Path(__file__).parent / "results"
VARIANTS = ("radar", "no_sinkhorn", "no_svd", "no_svd_no_sinkhorn", "matnet")
PROTOCOLS = {"greedy x1": RadarSettings(augmentations=1),
             "greedy x8": RadarSettings(augmentations=8),
             "sample x16": RadarSettings(augmentations=16, sampling=True)}


def _ci(d: np.ndarray) -> list[float]:
    m = float(d.mean())
    if len(d) < 2:
        return [m, m, m]
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
    return [m, m - half, m + half]


def _instances(quick: bool) -> dict[str, list]:
    ev = radar_tune.RadarTune()
    tmat = [t for t in ev.load_instances("test_published") if t.instance.distance_matrix.shape[0] == 20]
    tsplib = [t for t in ev.load_instances("tsplib") if t.instance.distance_matrix.shape[0] <= 100]
    return {"tmat20": tmat[:3] if quick else tmat, "tsplib_atsp": tsplib[:3] if quick else tsplib}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    models = {v: load_radar(f"radar_atsp20_{v}") for v in VARIANTS}
    sets = _instances(args.quick)
    gaps: dict = {}
    t0 = time.process_time()
    for set_name, tasks in sets.items():
        for proto, settings in PROTOCOLS.items():
            for v, model in models.items():
                g = []
                for task in tasks:
                    inst = task.instance
                    _, length = radar_solve(model, inst.distance_matrix, settings, seed=task.seed)
                    g.append(100.0 * (length / inst.best_known - 1.0))
                gaps[(set_name, proto, v)] = np.array(g)
            print(f"{set_name:<12} {proto:<11} " + "  ".join(
                f"{v} {gaps[(set_name, proto, v)].mean():6.2f}%" for v in VARIANTS), flush=True)
    table, ablation = [], []
    for (set_name, proto, v), g in gaps.items():
        table.append({"set": set_name, "protocol": proto, "model": v, "instances": len(g),
                      "gap_percent": float(g.mean()), "per_instance": g.tolist()})
        if v != "radar":
            d = gaps[(set_name, proto, "radar")] - g
            ci = _ci(d)
            ablation.append({"set": set_name, "protocol": proto, "radar_minus": v, "ci95": ci,
                             "separated": bool(ci[1] > 0 or ci[2] < 0)})
    print("\npaired gap difference RADAR - ablation (points), mean [95% CI]")
    for a in ablation:
        print(f"  {a['set']:<12} {a['protocol']:<11} {a['radar_minus']:<20} {a['ci95'][0]:+6.2f} "
              f"[{a['ci95'][1]:+6.2f}, {a['ci95'][2]:+6.2f}]" + ("  separated" if a["separated"] else ""))
    out = {"command": "python -m benchmarks.radar_protocol" + (" --quick" if args.quick else ""),
           "protocols": {k: vars(s) for k, s in PROTOCOLS.items()}, "table": table,
           "ablation": ablation, "cpu_s": time.process_time() - t0}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / ("radar_protocol_quick.json" if args.quick else "radar_protocol.json")
    path.write_text(json.dumps(out, indent=1, default=list))
    return out


if __name__ == "__main__":
    main()

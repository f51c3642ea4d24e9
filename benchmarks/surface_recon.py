"""Simply connected surface reconstruction: Chamfer distance and topology against the alpha shape and
the convex hull, on four genus-0 shapes at five noise levels.

    python -m benchmarks.surface_recon            # 600 points, 4 shapes x 5 noise levels (about a minute)
    python -m benchmarks.surface_recon --quick    # 300 points, noise 0.01 and 0.03 only (about 10 s)

Methods: ``ours_keep`` (spectral orientation, one carving), ``ours_vote`` (3 rounds of reconstruction
and the evaluator's default reorientation rule), ``alpha_{1.5,2.5,4}h`` (alpha shape, alpha in
multiples of the mean 6-NN spacing h) and ``convex_hull``. Noise is the Gaussian std as a fraction of
the mean radius. Chamfer: symmetric, 20,000 samples on each side. ``genus0``: the surface is
closed, edge- and vertex-manifold, connected and has Euler characteristic 2. Results go to
``benchmarks/results/surface_recon.json`` (``--quick``: ``surface_recon_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.evaluators.surface_recon import _VOTE_BODY, _TEMPLATE
from hifo.problems.surface_recon import (
    SHAPES,
    alpha_shape,
    alternate,
    build_complex,
    chamfer,
    convex_hull,
    reconstruct,
    sample,
    topology,
    truth,
)
from hifo.problems.surface_recon._mesh import local_spacing

RESULTS = Path(__file__).parent / "results"


def _vote_rule() -> Any:
    namespace: dict[str, Any] = {}
    exec(_TEMPLATE.source(_VOTE_BODY), namespace)  # trusted baseline source
    return namespace["reorient"]


def _keep(score: np.ndarray, **_: Any) -> np.ndarray:
    return score


def run_case(shape: str, n: int, noise: float, seed: int) -> dict[str, Any]:
    pts = sample(shape, n, noise, seed)
    T = truth(shape)
    h = float(local_spacing(pts).mean())
    t0 = time.perf_counter()
    cx = build_complex(pts)
    build_s = time.perf_counter() - t0
    rows: dict[str, Any] = {}

    def record(name: str, tris: np.ndarray, seconds: float) -> None:
        topo = topology(tris)
        rows[name] = {"chamfer": chamfer(pts, tris, T), "genus0": topo["genus0"], "closed": topo["closed"],
                      "manifold": float(topo["edge_manifold"] and topo["vertex_manifold"]),
                      "euler": topo["euler"], "faces": topo["faces"], "seconds": seconds}

    for name, rule, rounds in (("ours_keep", _keep, 1), ("ours_vote", _vote_rule(), 3)):
        t0 = time.perf_counter()
        scores, _ = alternate(cx, rule, rounds=rounds)
        record(name, reconstruct(cx, scores), build_s + time.perf_counter() - t0)
    for mult in (1.5, 2.5, 4.0):
        t0 = time.perf_counter()
        record(f"alpha_{mult:g}h", alpha_shape(cx, mult * h), build_s + time.perf_counter() - t0)
    t0 = time.perf_counter()
    record("convex_hull", convex_hull(pts), time.perf_counter() - t0)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n, noises = (300, (0.01, 0.03)) if args.quick else (600, (0.0, 0.005, 0.01, 0.02, 0.04))
    cases = []
    t_start = time.perf_counter()
    for shape in SHAPES:
        for noise in noises:
            cases.append({"shape": shape, "noise": noise, "points": n, "seed": 1,
                          "methods": run_case(shape, n, noise, 1)})
            best = min(cases[-1]["methods"].items(), key=lambda kv: kv[1]["chamfer"])
            print(f"{shape:13s} noise {noise:<6g} " + "  ".join(
                f"{m}={r['chamfer']:.4f}{'' if r['genus0'] else '*'}" for m, r in cases[-1]["methods"].items())
                + f"   best: {best[0]}", flush=True)
    methods = list(cases[0]["methods"])
    summary: dict[str, dict[str, Any]] = {}
    for m in methods:
        summary[m] = {"chamfer_mean": float(np.mean([c["methods"][m]["chamfer"] for c in cases])),
                      "genus0_rate": float(np.mean([c["methods"][m]["genus0"] for c in cases])),
                      "closed_rate": float(np.mean([c["methods"][m]["closed"] for c in cases])),
                      "manifold_rate": float(np.mean([c["methods"][m]["manifold"] for c in cases]))}
        by_noise = {}
        for z in noises:
            sel = [c["methods"][m] for c in cases if c["noise"] == z]
            by_noise[str(z)] = {"chamfer": float(np.mean([r["chamfer"] for r in sel])),
                                "genus0_rate": float(np.mean([r["genus0"] for r in sel]))}
        summary[m]["by_noise"] = by_noise
    out = {"config": {"points": n, "noises": list(noises), "shapes": list(SHAPES), "seed": 1},
           "summary": summary, "cases": cases, "wall_s": time.perf_counter() - t_start}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("surface_recon_quick.json" if args.quick else "surface_recon.json")
    path.write_text(json.dumps(out, indent=1))
    print("\n(* = not a closed genus-0 manifold)")
    for m, s in summary.items():
        print(f"{m:12s} chamfer {s['chamfer_mean']:.4f}  genus0 {s['genus0_rate']:.2f}  "
              f"closed {s['closed_rate']:.2f}  manifold {s['manifold_rate']:.2f}")
    print(f"-> {path}  ({out['wall_s']:.0f} s)")
    return out


if __name__ == "__main__":
    main()

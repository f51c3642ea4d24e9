"""Simply connected surface reconstruction: Chamfer distance and topology against the alpha shape and
the convex hull, on five genus-0 shapes at five noise levels.

    python -m benchmarks.surface_recon            # 600 points, 5 shapes x 5 noise levels (about 1.5 minutes)
    python -m benchmarks.surface_recon --quick    # 300 points, noise 0.01 and 0.03 only (about 10 s)

Methods: ``ours_safe`` (spectral orientation, one carving stopped at the library's wall -0.3),
``ours_keep`` (the same carving at wall 0, as in the evaluator), ``ours_vote`` (3 rounds of
reconstruction and the evaluator's default reorientation rule, wall 0), ``alpha_{1.5,2.5,4}h``
(alpha shape, alpha in multiples of the mean 6-NN spacing h) and ``convex_hull``. ``oracle_orient``
is an upper bound, not a method: our carving (wall 0) with faces oriented by the *true* shape.
Chamfer means are over non-empty surfaces (an alpha shape can be empty: ``empty`` counts them).
Noise is the Gaussian std as a fraction of
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
    features,
    reconstruct,
    sample,
    topology,
    truth,
)
from hifo.problems.surface_recon._mesh import local_spacing
from hifo.problems.surface_recon._recon import WALL

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
        dist = chamfer(pts, tris, T)
        rows[name] = {"chamfer": dist if np.isfinite(dist) else None,  # None: an empty surface
                      "genus0": topo["genus0"], "closed": topo["closed"],
                      "manifold": float(topo["edge_manifold"] and topo["vertex_manifold"]),
                      "euler": topo["euler"], "faces": topo["faces"], "seconds": seconds}

    for name, rule, rounds, wall in (("ours_safe", _keep, 1, WALL), ("ours_keep", _keep, 1, 0.0),
                                     ("ours_vote", _vote_rule(), 3, 0.0)):
        t0 = time.perf_counter()
        scores, _ = alternate(cx, rule, rounds=rounds, wall=wall)
        record(name, reconstruct(cx, scores, wall=wall), build_s + time.perf_counter() - t0)
    # Upper bound, not a method: faces oriented by the true shape (tets labelled inside by their centroid).
    cen = pts[cx.tets].mean(axis=1)
    r = np.linalg.norm(cen, axis=1)
    true_in = r < SHAPES[shape](cen / np.maximum(r, 1e-12)[:, None])
    f = features(cx, true_in)
    oracle = np.where(f["on_boundary"], np.where(f["inside_pos"], 1.0, -1.0), 0.0)
    record("oracle_orient", reconstruct(cx, oracle, wall=0.0), 0.0)
    for mult in (1.5, 2.5, 4.0):
        t0 = time.perf_counter()
        record(f"alpha_{mult:g}h", alpha_shape(cx, mult * h), build_s + time.perf_counter() - t0)
    t0 = time.perf_counter()
    record("convex_hull", convex_hull(pts), time.perf_counter() - t0)
    return rows


def _mean(values: list[Any]) -> float | None:
    """Mean over the non-empty surfaces (None where every surface was empty)."""
    finite = [v for v in values if v is not None]
    return float(np.mean(finite)) if finite else None


def _fmt(value: float | None) -> str:
    return "empty" if value is None else f"{value:.4f}"


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
            best = min(((m, r) for m, r in cases[-1]["methods"].items() if m != "oracle_orient"),
                       key=lambda kv: np.inf if kv[1]["chamfer"] is None else kv[1]["chamfer"])
            print(f"{shape:13s} noise {noise:<6g} " + "  ".join(
                f"{m}={_fmt(r['chamfer'])}{'' if r['genus0'] else '*'}" for m, r in cases[-1]["methods"].items())
                + f"   best: {best[0]}", flush=True)
    methods = list(cases[0]["methods"])
    summary: dict[str, dict[str, Any]] = {}
    for m in methods:
        dists = [c["methods"][m]["chamfer"] for c in cases]
        summary[m] = {"chamfer_mean": _mean(dists), "empty": sum(d is None for d in dists),
                      "genus0_rate": float(np.mean([c["methods"][m]["genus0"] for c in cases])),
                      "closed_rate": float(np.mean([c["methods"][m]["closed"] for c in cases])),
                      "manifold_rate": float(np.mean([c["methods"][m]["manifold"] for c in cases]))}
        by_noise = {}
        for z in noises:
            sel = [c["methods"][m] for c in cases if c["noise"] == z]
            by_noise[str(z)] = {"chamfer": _mean([r["chamfer"] for r in sel]),
                                "genus0_rate": float(np.mean([r["genus0"] for r in sel]))}
        summary[m]["by_noise"] = by_noise
    out = {"config": {"points": n, "noises": list(noises), "shapes": list(SHAPES), "seed": 1},
           "summary": summary, "cases": cases, "wall_s": time.perf_counter() - t_start}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("surface_recon_quick.json" if args.quick else "surface_recon.json")
    path.write_text(json.dumps(out, indent=1))
    print("\n(* = not a closed genus-0 manifold)")
    for m, s in summary.items():
        print(f"{m:13s} chamfer {_fmt(s['chamfer_mean'])} (empty {s['empty']})  genus0 {s['genus0_rate']:.2f}  "
              f"closed {s['closed_rate']:.2f}  manifold {s['manifold_rate']:.2f}")
    print(f"-> {path}  ({out['wall_s']:.0f} s)")
    return out


if __name__ == "__main__":
    main()

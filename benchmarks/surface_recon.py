"""Simply connected surface reconstruction against the convex hull, alpha shapes and Screened Poisson, and
the surface_recon evaluator's baselines across sampling seeds (noise, margin over the hull, rank agreement).

    python -m benchmarks.surface_recon            # 600 points, 11 shapes x 4 noise levels, 5 seeds (about 4 min)
    python -m benchmarks.surface_recon --quick    # 300 points, noise 0.01 and 0.03, 3 seeds (about 1.5 min)

Part 1, methods on every shape (``hifo.problems.surface_recon``; noise: Gaussian std as a fraction of the mean
distance from the origin): ``ours`` (spectral triangle orientation, the winding field of the oriented
triangles and a ball carved along it; one round), ``ours_vote`` (3 rounds of reconstruction and the
evaluator's ``vote`` reorientation), ``previous`` (the project's earlier pipeline: unweighted candidate
pairs, carving by the sum of face scores at wall 0), ``alpha_2.5h`` (alpha shape, h = mean 6-NN spacing),
``convex_hull``, ``poisson`` (Screened Poisson, PyMeshLab, depth 6, normals by PyMeshLab from 10 neighbours;
skipped with a message when PyMeshLab is missing: ``pip install 'hifo[bench]'``) and ``oracle_orient``
(an upper bound, not a method: faces oriented by the true inside, tets labelled by their centroid).
Chamfer: symmetric, 20,000 samples on each side. ``genus0``: closed, edge- and vertex-manifold, connected,
Euler characteristic 2.

Part 2, the evaluator (``hifo.evaluators.surface_recon``): its baselines' train Chamfer (scored by the
evaluator's own parent code) on the train shapes re-sampled with several seeds, beside the hull and
Poisson on the same clouds; the seed-to-seed standard deviation of each set mean is the noise the margin
over the hull is compared with; the Spearman rank correlation of the baselines between the stored train
set (seed 0) and the test set. Results: ``benchmarks/results/surface_recon.json`` (``--quick``:
``surface_recon_quick.json``; ``--part methods|evaluator`` runs one part: ``surface_recon_<part>[_quick].json``;
``--shapes a,b`` restricts part 1).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.stats import spearmanr

from hifo.evaluators.surface_recon import (
    TRUTH_SAMPLES,
    SurfaceInstance,
    SurfaceRecon,
    _truth,
    instance_specs,
)
from hifo.problems.surface_recon import (
    SHAPES,
    alpha_shape,
    alternate,
    build_complex,
    chamfer,
    convex_hull,
    edge_pairs,
    face_quality,
    features,
    grow,
    inside,
    oriented_boundary,
    reconstruct,
    sample,
    spectral_orientation,
    topology,
    truth,
)
from hifo.problems.surface_recon._mesh import local_spacing

RESULTS = Path(__file__).parent / "results"
POISSON_DEPTH = 6


def screened_poisson(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, triangles) of PyMeshLab's Screened Poisson reconstruction, or None without PyMeshLab."""
    try:
        import pymeshlab
    except ImportError:
        return None
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(vertex_matrix=np.asarray(points, dtype=np.float64)))
    ms.compute_normal_for_point_clouds(k=10)
    ms.generate_surface_reconstruction_screened_poisson(depth=POISSON_DEPTH, preclean=True)
    mesh = ms.current_mesh()
    return np.asarray(mesh.vertex_matrix()), np.asarray(mesh.face_matrix(), dtype=np.int64)


def _rules() -> dict[str, Callable[..., Any]]:
    ev = SurfaceRecon()
    out = {}
    for name, source in ev.baselines.items():
        namespace: dict[str, Any] = {}
        exec(source, namespace)  # our own baseline source (trusted)
        out[name] = namespace[ev.template.name]
    return out


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

    def record(name: str, vertices: np.ndarray, tris: np.ndarray, seconds: float) -> None:
        topo = topology(tris)
        dist = chamfer(vertices, tris, T)
        rows[name] = {"chamfer": dist if np.isfinite(dist) else None,  # None: an empty surface
                      "genus0": topo["genus0"], "closed": topo["closed"],
                      "manifold": float(topo["edge_manifold"] and topo["vertex_manifold"]),
                      "euler": topo["euler"], "faces": topo["faces"], "seconds": seconds}

    for name, rule, rounds in (("ours", _keep, 1), ("ours_vote", _rules()["vote"], 3)):
        t0 = time.perf_counter()
        scores, _ = alternate(cx, rule, rounds=rounds)
        record(name, pts, reconstruct(cx, scores), build_s + time.perf_counter() - t0)
    t0 = time.perf_counter()
    q = face_quality(cx)
    P, S, W = edge_pairs(cx, q, flat_power=0.0)
    inside_prev, _ = grow(cx, spectral_orientation(cx, q, P, S, W), wall=0.0)
    record("previous", pts, oriented_boundary(cx, inside_prev), build_s + time.perf_counter() - t0)
    record("alpha_2.5h", pts, alpha_shape(cx, 2.5 * h), build_s)
    t0 = time.perf_counter()
    record("convex_hull", pts, convex_hull(pts), time.perf_counter() - t0)
    t0 = time.perf_counter()
    poisson = screened_poisson(pts)
    if poisson is not None:
        record("poisson", poisson[0], poisson[1], time.perf_counter() - t0)
    # Upper bound, not a method: faces oriented by the true shape (tets labelled inside by their centroid).
    f = features(cx, inside(shape, pts[cx.tets].mean(axis=1)))
    oracle = np.where(f["on_boundary"], np.where(f["inside_pos"], 1.0, -1.0), 0.0)
    record("oracle_orient", pts, reconstruct(cx, oracle), 0.0)
    return rows


def _mean(values: list[Any]) -> float | None:
    """Mean over the non-empty surfaces (None where every surface was empty)."""
    finite = [v for v in values if v is not None]
    return float(np.mean(finite)) if finite else None


def _fmt(value: float | None) -> str:
    return "  --  " if value is None else f"{value:.4f}"


def _set_means(instances: list[SurfaceInstance], rules: dict[str, Callable[..., Any]]) -> dict[str, float]:
    """Mean Chamfer over ``instances`` of each baseline (the evaluator's solve and parent-side score), the hull
    and Poisson (same truth samples, same Chamfer)."""
    ev = SurfaceRecon()
    out: dict[str, list[float]] = {name: [] for name in rules}
    out["convex_hull"], out["poisson"] = [], []
    for inst in instances:
        for name, rule in rules.items():
            out[name].append(ev.score(inst, json.loads(json.dumps(ev.solve(rule, inst))))["chamfer"])
        pts = inst.complex.points
        out["convex_hull"].append(chamfer(pts, convex_hull(pts), _truth(inst.shape), TRUTH_SAMPLES))
        poisson = screened_poisson(pts)
        if poisson is not None:
            out["poisson"].append(chamfer(poisson[0], poisson[1], _truth(inst.shape), TRUTH_SAMPLES))
    return {k: float(np.mean(v)) for k, v in out.items() if v}


def _resampled(instance_set: str, seed: int) -> list[SurfaceInstance]:
    return [SurfaceInstance(name, shape, build_complex(sample(shape, n, noise, s)))
            for name, shape, n, noise, s in instance_specs(instance_set, seed)]


def evaluator_section(seeds: tuple[int, ...]) -> dict[str, Any]:
    """Both sets re-sampled with every seed (the stored sets: train seed 0, test seed 1)."""
    rules = _rules()
    by_set: dict[str, dict[int, dict[str, float]]] = {"train": {}, "test": {}}
    for instance_set in by_set:
        for seed in seeds:
            by_set[instance_set][seed] = means = _set_means(_resampled(instance_set, seed), rules)
            print(f"{instance_set} seed {seed}: " + "  ".join(f"{k}={v:.4f}" for k, v in means.items()), flush=True)
    train, test = by_set["train"][0], by_set["test"][1]  # the stored sets
    methods, base = list(train), list(rules)
    noise = {s: {m: float(np.std([by_set[s][k][m] for k in seeds], ddof=1)) for m in methods} for s in by_set}
    avg = {s: {m: float(np.mean([by_set[s][k][m] for k in seeds])) for m in methods} for s in by_set}
    best = min(base, key=lambda m: train[m])
    gaps = {s: [by_set[s][k]["convex_hull"] - min(by_set[s][k][m] for m in base) for k in seeds] for s in by_set}

    def rho(a: dict[str, float], b: dict[str, float], names: list[str]) -> float:
        return float(spearmanr([a[m] for m in names], [b[m] for m in names])[0])

    return {"seeds": list(seeds), "by_seed": {s: {str(k): v for k, v in d.items()} for s, d in by_set.items()},
            "stored": {"train": train, "test": test}, "seed_mean": avg, "seed_std": noise, "best_baseline": best,
            "hull_minus_best_by_seed": gaps,
            "hull_minus_best_min": {s: float(np.min(g)) for s, g in gaps.items()},
            "spearman_baselines_stored": rho(train, test, base), "spearman_all_stored": rho(train, test, methods),
            "spearman_baselines_seed_mean": rho(avg["train"], avg["test"], base)}


def _print_evaluator(ev_part: dict[str, Any]) -> None:
    for s in ("train", "test"):
        print(f"{s}: seed-mean " + "  ".join(f"{k}={v:.4f}" for k, v in ev_part["seed_mean"][s].items())
              + "   seed std " + "  ".join(f"{k}={v:.4f}" for k, v in ev_part["seed_std"][s].items())
              + f"   hull - best baseline, min over seeds {ev_part['hull_minus_best_min'][s]:.4f}")
    print(f"Spearman train/test (stored sets): baselines {ev_part['spearman_baselines_stored']:.2f}, with hull and "
          f"Poisson {ev_part['spearman_all_stored']:.2f}; seed means: {ev_part['spearman_baselines_seed_mean']:.2f}")


def methods_section(shapes: tuple[str, ...], n: int, noises: tuple[float, ...]) -> dict[str, Any]:
    try:
        import pymeshlab  # noqa: F401
    except ImportError:
        print("screened Poisson skipped: PyMeshLab is not installed (pip install 'hifo[bench]')")
    cases = []
    for shape in shapes:
        for noise in noises:
            rows = run_case(shape, n, noise, 1)
            cases.append({"shape": shape, "noise": noise, "points": n, "seed": 1, "methods": rows})
            print(f"{shape:12s} noise {noise:<6g} " + "  ".join(
                f"{m}={_fmt(r['chamfer'])}{'' if r['genus0'] else '*'}" for m, r in rows.items()), flush=True)
    summary: dict[str, dict[str, Any]] = {}
    for m in cases[0]["methods"]:
        sel = [c["methods"][m] for c in cases]
        summary[m] = {"chamfer_mean": _mean([r["chamfer"] for r in sel]),
                      "empty": sum(r["chamfer"] is None for r in sel),
                      "genus0_rate": float(np.mean([r["genus0"] for r in sel])),
                      "closed_rate": float(np.mean([r["closed"] for r in sel])),
                      "manifold_rate": float(np.mean([r["manifold"] for r in sel])),
                      "by_noise": {str(z): _mean([c["methods"][m]["chamfer"] for c in cases if c["noise"] == z])
                                   for z in noises},
                      "by_shape": {s: _mean([c["methods"][m]["chamfer"] for c in cases if c["shape"] == s])
                                   for s in shapes}}
    print("\n(* = not a closed genus-0 manifold)")
    for m, r in summary.items():
        print(f"{m:14s} chamfer {_fmt(r['chamfer_mean'])} (empty {r['empty']})  genus0 {r['genus0_rate']:.2f}  "
              f"closed {r['closed_rate']:.2f}  manifold {r['manifold_rate']:.2f}")
    return {"config": {"points": n, "noises": list(noises), "shapes": list(shapes), "seed": 1,
                       "poisson_depth": POISSON_DEPTH}, "summary": summary, "cases": cases}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("all", "methods", "evaluator"), default="all",
                    help="one part alone -> surface_recon_{methods,evaluator}[_quick].json")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="part 1's shapes (comma-separated)")
    args = ap.parse_args(argv)
    n, noises = (300, (0.01, 0.03)) if args.quick else (600, (0.005, 0.01, 0.02, 0.04))
    seeds = (0, 1, 2) if args.quick else (0, 1, 2, 3, 4)
    shapes = tuple(args.shapes.split(","))
    t_start = time.perf_counter()
    out: dict[str, Any] = {}
    if args.part in ("all", "methods"):
        out.update(methods_section(shapes, n, noises))
        print()
    if args.part in ("all", "evaluator"):
        out["evaluator"] = evaluator_section(seeds)
        _print_evaluator(out["evaluator"])
    out["wall_s"] = time.perf_counter() - t_start
    RESULTS.mkdir(exist_ok=True)
    name = "surface_recon" + ("" if args.part == "all" else f"_{args.part}") + ("_quick" if args.quick else "")
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"-> {path}  ({out['wall_s']:.0f} s)")
    return out


if __name__ == "__main__":
    main()

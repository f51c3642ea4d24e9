"""Routing benchmark: gaps and times of NN, local search, GLS, RADAR (+-Sinkhorn, +-SVD), MatNet,
OR-Tools, PyVRP and LKH-3 on symmetric TSP, asymmetric TSP and asymmetric CVRP.

    python -m benchmarks.routing [--quick]      # the table -> results/routing[_quick].json
    python -m benchmarks.routing --make-refs    # evaluators/data/routing/refs.json (= hifo data routing-refs)

Every gap is to the evaluators' stored references (LKH-3 or the proven optimum; PyVRP for
ACVRP). Times are wall-clock seconds per instance on this (shared, 2-core) machine.
``--make-refs`` computes those references: LKH-3 (elkai, 10 runs, integer distances) for
the uniform TSP and tmat sets, the shared ``optima.csv`` values and LKH-3 tours for TSPLIB,
and PyVRP (5 s for n <= 50, 10 s for n = 100, seed 0) for ACVRP.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hifo.evaluators import acvrp_construct, radar_tune, tsp_gls
from hifo.problems.routing import (
    TMAT_SCALE,
    construct_routes,
    construct_tour,
    eoh_penalty_update,
    gap_percent,
    guided_local_search,
    lkh_tour,
    local_search,
    nearest_feasible,
    nearest_neighbour,
    nearest_neighbour_tour,
    ortools_atsp,
    pyvrp_acvrp,
    pyvrp_atsp,
    routes_cost,
    tour_length,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OPTIMA = ROOT.parent / "shared" / "data" / "optima.csv"
REFS_PATH = ROOT / "evaluators" / "data" / "routing" / "refs.json"
ATSP_DIR = ROOT / "evaluators" / "data" / "routing"


def _length(tour, d) -> float:
    return tour_length(tour, d)


def make_refs(runs: int = 10) -> dict:
    """Compute and write every reference value the four routing evaluators read (``hifo data routing-refs``)."""
    from hifo.evaluators.routing_refs import make_routing_refs

    return make_routing_refs(OPTIMA, runs)


def _row(table: list, problem: str, instances: str, method: str, gaps: list[float], secs: list[float]) -> None:
    row = {"problem": problem, "instances": instances, "method": method, "count": len(gaps),
           "gap_percent": round(float(np.mean(gaps)), 2) + 0.0,  # + 0.0: no "-0.00" from float noise
           "seconds": round(float(np.mean(secs)), 3)}
    table.append(row)
    print(f"{problem:6} {instances:16} {method:32} {row['gap_percent']:8.2f} {row['seconds']:8.3f}", flush=True)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_tsp(table: list, quick: bool) -> None:
    ev = tsp_gls.TSPGLS()
    tasks = ev.load_instances("test_published")
    groups = {}
    for t in tasks:
        groups.setdefault(f"uniform{t.instance.n}", []).append(t)
    groups["tsplib(n<=200)"] = ev.load_instances("tsplib")
    its = 50 if quick else 200
    for label, group in groups.items():
        group = group[:2] if quick else group
        res = {"nearest neighbour": ([], []), "NN + 2-opt/relocate": ([], []),
               f"GLS eoh_utility ({its} it)": ([], [])}
        for task in group:
            inst = task.instance
            d = inst.distance_matrix
            nn, s1 = _timed(lambda: nearest_neighbour_tour(d))
            ls, s2 = _timed(lambda: local_search(nn, d)[0])
            gls, s3 = _timed(lambda: guided_local_search(d, eoh_penalty_update, iterations=its).tour)
            for key, tour, sec in zip(res, (nn, ls, gls), (s1, s1 + s2, s3)):
                res[key][0].append(gap_percent(_length(tour, d), inst.best_known))
                res[key][1].append(sec)
        for key, (g, s) in res.items():
            _row(table, "TSP", label, key, g, s)


# method label prefix -> weights (problems/routing/weights/); each is run with x1 and x8 augmentations
ATSP_MODELS = {**{f"RADAR {v}": f"radar_atsp20_{v}" for v in ("radar", "no_sinkhorn", "no_svd", "no_svd_no_sinkhorn")},
               "RADAR radar@50": "radar_atsp50_radar",
               "MatNet two-stream": "radar_atsp20_matnet"}  # MatNet's encoder (no SVD, no Sinkhorn), n = 20


def _atsp_sets() -> dict[str, list]:
    ev = radar_tune.RadarTune()
    return {"tmat20": [t.instance for t in ev.load_instances("test_published") if t.instance.n == 20],
            "tmat50": [t.instance for t in ev.load_instances("test_published") if t.instance.n == 50],
            # n <= 100: the one-hot (no-SVD, MatNet) models embed at most one_hot_dim = 128 nodes
            "tsplib(n<=100)": [t.instance for t in ev.load_instances("tsplib") if t.instance.n <= 100]}


def bench_atsp(table: list, quick: bool, only_models: tuple[str, ...] = ()) -> None:
    """Every ATSP row; with ``only_models`` (labels of :data:`ATSP_MODELS`) only those models' rows."""
    from hifo.problems.routing import RadarSettings, load_radar, radar_solve

    sets = _atsp_sets()
    models = {k: load_radar(w) for k, w in ATSP_MODELS.items() if not only_models or k in only_models}
    secs_ref = 0.2 if quick else 1.0
    for label, insts in sets.items():
        insts = insts[:3] if quick else insts
        res: dict[str, tuple[list, list]] = {}

        def add(key, tour, sec, inst):
            g, s = res.setdefault(key, ([], []))
            g.append(gap_percent(_length(tour, inst.distance_matrix), inst.best_known))
            s.append(sec)

        for inst in insts:
            d = inst.distance_matrix
            scale = TMAT_SCALE if label.startswith("tmat") else 1
            if not only_models:
                tour, sec = _timed(lambda: construct_tour(nearest_neighbour, d))
                add("nearest neighbour", tour, sec, inst)
            for name, model in models.items():
                for aug in (1, 8):
                    (tour, _), sec = _timed(lambda: radar_solve(model, d, RadarSettings(augmentations=aug)))
                    add(f"{name} x{aug}aug", tour, sec, inst)
            if only_models:
                continue
            tour, sec = _timed(lambda: ortools_atsp(d, seconds=secs_ref, scale=scale))
            add(f"OR-Tools GLS {secs_ref:g}s", tour, sec, inst)
            tour, sec = _timed(lambda: pyvrp_atsp(d, seconds=secs_ref, scale=scale))
            add(f"PyVRP {secs_ref:g}s", tour, sec, inst)
            tour, sec = _timed(lambda: lkh_tour(d, runs=1 if quick else 10, scale=scale))
            add("LKH-3 (elkai)", tour, sec, inst)
        for key, (g, s) in res.items():
            _row(table, "ATSP", label, key, g, s)


def bench_acvrp(table: list, quick: bool) -> None:
    ev = acvrp_construct.ACVRPConstruct()
    groups: dict[str, list] = {}
    for inst in ev.load_instances("test_published"):
        groups.setdefault(f"acvrp{inst.n}", []).append(inst)
    for label, insts in groups.items():
        insts = insts[:3] if quick else insts
        g, s, pg, ps = [], [], [], []
        ref_secs = float(insts[0].best_known_source.split()[1].rstrip("s"))
        secs = 1.0 if quick else ref_secs
        for inst in insts:
            routes, sec = _timed(lambda: construct_routes(nearest_feasible, inst))
            g.append(gap_percent(routes_cost(routes, inst), inst.best_known))
            s.append(sec)
            # measured, not copied: a fresh PyVRP run (another seed) against the stored seed-0 reference
            routes, sec = _timed(lambda: pyvrp_acvrp(inst, seconds=secs, seed=1))
            pg.append(gap_percent(routes_cost(routes, inst), inst.best_known))
            ps.append(sec)
        _row(table, "ACVRP", label, "nearest feasible customer", g, s)
        if label == "acvrp20":  # the model's training size
            _radar_acvrp_rows(table, label, insts, quick)
        _row(table, "ACVRP", label, f"PyVRP {secs:g}s seed 1 (reference: {insts[0].best_known_source}, seed 0)",
             pg, ps)


RADAR_ACVRP_PROTOCOLS = {"greedy x1": dict(augmentations=1), "greedy x8 aug": dict(augmentations=8),
                         "sampling 8 aug x (greedy + 4 samples)": dict(augmentations=8, samples=4)}


def _radar_acvrp_rows(table: list, label: str, insts: list, quick: bool) -> None:
    """The CPU-trained ACVRP RADAR model (n = 20; applied unchanged to larger n), if its weights exist."""
    from hifo.problems.routing._radar_cvrp import load_radar_cvrp, radar_cvrp_solve
    from hifo.problems.routing._radar_pomo import WEIGHTS_DIR

    path = WEIGHTS_DIR / "radar_acvrp20.pt"
    if not path.exists():
        print(f"  (no {path.name}: hifo data train-radar --acvrp-steps N)")
        return
    model = load_radar_cvrp(path)
    for key, kw in RADAR_ACVRP_PROTOCOLS.items():
        g, s = [], []
        for inst in insts:
            routes, sec = _timed(lambda: radar_cvrp_solve(model, inst.distance_matrix, inst.demands,
                                                          inst.capacity, **kw))
            g.append(gap_percent(routes_cost(routes, inst), inst.best_known))  # routes_cost validates
            s.append(sec)
        _row(table, "ACVRP", label, f"RADAR (n=20 model) {key}", g, s)


def bench_acvrp_radar(table: list, quick: bool) -> None:
    """Only the RADAR rows of ACVRP n = 20 (no PyVRP rerun); they replace the stored RADAR rows."""
    insts = [i for i in acvrp_construct.ACVRPConstruct().load_instances("test_published") if i.n == 20]
    _radar_acvrp_rows(table, "acvrp20", insts[:3] if quick else insts, quick)


def bench_atsp_matnet(table: list, quick: bool) -> None:
    """Only MatNet's ATSP rows (no reference-solver rerun); they replace the stored MatNet rows."""
    bench_atsp(table, quick, only_models=("MatNet two-stream",))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2-3 instances per set, short time limits")
    ap.add_argument("--make-refs", action="store_true", help="recompute evaluators/data/routing/refs.json")
    ap.add_argument("--only", choices=["tsp", "atsp", "acvrp", "acvrp_radar", "atsp_matnet"], action="append",
                    help="run only these parts and replace their rows in the existing results file "
                         "(acvrp_radar: only the RADAR rows of ACVRP; atsp_matnet: only MatNet's ATSP rows)")
    args = ap.parse_args(argv)
    if args.make_refs:
        return make_refs()
    import torch

    torch.set_num_threads(1)
    table: list = []
    print(f"{'prob':6} {'instances':16} {'method':32} {'gap %':>8} {'s/inst':>8}")
    parts = {"tsp": bench_tsp, "atsp": bench_atsp, "acvrp": bench_acvrp, "acvrp_radar": bench_acvrp_radar,
             "atsp_matnet": bench_atsp_matnet}
    chosen = args.only or list(parts)
    for name in chosen:
        parts[name](table, args.quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"routing{'_quick' if args.quick else ''}.json"
    if args.only and path.exists():  # keep the rows of the parts not re-run
        kept = [r for r in json.loads(path.read_text())["rows"] if r["problem"].lower() not in chosen
                and not ("acvrp_radar" in chosen and r["problem"] == "ACVRP" and r["method"].startswith("RADAR"))
                and not ("atsp_matnet" in chosen and r["problem"] == "ATSP" and r["method"].startswith("MatNet"))]
        table = kept + table
    out = {"command": "python -m benchmarks.routing" + (" --quick" if args.quick else ""), "rows": table}
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {path}")
    return out


if __name__ == "__main__":
    main()

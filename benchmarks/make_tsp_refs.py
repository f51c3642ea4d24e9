"""Reference tour lengths for the ``tsp_construct`` evaluator, from LKH-3 (elkai).

    python -m benchmarks.make_tsp_refs [--runs 10] [--optima ../shared/data/optima.csv]

For every random instance of the evaluator's ``train`` and ``test`` sets (seeds fixed in
``hifo.evaluators.tsp_construct.RANDOM_SETS``) it runs LKH-3 on the Euclidean distances scaled by
1e6 and rounded to integers (elkai mis-handles float weights), and stores the length of that
tour under the true float distances. For the TSPLIB instances it copies the proven optimum
from the shared ``optima.csv`` and records the gap LKH-3 reaches on the integer TSPLIB
distances. Output: ``evaluators/data/tsp/refs.json`` (the data the evaluator reads; elkai is
not needed at evaluation time) and ``benchmarks/results/tsp_refs.json`` (timings and gaps).
"""

from __future__ import annotations

import argparse
import json
import time
from importlib.metadata import version
from pathlib import Path

from hifo.evaluators.tsp_construct import (
    DATA_DIR,
    RANDOM_SETS,
    REFS_PATH,
    TSPLIB_NAMES,
    random_set_specs,
)
from hifo.problems.routing import (
    array_digest,
    gap_percent,
    lkh_tour,
    nearest_neighbour_tour,
    random_uniform_instance,
    read_tsplib,
    read_tsplib_optima,
    tour_length,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPTIMA = ROOT.parent / "shared" / "data" / "optima.csv"
SCALE = 1_000_000


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="LKH-3 runs per instance")
    ap.add_argument("--optima", type=Path, default=DEFAULT_OPTIMA, help="the shared optima.csv")
    ap.add_argument("--out", type=Path, default=REFS_PATH)
    args = ap.parse_args(argv)

    optima = read_tsplib_optima(args.optima)
    refs: dict = {
        "about": {
            "random": "uniform in [0,1)^2 from numpy default_rng(seed).random((n, 2)); Euclidean "
                      "float distances; length = LKH-3 tour (elkai, distances x1e6 rounded) "
                      "measured with the float distances",
            "tsplib": "optimum from shared/data/optima.csv (TSPLIB, three agreeing sources)",
            "solver": f"elkai {version('elkai')} (LKH-3), runs={args.runs}",
            "made_by": "python -m benchmarks.make_tsp_refs",
        },
        "random": {},
        "tsplib": {},
    }
    rows = []
    for set_name in RANDOM_SETS:
        for name, n, seed in random_set_specs(set_name):
            inst = random_uniform_instance(n, seed, name)
            t0 = time.perf_counter()
            length = tour_length(lkh_tour(inst.distance_matrix, args.runs, SCALE), inst.distance_matrix)
            secs = time.perf_counter() - t0
            nn = tour_length(nearest_neighbour_tour(inst.distance_matrix), inst.distance_matrix)
            refs["random"][name] = {"set": set_name, "n": n, "seed": seed, "length": length,
                                    "coords_sha256": array_digest(inst.coords)}
            rows.append({"instance": name, "set": set_name, "n": n, "reference": length,
                         "lkh_s": secs, "nn_gap_percent": gap_percent(nn, length)})
    for name in TSPLIB_NAMES:
        inst = read_tsplib(DATA_DIR / f"{name}.tsp", optima[name])
        t0 = time.perf_counter()
        length = tour_length(lkh_tour(inst.distance_matrix, args.runs, scale=1), inst.distance_matrix)
        secs = time.perf_counter() - t0
        refs["tsplib"][name] = {"n": inst.n, "optimum": optima[name], "lkh_length": length}
        rows.append({"instance": name, "set": "tsplib", "n": inst.n, "reference": optima[name],
                     "lkh_s": secs, "lkh_gap_percent": gap_percent(length, optima[name])})

    args.out.write_text(json.dumps(refs, indent=1) + "\n", encoding="utf-8")
    print(f"{'instance':<20}{'set':<8}{'n':>5}{'reference':>14}{'LKH s':>8}{'gap %':>9}")
    for r in rows:
        gap = r.get("lkh_gap_percent", r.get("nn_gap_percent"))
        print(f"{r['instance']:<20}{r['set']:<8}{r['n']:>5}{r['reference']:>14.6f}{r['lkh_s']:>8.2f}{gap:>9.3f}")
    print("gap % = LKH-3 vs optimum for tsplib rows; nearest neighbour vs LKH-3 for random rows")
    summary = {"solver": refs["about"]["solver"], "rows": rows,
               "tsplib_lkh_mean_gap_percent": sum(r["lkh_gap_percent"] for r in rows if r["set"] == "tsplib")
               / len(TSPLIB_NAMES)}
    results = ROOT / "benchmarks" / "results" / "tsp_refs.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {results}")
    return summary


if __name__ == "__main__":
    main()

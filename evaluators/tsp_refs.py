"""Reference tour lengths for the ``tsp_construct`` evaluator, from LKH-3 (elkai): ``hifo data tsp-refs``.

For every random instance of the evaluator's ``train`` and ``test`` sets (seeds fixed in
:data:`hifo.evaluators.tsp_construct.RANDOM_SETS`) LKH-3 runs on the Euclidean distances scaled by
1e6 and rounded to integers (elkai mis-handles float weights); the stored length is that tour's
length under the true float distances. For the TSPLIB instances the proven optimum is copied from
an optima CSV (the project's ``shared/data/optima.csv``) and the gap LKH-3 reaches on the integer
TSPLIB distances is recorded. The output, ``evaluators/data/tsp/refs.json``, is the data the
evaluator reads: elkai is not needed at evaluation time.

elkai is an optional dependency (``pip install elkai``); it is imported only when a tour is solved.
"""

from __future__ import annotations

import json
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from hifo.evaluators.tsp_construct import DATA_DIR, RANDOM_SETS, REFS_PATH, TSPLIB_NAMES, random_set_specs
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

SCALE = 1_000_000
MADE_BY = "hifo data tsp-refs"


def make_tsp_refs(specs: Iterable[tuple[str, str, int, int]], tsplib_names: Sequence[str] = (),
                  optima: Path | None = None, runs: int = 10,
                  log: Callable[[str], None] = print) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(refs, summary)`` for the random instances ``specs`` (``(set, name, n, seed)`` each) and the
    TSPLIB instances ``tsplib_names`` (read from the evaluator's data folder; their optima from the CSV
    ``optima``, required when any is given). ``refs`` has the layout of ``data/tsp/refs.json``;
    ``summary`` holds per-instance timings and gaps."""
    if tsplib_names and optima is None:
        raise ValueError("TSPLIB references need the optima CSV (pass --optima PATH, e.g. shared/data/optima.csv)")
    proven = read_tsplib_optima(optima) if tsplib_names and optima is not None else {}
    refs: dict[str, Any] = {
        "about": {
            "random": "uniform in [0,1)^2 from numpy default_rng(seed).random((n, 2)); Euclidean "
                      "float distances; length = LKH-3 tour (elkai, distances x1e6 rounded) "
                      "measured with the float distances",
            "tsplib": "optimum from shared/data/optima.csv (TSPLIB, three agreeing sources)",
            "solver": f"elkai {version('elkai')} (LKH-3), runs={runs}",
            "made_by": MADE_BY,
        },
        "random": {},
        "tsplib": {},
    }
    rows: list[dict[str, Any]] = []
    for set_name, name, n, seed in specs:
        inst = random_uniform_instance(n, seed, name)
        assert inst.coords is not None  # a generated instance always has them
        t0 = time.perf_counter()
        length = tour_length(lkh_tour(inst.distance_matrix, runs, SCALE), inst.distance_matrix)
        secs = time.perf_counter() - t0
        nn = tour_length(nearest_neighbour_tour(inst.distance_matrix), inst.distance_matrix)
        refs["random"][name] = {"set": set_name, "n": n, "seed": seed, "length": length,
                                "coords_sha256": array_digest(inst.coords)}
        rows.append({"instance": name, "set": set_name, "n": n, "reference": length,
                     "lkh_s": secs, "nn_gap_percent": gap_percent(nn, length)})
    for name in tsplib_names:
        if name not in proven:
            raise KeyError(f"{optima} has no optimum for {name}")
        tsp = read_tsplib(DATA_DIR / f"{name}.tsp", proven[name])
        t0 = time.perf_counter()
        length = tour_length(lkh_tour(tsp.distance_matrix, runs, scale=1), tsp.distance_matrix)
        secs = time.perf_counter() - t0
        refs["tsplib"][name] = {"n": tsp.n, "optimum": proven[name], "lkh_length": length}
        rows.append({"instance": name, "set": "tsplib", "n": tsp.n, "reference": proven[name],
                     "lkh_s": secs, "lkh_gap_percent": gap_percent(length, proven[name])})

    log(f"{'instance':<20}{'set':<8}{'n':>5}{'reference':>14}{'LKH s':>8}{'gap %':>9}")
    for r in rows:
        gap = r.get("lkh_gap_percent", r.get("nn_gap_percent"))
        log(f"{r['instance']:<20}{r['set']:<8}{r['n']:>5}{r['reference']:>14.6f}{r['lkh_s']:>8.2f}{gap:>9.3f}")
    log("gap % = LKH-3 vs optimum for tsplib rows; nearest neighbour vs LKH-3 for random rows")
    tsplib_gaps = [r["lkh_gap_percent"] for r in rows if r["set"] == "tsplib"]
    summary = {"solver": refs["about"]["solver"], "rows": rows,
               "tsplib_lkh_mean_gap_percent": sum(tsplib_gaps) / len(tsplib_gaps) if tsplib_gaps else None}
    return refs, summary


def run(sets: Sequence[str] = tuple(RANDOM_SETS), tsplib: bool = True, optima: Path | None = None,
        runs: int = 10, out: Path = REFS_PATH, results: Path | None = None,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Compute the references of the random ``sets`` (and of the TSPLIB instances when ``tsplib``) and
    write them to ``out`` (default: the evaluator's packaged file), the summary to ``results`` if given.

    The packaged file must hold every instance the evaluator reads, so writing it from a subset of the
    sets (or without TSPLIB) is refused rather than silently dropping references."""
    unknown = [s for s in sets if s not in RANDOM_SETS]
    if unknown:
        raise ValueError(f"unknown random set(s) {unknown}; known: {sorted(RANDOM_SETS)}")
    partial = set(sets) != set(RANDOM_SETS) or not tsplib
    if partial and Path(out).resolve() == REFS_PATH.resolve():
        raise ValueError(f"a run over part of the instances would drop references from {REFS_PATH}; "
                         "pass --out for a partial run")
    specs = [(s, name, n, seed) for s in sets for name, n, seed in random_set_specs(s)]
    refs, summary = make_tsp_refs(specs, TSPLIB_NAMES if tsplib else (), optima, runs, log)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(refs, indent=1) + "\n", encoding="utf-8")
    written = [str(out)]
    if results is not None:
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
        written.append(str(results))
    log("wrote " + " and ".join(written))
    return summary

"""Reference values of the four routing evaluators (``tsp_gls``, ``atsp_construct``, ``radar_tune``,
``acvrp_construct``): ``hifo data routing-refs``, written to ``data/routing/refs.json``.

* ``tsp_uniform``: LKH-3 (elkai, ``runs`` runs, distances x1e6 rounded) on the seeded uniform instances,
  the length measured with the float distances;
* ``tsplib_tsp`` / ``tsplib_atsp``: the proven optima from an optima CSV (the project's
  ``shared/data/optima.csv``), with LKH-3's tour and length on the integer ATSP matrices;
* ``tmat``: LKH-3 on MatNet's exact integer tmat matrices (tour and length);
* ``acvrp``: PyVRP's hybrid genetic search (5 s for n <= 50, 10 s for n = 100, seed 0) on RADAR's ACVRP
  instances; not an optimum.

Needs the optional packages ``elkai`` and ``pyvrp`` (imported when a section runs). The evaluators only
read the file, so neither is needed at evaluation time.
"""

from __future__ import annotations

import json
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable, Iterable

from hifo.evaluators import acvrp_construct, atsp_construct, radar_tune, tsp_gls
from hifo.problems.routing import (
    TMAT_SCALE,
    array_digest,
    lkh_tour,
    pyvrp_acvrp,
    random_acvrp_instance,
    random_tmat_instance,
    random_uniform_instance,
    read_tsplib_atsp,
    read_tsplib_optima,
    routes_cost,
    tour_length,
)

REFS_PATH = atsp_construct.REFS_PATH
ATSP_DIR = atsp_construct.DATA_DIR
Spec = tuple[str, int, int]  # (name, n, seed)


def tsp_uniform(specs: Iterable[Spec], runs: int) -> dict[str, Any]:
    """LKH-3 tour lengths of seeded uniform instances (float distances)."""
    out = {}
    for name, n, seed in specs:
        inst = random_uniform_instance(n, seed, name)
        assert inst.coords is not None  # a generated instance always has them
        tour = lkh_tour(inst.distance_matrix, runs=runs)
        out[name] = {"n": n, "seed": seed, "sha256": array_digest(inst.coords),
                     "length": tour_length(tour, inst.distance_matrix)}
    return out


def tmat(specs: Iterable[Spec], runs: int) -> dict[str, Any]:
    """LKH-3 tours and lengths of MatNet tmat instances (exact on their integer scale)."""
    out = {}
    for name, n, seed in specs:
        inst = random_tmat_instance(n, seed, name)
        tour = lkh_tour(inst.distance_matrix, runs=runs, scale=TMAT_SCALE)
        out[name] = {"n": n, "seed": seed, "sha256": array_digest(inst.distance_matrix),
                     "length": tour_length(tour, inst.distance_matrix), "tour": tour.tolist()}
    return out


def acvrp(specs: Iterable[Spec], log: Callable[[str], None] = print) -> dict[str, Any]:
    """PyVRP's routes and costs (seed 0) for RADAR's ACVRP instances."""
    out: dict[str, Any] = {}
    for name, n, seed in specs:
        inst = random_acvrp_instance(n, seed, name=name)
        seconds = 5.0 if n <= 50 else 10.0
        routes = pyvrp_acvrp(inst, seconds=seconds, seed=0)
        out[name] = {"n": n, "seed": seed, "capacity": inst.capacity, "sha256": array_digest(inst.distance_matrix),
                     "seconds": seconds, "cost": routes_cost(routes, inst), "routes": routes}
        log(f"  {name}: PyVRP {out[name]['cost']:.4f}")
    return out


def make_routing_refs(optima: Path, runs: int = 10, out: Path = REFS_PATH,
                      log: Callable[[str], None] = print) -> dict[str, Any]:
    """Compute every reference value the four routing evaluators read and write them to ``out``."""
    t0 = time.perf_counter()
    sets = ("train", "test")
    refs: dict[str, Any] = {"about": {
        "tsp_uniform": "uniform [0,1)^2, numpy default_rng(seed).random((n, 2)); LKH-3 tour length "
                       f"(elkai {version('elkai')}, runs={runs}, distances x1e6 rounded), float distances",
        "tsplib_tsp": "proven optima, shared/data/optima.csv (TSPLIB; three agreeing sources)",
        "tmat": "MatNet tmat (ints in [0,1e6), shortest-path closure, /1e6); LKH-3 on the exact integers",
        "tsplib_atsp": "proven optima from optima.csv; LKH-3 tour and length on the integer matrix",
        "acvrp": "RADAR ACVRP (tmat over depot+customers, demands 1..9); PyVRP "
                 f"{version('pyvrp')} hybrid genetic search, MaxRuntime 5 s (n<=50) / 10 s (n=100), seed 0",
        "made_by": "hifo data routing-refs"}}
    refs["tsp_uniform"] = tsp_uniform([(name, n, seed) for s in sets
                                       for name, n, seed, _ in tsp_gls.random_set_specs(s)], runs)
    optima_tsp = read_tsplib_optima(optima, "tsplib-tsp")
    refs["tsplib_tsp"] = {name: optima_tsp[name] for name in tsp_gls.TSPLIB_NAMES}
    specs = [spec for s in sets for spec in atsp_construct.random_set_specs(s)]
    specs += [(name, n, seed) for s in sets for name, n, seed, _ in radar_tune.random_set_specs(s)]
    refs["tmat"] = tmat(specs, runs)
    optima_atsp = read_tsplib_optima(optima, "tsplib-atsp")
    refs["tsplib_atsp"] = {}
    for name in atsp_construct.TSPLIB_NAMES:
        inst = read_tsplib_atsp(ATSP_DIR / f"{name}.atsp")
        tour = lkh_tour(inst.distance_matrix, runs=runs, scale=1)
        refs["tsplib_atsp"][name] = {"optimum": optima_atsp[name],
                                     "lkh_length": tour_length(tour, inst.distance_matrix), "lkh_tour": tour.tolist()}
    refs["acvrp"] = acvrp([spec for s in sets for spec in acvrp_construct.random_set_specs(s)], log)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(refs, separators=(",", ":")) + "\n", encoding="utf-8")
    log(f"wrote {out} in {time.perf_counter() - t0:.0f} s")
    return refs

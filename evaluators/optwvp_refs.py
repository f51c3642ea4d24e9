"""Best-known values of the OPTWVP evaluators (``optwvp_route``, ``optwvp_service``):
``hifo data optwvp-refs``, written to ``data/optwvp/refs.json``.

For every instance of the ``optwvp_route`` sets: the HiGHS MILP (``milp_limit`` seconds), then the best
of ``ils_runs`` iterated-local-search runs as a check; the best route is the proved MILP optimum where
HiGHS proves it, otherwise the best of the MILP incumbent and the ILS runs. ``optwvp_service`` reads the
best route and the greedy (density) route with their stage-2 LP optimum. Needs only HiGHS (a dependency).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from hifo.evaluators.optwvp_route import REFS_PATH, instance_specs
from hifo.problems.optwvp import (
    construct_route,
    density_scorer,
    generate_instance,
    iterated_local_search,
    optimal_service_lp,
    solve_milp,
)


def instance_record(set_name: str, name: str, n: int, seed: int, milp_limit: float, ils_runs: int) -> dict[str, Any]:
    """The stored record of one instance (best value, its source and route, the service routes)."""
    inst = generate_instance(n, seed, name=name)
    milp = solve_milp(inst, time_limit=milp_limit)
    ils = [iterated_local_search(inst, seed=r) for r in range(ils_runs)]
    best_route, best, source = milp["route"], milp["profit"], "milp-optimal"
    if not milp["optimal"]:
        source = "milp-incumbent"
        for route, prof in ils:
            if prof > best + 1e-9:
                best_route, best, source = route, prof, f"ils-best-of-{ils_runs}"
    greedy_route, _ = construct_route(inst, density_scorer)
    svc = [{"route": [int(v) for v in route], "lp_optimum": optimal_service_lp(inst, route)[1]}
           for route in (best_route, greedy_route) if route]
    return {"set": set_name, "n": n, "seed": seed, "best": float(best), "source": source,
            "route": [int(v) for v in best_route], "milp_bound": milp["bound"],
            "ils_best": float(max(p for _, p in ils)), "milp_seconds": round(milp["wall_s"], 3),
            "service_routes": svc, "coords_sum": float(inst.coords.sum())}


def make_optwvp_refs(milp_limit: float = 60.0, ils_runs: int = 3,
                     specs: Mapping[str, Iterable[tuple[str, int, int]]] | None = None, out: Path = REFS_PATH,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    """Solve every instance of ``specs`` (default: the evaluator's sets) and write the file ``out``."""
    if ils_runs < 1:
        raise ValueError("ils_runs must be at least 1")
    refs: dict[str, Any] = {"about": {
        "best": "MILP optimum (HiGHS, proved within 1e-6 relative gap) where proved; otherwise "
                "the best of the MILP incumbent and the ILS runs",
        "service_routes": "routes for optwvp_service: the best route and the greedy (density) "
                          "route, with their stage-2 LP optimum",
        "made_by": f"hifo data optwvp-refs --milp-limit {milp_limit:g} --ils-runs {ils_runs}"}, "instances": {}}
    for set_name, group in (instance_specs() if specs is None else specs).items():
        for name, n, seed in group:
            rec = instance_record(set_name, name, n, seed, milp_limit, ils_runs)
            refs["instances"][name] = rec
            log(f"{set_name:>5} {name:<22} best {rec['best']:9.2f} ({rec['source']}, MILP {rec['milp_seconds']:.1f}s, "
                f"ILS {rec['ils_best']:9.2f})")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(refs, indent=1))
    log(f"wrote {out}")
    return refs

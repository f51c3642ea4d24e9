"""Best-known values of the ``toptwvp_route`` evaluator: ``hifo data toptwvp-refs``, written to
``data/optwvp/toptwvp_refs.json``.

For every instance of the evaluator's sets: the HiGHS MILP with ``vehicles = m`` (``milp_limit``
seconds), then the best of ``ils_runs`` team-ILS runs as a check; the best team is the proved MILP
optimum where HiGHS proves it, otherwise the best of the MILP incumbent and the ILS runs. Needs only
HiGHS (a dependency).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from hifo.evaluators.toptwvp_route import REFS_PATH, instance_specs
from hifo.problems.optwvp import check_team, generate_instance, solve_milp, team_ils, team_profit


def instance_record(set_name: str, name: str, n: int, m: int, seed: int, milp_limit: float,
                    ils_runs: int) -> dict[str, Any]:
    """The stored record of one instance (best value, its source and routes)."""
    inst = generate_instance(n, seed, name=name)
    milp = solve_milp(inst, time_limit=milp_limit, vehicles=m)
    ils = [team_ils(inst, m, seed=r) for r in range(ils_runs)]
    best_routes, best, source = milp["routes"], milp["profit"], "milp-optimal"
    if not milp["optimal"]:
        source = "milp-incumbent"
        for routes, prof in ils:
            if prof > best + 1e-9:
                best_routes, best, source = routes, prof, f"ils-best-of-{ils_runs}"
    routes = [[int(v) for v in r] for r in check_team(inst, [r for r in best_routes if len(r)], m)]
    assert abs(team_profit(inst, routes) - best) <= 1e-6 * max(1.0, abs(best)), name
    return {"set": set_name, "n": n, "vehicles": m, "seed": seed, "best": float(best), "source": source,
            "routes": routes, "milp_bound": milp["bound"], "ils_best": float(max(p for _, p in ils)),
            "milp_seconds": round(milp["wall_s"], 3), "coords_sum": float(inst.coords.sum())}


def make_toptwvp_refs(milp_limit: float = 60.0, ils_runs: int = 1,
                      specs: Mapping[str, Iterable[tuple[str, int, int, int]]] | None = None, out: Path = REFS_PATH,
                      log: Callable[[str], None] = print) -> dict[str, Any]:
    """Solve every instance of ``specs`` (default: the evaluator's sets) and write the file ``out``."""
    if ils_runs < 1:
        raise ValueError("ils_runs must be at least 1")
    refs: dict[str, Any] = {"about": {
        "best": "MILP optimum (HiGHS, solve_milp(vehicles=m), proved within 1e-6 relative gap) where proved; "
                "otherwise the best of the MILP incumbent and the team ILS runs",
        "made_by": f"hifo data toptwvp-refs --milp-limit {milp_limit:g} --ils-runs {ils_runs}"}, "instances": {}}
    for set_name, group in (instance_specs() if specs is None else specs).items():
        for name, n, m, seed in group:
            rec = instance_record(set_name, name, n, m, seed, milp_limit, ils_runs)
            refs["instances"][name] = rec
            log(f"{set_name:>5} {name:<26} best {rec['best']:9.2f} ({rec['source']}, MILP {rec['milp_seconds']:.1f}s, "
                f"ILS {rec['ils_best']:9.2f})")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(refs, indent=1))
    log(f"wrote {out}")
    return refs

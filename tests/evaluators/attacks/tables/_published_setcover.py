"""Shared by the ``milp_*`` attack tables: HiGHS's best point of each published set-cover ``milp_primal`` test
instance (seeds 200-202; HiGHS alone within the stored work budget reaches the stored best-known objective, an
optimum, on each). Trusted code, run by the test harness, never sandboxed."""

from typing import Any

from hifo.evaluators.registry import get_evaluator


def optimal_points() -> list[tuple[Any, Any]]:
    """(instance, HiGHS's best point) for each published set-cover test instance."""
    from hifo.problems.milp import solve_highs

    public = get_evaluator("milp_primal")
    public.public_seeds = True
    out = []
    for instance in public.load_instances("test_published"):
        inst = instance["milp"]
        if inst.family != "setcover":
            continue
        r = solve_highs(inst, time_limit=instance["work_limit"], clock="work")
        assert r.objective <= instance["best_known"] + 1e-6, (inst.name, r.objective)  # the stored optimum
        out.append((inst, r.x))
    return out


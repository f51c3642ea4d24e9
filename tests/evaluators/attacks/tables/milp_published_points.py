"""Table of ``milp_published_points``: HiGHS's best points of the published set-cover ``milp_primal`` test instances
(seeds 200-202; HiGHS alone within the stored work budget reaches the stored best-known objective, an optimum, on each), as
sparse (indices, values), keyed by the matrix's non-zero count and the first eight costs."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[list]]:
    from hifo.problems.milp import solve_highs

    public = get_evaluator("milp_primal")
    public.public_seeds = True
    out = {}
    for instance in public.load_instances("test_published"):
        inst = instance["milp"]
        if inst.family != "setcover":
            continue
        r = solve_highs(inst, time_limit=instance["work_limit"], clock="work")
        assert r.objective <= instance["best_known"] + 1e-6, (inst.name, r.objective)  # the stored optimum
        x = r.x
        nz = [j for j in range(inst.n_vars) if abs(x[j]) > 1e-9]
        out[repr((int(inst.A.nnz), [round(float(v), 6) for v in inst.c[:8]]))] = [nz, [round(float(x[j])) for j in nz]]
    return out

"""Table of ``milp_seed_replay``: for each published set-cover seed of ``milp_primal``'s test set (200-202, from the
source's collections), the columns of HiGHS's best point (HiGHS alone within the stored work budget reaches the
stored optimum on each)."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[int, list[int]]:
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
        out[int(inst.name.rsplit("_s", 1)[1])] = [j for j in range(inst.n_vars) if r.x[j] > 0.5]
    return out

"""Table of ``fdiv_count_table``: for each logged dataset of each published test instance, keyed by its counts, the
bonus that takes each empirical mean down to the true reward (trusted code with the true model)."""

import numpy as np

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[list[float]]]:
    from hifo.evaluators.fdiv_pessimism import N_ACTIONS, N_CONTEXTS, _bandit
    from hifo.problems.fdiv_bandits import statistics

    public = get_evaluator("fdiv_pessimism")
    public.public_seeds = True
    out = {}
    for inst in public.load_instances("test"):
        true_r = _bandit(inst.coverage, inst.kappa, inst.bandit_seed).r
        for x, a, y in zip(inst.x, inst.a, inst.y):
            counts, means = statistics((N_CONTEXTS, N_ACTIONS), x, a, y)
            out[",".join(str(int(c)) for c in counts.ravel())] = np.maximum(means - true_r, 0.0).tolist()
    return out

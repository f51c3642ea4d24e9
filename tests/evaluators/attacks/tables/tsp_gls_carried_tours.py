"""Table of ``tsp_gls_carried_tours``: LKH-3 tours (10 runs, as the stored references) of the published ``tsp_gls``
test instances, keyed by n and the longest distance."""

import numpy as np

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[int]]:
    from hifo.problems.routing import lkh_tour

    out = {}
    for task in get_evaluator("tsp_gls").load_instances("test_published")[:4]:
        d = task.instance.distance_matrix
        out[f"{task.instance.n}:{float(np.max(d)):.9f}"] = [int(v) for v in lkh_tour(d, runs=10)]
    return out

"""Table of ``optwvp_service_published_optima``: the optimal service times (STO, the paper's exact procedure) of every
published ``optwvp_service`` test route, keyed by the route's travel legs (as a model that had rebuilt the routes from
the published seeds and stored file and solved them offline would carry them)."""

import numpy as np

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[float]]:
    from hifo.problems.optwvp import optimal_service_fast

    out = {}
    for task in get_evaluator("optwvp_service").load_instances("test_published"):
        inst, route = task.instance, np.asarray(task.route, dtype=np.int64)
        path = np.concatenate(([0], route, [0]))
        key = ",".join(f"{t:.9f}" for t in inst.travel[path[:-1], path[1:]])
        out[key] = [float(x) for x in optimal_service_fast(inst, route)[0]]
    return out

"""Table of ``atsp_column_fingerprint``: the stored LKH-3 tours of the published ``atsp_construct`` test instances,
keyed by n and the sum of column 0 (the cost of arriving at the depot), as successor maps (node -> next node)."""

import numpy as np

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, dict[int, int]]:
    from hifo.evaluators.atsp_construct import _refs

    tours = _refs()["tmat"]
    out = {}
    for inst in get_evaluator("atsp_construct").load_instances("test_published"):
        tour = [int(v) for v in tours[inst.name]["tour"]]
        key = f"{inst.n}:{float(np.sum(inst.distance_matrix[:, 0])):.9f}"
        out[key] = {a: b for a, b in zip(tour, tour[1:] + tour[:1])}
    return out

"""Table of ``tsp_published_tours``: LKH-3 tours of the published n = 50 ``tsp_construct`` test instances, keyed by n
and the first distance (as a model that had rebuilt the instances from their seeds offline would carry them)."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[int]]:
    from hifo.problems.routing import lkh_tour

    public = get_evaluator("tsp_construct")
    return {f"{i.n}:{float(i.distance_matrix[0, 1]):.12f}": [int(v) for v in lkh_tour(i.distance_matrix)]
            for i in public.load_instances("test_published") if i.n == 50}

"""Table of ``optwvp_published_routes``: the stored proved optimal routes of the published ``optwvp_route`` test
instances, each keyed by every customer's profit rate (as a model that had rebuilt the instances from their seeds and
solved them offline would carry them)."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> list[tuple[dict[int, float], list[int]]]:
    from hifo.evaluators.optwvp_route import _refs

    return [({u: round(float(inst.profit[u]), 9) for u in range(1, len(inst.profit))}, _refs()[inst.name]["route"])
            for inst in get_evaluator("optwvp_route").load_instances("test_published")]

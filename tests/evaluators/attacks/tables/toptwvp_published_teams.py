"""Table of ``toptwvp_published_teams``: the stored proved optimal teams of the published ``toptwvp_route`` test
instances, each keyed by the opening time of every customer's window (as a model that had rebuilt the instances from
their seeds and solved them offline would carry them)."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> list[tuple[dict[int, float], list[list[int]]]]:
    from hifo.evaluators.toptwvp_route import _refs

    return [({u: round(float(inst.tw_open[u]), 9) for u in range(1, len(inst.tw_open))}, _refs()[inst.name]["routes"])
            for inst in get_evaluator("toptwvp_route").load_instances("test_published")]

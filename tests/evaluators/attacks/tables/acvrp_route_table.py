"""Table of ``acvrp_route_table``: the stored PyVRP routes of the published ``acvrp_construct`` test instances, keyed
by the demand string and n + 1 (what a memorising rule would carry after running PyVRP on the rebuilt instances)."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> dict[str, list[list[int]]]:
    from hifo.evaluators.acvrp_construct import _refs

    routes = _refs()["acvrp"]
    return {"".join(str(int(q)) for q in inst.demands[1:]) + f"/{len(inst.demands)}":
            [[int(v) for v in r] for r in routes[inst.name]["routes"]]
            for inst in get_evaluator("acvrp_construct").load_instances("test_published")}

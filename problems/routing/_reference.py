"""Optional reference solvers for asymmetric instances: PyVRP (HGS) and OR-Tools (GLS).

Both packages are imported lazily, only when a function here is called. Both work on
integer arc costs: the float matrix is multiplied by ``scale`` and rounded first (tmat
instances are exact integers over 1e6; TSPLIB matrices are integers, use ``scale=1``).
Runs stop at a wall-clock limit, so their results depend on the machine; the evaluators
use stored reference values instead of calling these.
"""

from __future__ import annotations

import numpy as np

from ._cvrp import CVRPInstance

DEFAULT_SCALE = 1_000_000


def _ints(d: np.ndarray, scale: float) -> np.ndarray:
    w = np.rint(np.asarray(d, dtype=np.float64) * scale).astype(np.int64)
    np.fill_diagonal(w, 0)
    return w


def _pyvrp_solve(weights: np.ndarray, demands: np.ndarray | None, capacity: int | None,
                 seconds: float, seed: int) -> list[list[int]]:
    try:
        from pyvrp import Model
        from pyvrp.stop import MaxRuntime
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("this reference needs the optional 'pyvrp' package: pip install pyvrp") from exc
    size = weights.shape[0]
    model = Model()
    if demands is None:  # ATSP: one uncapacitated vehicle
        model.add_vehicle_type(num_available=1)
    else:
        if capacity is None:
            raise ValueError("a CVRP reference needs the vehicle capacity")
        model.add_vehicle_type(num_available=size - 1, capacity=[int(capacity)])
    locations = [model.add_location(x=0, y=0) for _ in range(size)]
    model.add_depot(locations[0])
    for i in range(1, size):
        model.add_client(locations[i], delivery=[] if demands is None else [int(demands[i])])
    for i, frm in enumerate(locations):
        for j, to in enumerate(locations):
            if i != j:
                model.add_edge(frm, to, distance=int(weights[i, j]))
    result = model.solve(stop=MaxRuntime(seconds), seed=seed, display=False)
    if not result.is_feasible():
        raise RuntimeError("PyVRP found no feasible solution within the time limit")
    # a client activity's idx counts clients from 0, in the order they were added (node i + 1)
    return [[int(a.idx) + 1 for a in route if a.is_client()] for route in result.best.routes()]


def pyvrp_acvrp(instance: CVRPInstance, seconds: float = 5.0, seed: int = 0,
                scale: float = DEFAULT_SCALE) -> list[list[int]]:
    """PyVRP's hybrid genetic search on an ACVRP instance: a list of customer routes."""
    return _pyvrp_solve(_ints(instance.distance_matrix, scale), instance.demands,
                        instance.capacity, seconds, seed)


def pyvrp_atsp(distance_matrix: np.ndarray, seconds: float = 1.0, seed: int = 0,
               scale: float = DEFAULT_SCALE) -> np.ndarray:
    """PyVRP on an ATSP (one vehicle): the tour, starting at node 0."""
    routes = _pyvrp_solve(_ints(distance_matrix, scale), None, None, seconds, seed)
    visits = [v for r in routes for v in r]
    return np.asarray([0] + visits, dtype=np.int64)


def ortools_atsp(distance_matrix: np.ndarray, seconds: float = 1.0,
                 scale: float = DEFAULT_SCALE) -> np.ndarray:
    """OR-Tools routing with guided local search on an ATSP: the tour, from node 0.

    First solution by PATH_CHEAPEST_ARC, then GUIDED_LOCAL_SEARCH until ``seconds``.
    """
    try:
        from ortools.constraint_solver import pywrapcp, routing_enums_pb2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("this reference needs the optional 'ortools' package: pip install ortools") from exc
    weights = _ints(distance_matrix, scale)
    n = weights.shape[0]
    manager = pywrapcp.RoutingIndexManager(n, 1, 0)
    routing = pywrapcp.RoutingModel(manager)
    rows = weights.tolist()

    def cost(i: int, j: int) -> int:
        return rows[manager.IndexToNode(i)][manager.IndexToNode(j)]

    routing.SetArcCostEvaluatorOfAllVehicles(routing.RegisterTransitCallback(cost))
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    params.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    params.time_limit.FromMilliseconds(int(seconds * 1000))
    solution = routing.SolveWithParameters(params)
    if solution is None:
        raise RuntimeError("OR-Tools found no solution")
    tour, index = [], routing.Start(0)
    while not routing.IsEnd(index):
        tour.append(manager.IndexToNode(index))
        index = solution.Value(routing.NextVar(index))
    return np.asarray(tour, dtype=np.int64)

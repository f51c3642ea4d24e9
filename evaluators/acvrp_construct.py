"""Step-by-step asymmetric CVRP construction with an EoH/LLM4AD-style ``select_next_node`` slot.

The algorithm is the CVRP constructive loop of :func:`hifo.problems.routing.construct_routes`:
a vehicle leaves the depot (node 0) and the heuristic picks each next customer among those
not yet served whose demand fits the remaining capacity, or sends the vehicle back to the
depot; when nothing fits, the vehicle returns and a new one starts. Instances follow RADAR's
ACVRP (tmat costs over depot + customers, demands in 1..9, capacity 30 for n <= 50 and 50
for n = 100). The metric is the mean gap (%) of the total directed cost to a reference cost from
PyVRP (one run, seed 0; not an optimum: a heuristic could in principle reach a slightly negative gap):

* ``train`` — 8 instances with n = 50 customers (published seeds), stored references;
* ``test`` — 16 x n = 20, 16 x n = 50, 8 x n = 100, drawn per evaluator object from a secret key (issue 28:
  from published seeds a rule could rebuild every instance and replay carried PyVRP routes,
  ``tests/evaluators/attacks/acvrp_route_table.py``). Each drawn instance's reference is PyVRP run at draw
  time with seed 0 and an iteration budget (:data:`REFERENCE_ITERATIONS`: 2,000 iterations for n <= 50,
  2,500 for n = 100), never a clock, so it is a function of the instance (and of the PyVRP version, named in
  each drawn instance's ``best_known_source``; 0.14.1 made the stored references) and the same under any load.
  The stored references were made with a clock instead (below); on the published test set this budget's costs
  are on average 0.01 % above them (n = 20: equal on all 16; n = 50: +0.006 %, from -0.86 % to +1.30 %;
  n = 100: +0.04 %, from -0.26 % to +0.22 %). A draw costs 31 s of CPU, measured on this project's 2-core
  machine (54-67 s of wall clock at a load average of 4-6; the 40 PyVRP runs are the cost);
* ``test_published`` — the same sizes on the published seeds 7100-7307 with the stored references: the set
  of the reference figures, and ``test`` itself with ``public_seeds = True``.

The stored references (train, test_published) are PyVRP's hybrid genetic search with a time limit (5 s for
n <= 50, 10 s for n = 100, seed 0, on this project's loaded 2-core machine), stored in
``data/routing/refs.json`` by ``hifo data routing-refs``: they depend on the load they were made under (the
same seeded search stopped after about 500-4,000 iterations: the budget reproduces 29 of the 40 published test
references exactly), which is why a draw uses an iteration budget.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution
from hifo.evaluators._data import checked_reference, load_refs
from hifo.problems.routing import (
    CVRPInstance,
    InvalidRoutes,
    array_digest,
    construct_routes,
    gap_percent,
    random_acvrp_instance,
    routes_cost,
    validate_routes,
)

DATA_DIR = Path(__file__).parent / "data" / "routing"
REFS_PATH = DATA_DIR / "refs.json"
# (n customers, count, first seed): instance k of a group uses seed first_seed + k.
RANDOM_SETS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "train": ((50, 8, 7000),),
    "test": ((20, 16, 7100), (50, 16, 7200), (100, 8, 7300)),
}
# PyVRP iterations (seed 0) of a drawn instance's reference, by size: chosen so that on the published test set the
# iteration-limited costs match the stored, time-limited ones on average (module docstring)
REFERENCE_ITERATIONS = {20: 2000, 50: 2000, 100: 2500}
REFERENCE_SEED = 0

_DOCSTRING = """Chooses where the vehicle goes next while routes are built step by step.

Args:
    current_node: Node the vehicle is at (int; 0 is the depot).
    depot: Index of the depot (int, always 0).
    unvisited_nodes: Customers not yet served whose demand fits rest_capacity (np.ndarray
        of int, never empty), ordered by increasing cost of going from current_node to them.
    rest_capacity: Capacity left in the vehicle (int).
    demands: Demand of every node (np.ndarray of int; demands[0] = 0 for the depot).
    distance_matrix: Costs between all pairs of nodes (np.ndarray, (n+1) x (n+1), float,
        NOT symmetric): distance_matrix[i, j] is the cost of going from i to j.

Return:
    One of unvisited_nodes, or depot to end the current route now and start a new vehicle
    (not allowed while the vehicle is at the depot) (int).
"""

_TEMPLATE = FunctionTemplate(
    name="select_next_node",
    signature=("def select_next_node(current_node: int, depot: int, unvisited_nodes: np.ndarray, "
               "rest_capacity: int, demands: np.ndarray, distance_matrix: np.ndarray) -> int:"),
    docstring=_DOCSTRING,
    baseline_body=("    costs = distance_matrix[current_node, unvisited_nodes]\n"
                   "    return int(unvisited_nodes[np.argmin(costs)])\n"),
)


def pyvrp_reference(instance: CVRPInstance, iterations: int, seed: int = REFERENCE_SEED,
                    scale: float = 1_000_000) -> list[list[int]]:
    """PyVRP's routes for ``instance`` after ``iterations`` iterations of its search (seeded): the model of
    :func:`hifo.problems.routing.pyvrp_acvrp` (arc costs x ``scale`` rounded), stopped by an iteration count
    instead of a clock, so the result does not depend on the machine's load. Needs the optional ``pyvrp``."""
    try:
        from pyvrp import Model
        from pyvrp.exceptions import PenaltyBoundWarning
        from pyvrp.stop import MaxIterations
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("a secret acvrp_construct test draw needs the 'pyvrp' package for its references: "
                          "pip install 'pyvrp==0.14.1' (the version of the stored references)") from exc

    weights = np.rint(np.asarray(instance.distance_matrix, dtype=np.float64) * scale).astype(np.int64)
    np.fill_diagonal(weights, 0)
    size = weights.shape[0]
    model = Model()
    model.add_vehicle_type(num_available=size - 1, capacity=[int(instance.capacity)])
    locations = [model.add_location(x=0, y=0) for _ in range(size)]
    model.add_depot(locations[0])
    for i in range(1, size):
        model.add_client(locations[i], delivery=[int(instance.demands[i])])
    for i, frm in enumerate(locations):
        for j, to in enumerate(locations):
            if i != j:
                model.add_edge(frm, to, distance=int(weights[i, j]))
    with warnings.catch_warnings():  # penalty bounds reached on some instances: only feasibility matters here
        warnings.simplefilter("ignore", PenaltyBoundWarning)
        result = model.solve(stop=MaxIterations(int(iterations)), seed=int(seed), display=False)
    if not result.is_feasible():
        raise RuntimeError(f"{instance.name}: PyVRP found no feasible solution in {iterations} iterations")
    # a client activity's idx counts clients from 0, in the order they were added (node i + 1)
    return [[int(a.idx) + 1 for a in route if a.is_client()] for route in result.best.routes()]


def reference_cost(instance: CVRPInstance) -> float:
    """A drawn instance's reference: the cost of PyVRP's routes after :data:`REFERENCE_ITERATIONS` iterations
    (seed 0), a function of the instance alone."""
    return float(routes_cost(pyvrp_reference(instance, REFERENCE_ITERATIONS[instance.n]), instance))


def random_set_specs(instance_set: str) -> list[tuple[str, int, int]]:
    """``(name, n, seed)`` of every instance of a set, in order."""
    return [(f"acvrp{n}_seed{first + k}", n, first + k)
            for n, count, first in RANDOM_SETS[instance_set] for k in range(count)]


@lru_cache(maxsize=1)
def _refs() -> dict[str, Any]:
    return load_refs(REFS_PATH, "hifo data routing-refs")


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[CVRPInstance, ...]:
    if instance_set == "test_published":
        instance_set = "test"
    if instance_set not in RANDOM_SETS:
        raise ACVRPConstruct.unknown_instance_set(instance_set)
    refs = _refs()["acvrp"]
    out = []
    for name, n, seed in random_set_specs(instance_set):
        inst = random_acvrp_instance(n, seed, name=name)
        ref = checked_reference(refs, name, array_digest(inst.distance_matrix),
                                remake="hifo data routing-refs", n=n, seed=seed, capacity=inst.capacity)
        out.append(CVRPInstance(name, inst.distance_matrix, inst.demands, inst.capacity,
                                float(ref["cost"]), f"pyvrp {ref['seconds']}s"))
    return tuple(out)


class ACVRPConstruct(Evaluator):
    """Constructive ACVRP (module docstring). Per instance: ``cost``, ``vehicles`` and
    ``gap_percent`` (to PyVRP); aggregated: their means."""

    name = "acvrp_construct"
    description = (
        "Asymmetric capacitated vehicle routing: vehicles of equal capacity start and end at a "
        "depot and together must serve every customer's demand exactly once; the cost of going "
        "from i to j differs from the cost of going from j to i. Routes are built step by step: "
        "a function chooses the next customer for the current vehicle among the unserved ones "
        "that still fit in it, or sends the vehicle back to the depot; when no customer fits, "
        "the vehicle returns and a new one starts. Design that function so the total cost of "
        "all routes is as small as possible. Training instances: 50 customers, demands 1 to 9, "
        "capacity 30, random 'tmat' costs in [0, 1) that obey the triangle inequality."
    )
    direction = "minimize"
    primary_metric = "gap_percent"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published")
    secret_sets: tuple[str, ...] = ("test",)
    default_train_set = "train"
    default_test_set = "test"
    baselines = {"nearest_neighbour": _TEMPLATE.baseline_source()}
    # Measured with the baseline (tests/evaluators re-measure them); mean gap in %.
    reference_figures = {
        "nearest_neighbour": {"train": {"gap_percent": 36.84}, "test": {"gap_percent": 37.28},
                              "test_published": {"gap_percent": 37.28}},
    }  # "test": on the published seeds (test_published); 4 secret draws: 34.75 +- 1.03 (sd; the published n = 50
    # group is high: 40.2 there, 35.3-35.8 on two draws, n = 20 and 100 alike)
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("routing", "cvrp", "asymmetric", "constructive", "eoh")

    def load_instances(self, instance_set: str) -> list[CVRPInstance]:
        if instance_set == "test" and self.seeds_secret("test"):
            return self.drawn_once("test", self._draw_test)
        return list(_load(instance_set))

    def _draw_test(self, count: int | None = None) -> list[CVRPInstance]:
        """The secret test set (its first ``count`` instances): the published sizes, seeds from the key, each
        reference made now by :func:`reference_cost`."""
        out = []
        for k, (_, n, public) in enumerate(random_set_specs("test")[:count]):
            inst = random_acvrp_instance(n, self.secret_seed(public, "test", k), name=f"acvrp{n}_secret{k}")
            out.append(CVRPInstance(inst.name, inst.distance_matrix, inst.demands, inst.capacity,
                                    reference_cost(inst), f"pyvrp {version('pyvrp')} {REFERENCE_ITERATIONS[n]} it"))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: CVRPInstance) -> list[list[int]]:
        """The routes built with ``heuristic`` as ``select_next_node``."""
        return construct_routes(heuristic, instance)

    def score(self, instance: CVRPInstance, solution: Any) -> dict[str, float]:
        try:
            routes = validate_routes(solution, instance)
            cost = routes_cost(solution, instance)
        except InvalidRoutes as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        if instance.best_known is None:
            raise ValueError(f"{instance.name} has no reference cost")
        return {"cost": cost, "vehicles": float(len(routes)),
                "gap_percent": gap_percent(cost, instance.best_known)}

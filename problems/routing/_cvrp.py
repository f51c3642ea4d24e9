"""Asymmetric capacitated vehicle routing (ACVRP): instances, route checks, construction.

Instances follow RADAR (Yi et al., ICLR 2026, ``ACVRProblemDef.py``): an
``(n + 1) x (n + 1)`` tmat matrix (node 0 is the depot; see :mod:`._atsp`), customer
demands drawn uniformly from ``{1, ..., 9}`` and a vehicle capacity that depends on ``n``
(RADAR divides demands by ``demand_scaler``: 30 for n = 50, 50 for 100, 60 for 200, 80 for
500, 250 for 1000; the value for n = 20, absent from RADAR, is taken as 30, POMO's CVRP20
capacity). Demands and capacity stay integers here, so feasibility checks are exact.

A solution is a list of routes, each the list of customers (``1..n``) one vehicle serves in
order; every route starts and ends at the depot (implied), every customer is served exactly
once, and a route's demand is at most the capacity. Costs are directed: ``d[i, j]`` is the
cost of going from ``i`` to ``j``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._atsp import TMAT_SCALE, tmat_matrix
from ._construct import InvalidChoice

RADAR_CAPACITY = {20: 30, 50: 30, 100: 50, 200: 60, 500: 80, 1000: 250}

SelectNextCustomer = Callable[[int, int, np.ndarray, int, np.ndarray, np.ndarray], Any]


class InvalidRoutes(ValueError):
    """A CVRP solution that misses or repeats customers, or overloads a vehicle."""


@dataclass(frozen=True, eq=False)
class CVRPInstance:
    """``distance_matrix`` is ``(n + 1) x (n + 1)`` (node 0 the depot), ``demands`` has
    ``n + 1`` integers with ``demands[0] == 0``, ``capacity`` an integer."""

    name: str
    distance_matrix: np.ndarray
    demands: np.ndarray
    capacity: int
    best_known: float | None = None
    best_known_source: str | None = None

    def __post_init__(self) -> None:
        d, q = self.distance_matrix, self.demands
        if d.ndim != 2 or d.shape[0] != d.shape[1] or q.shape != (d.shape[0],):
            raise ValueError(f"{self.name}: need an (n+1)x(n+1) matrix and n+1 demands")
        if q[0] != 0 or (q[1:] <= 0).any() or (q > self.capacity).any():
            raise ValueError(f"{self.name}: demands must be 0 at the depot, positive and at most "
                             f"the capacity elsewhere")

    @property
    def n(self) -> int:
        """Number of customers (the depot excluded)."""
        return int(self.distance_matrix.shape[0] - 1)


def random_acvrp_instance(n: int, seed: int, capacity: int | None = None,
                          name: str | None = None) -> CVRPInstance:
    """A seeded RADAR-style ACVRP instance with ``n`` customers (distances in ``[0, 1)``)."""
    rng = np.random.default_rng(seed)
    ints = tmat_matrix(n + 1, rng)
    demands = np.concatenate([[0], rng.integers(1, 10, size=n)]).astype(np.int64)
    cap = RADAR_CAPACITY.get(n, 30) if capacity is None else int(capacity)
    return CVRPInstance(name or f"acvrp{n}_seed{seed}", ints.astype(np.float64) / TMAT_SCALE,
                        demands, cap)


def validate_routes(routes: Any, instance: CVRPInstance) -> list[np.ndarray]:
    """Return the routes as int64 arrays after checking coverage and capacity.

    Raises :class:`InvalidRoutes` with a readable reason otherwise.
    """
    n = instance.n
    if isinstance(routes, (str, bytes)) or not isinstance(routes, (list, tuple)):
        raise InvalidRoutes(f"a solution must be a list of routes, got {type(routes).__name__}")
    out: list[np.ndarray] = []
    for k, route in enumerate(routes):
        if isinstance(route, (str, bytes)) or not isinstance(route, (list, tuple)):
            raise InvalidRoutes(f"route {k} must be a list of customer indices, got {type(route).__name__}")
        if not route:
            raise InvalidRoutes(f"route {k} is empty")
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in route):
            raise InvalidRoutes(f"route {k}: customer indices must be integers")
        arr = np.asarray(route, dtype=np.int64)
        bad = arr[(arr < 1) | (arr > n)]
        if bad.size:
            raise InvalidRoutes(f"route {k} holds node {int(bad[0])}, outside the customers 1..{n}")
        load = int(instance.demands[arr].sum())
        if load > instance.capacity:
            raise InvalidRoutes(f"route {k} carries {load} > capacity {instance.capacity}")
        out.append(arr)
    served = np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
    counts = np.bincount(served, minlength=n + 1)[1:]
    if (counts != 1).any():
        dup = np.flatnonzero(counts > 1)
        missing = np.flatnonzero(counts == 0)
        if dup.size:
            raise InvalidRoutes(f"customer {int(dup[0]) + 1} is served {int(counts[dup[0]])} times")
        raise InvalidRoutes(f"{missing.size} customer(s) not served (first: {int(missing[0]) + 1})")
    return out


def routes_cost(routes: Any, instance: CVRPInstance) -> float:
    """Total directed cost of the (validated) routes, each from and back to the depot."""
    d = instance.distance_matrix
    total = 0.0
    for arr in validate_routes(routes, instance):
        path = np.concatenate([[0], arr, [0]])
        total += float(d[path[:-1], path[1:]].sum())
    return total


def _as_choice(value: Any, feasible: np.ndarray, at_depot: bool, depot: int, step: int) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidChoice(f"step {step}: select_next_node returned a bool, not a node index")
    try:
        node = operator.index(value)
    except TypeError:
        raise InvalidChoice(f"step {step}: select_next_node must return an integer node index, "
                            f"got {value!r} of type {type(value).__name__}") from None
    if node == depot:
        if at_depot:
            raise InvalidChoice(f"step {step}: returned the depot while already at the depot")
        return node
    if not np.any(feasible == node):
        raise InvalidChoice(f"step {step}: returned node {node}, which is not one of unvisited_nodes "
                            f"(unserved customers whose demand fits the rest capacity) nor the depot")
    return node


def construct_routes(select_next_node: SelectNextCustomer, instance: CVRPInstance) -> list[list[int]]:
    """Build routes step by step with an EoH/LLM4AD-style CVRP heuristic.

    At each step the heuristic is called as ``select_next_node(current_node, depot,
    unvisited_nodes, rest_capacity, demands, distance_matrix)`` where ``unvisited_nodes`` is
    an int64 array of the unserved customers whose demand fits ``rest_capacity`` (int),
    ordered by increasing cost from ``current_node`` (ties by index); ``demands`` (int, depot
    0) and ``distance_matrix`` are private copies made once per instance. It returns one of
    ``unvisited_nodes``, or the depot (0) to close the current route early — not allowed
    while at the depot, so every call makes progress. When no customer fits, the vehicle
    returns to the depot without a call; when the last unserved customer fits, it is taken
    without a call. Anything else raises :class:`InvalidChoice`.
    """
    d = np.array(instance.distance_matrix, dtype=np.float64)
    q = np.array(instance.demands, dtype=np.int64)
    shown_d, shown_q = d.copy(), q.copy()
    depot, cap = 0, int(instance.capacity)
    unserved = np.ones(d.shape[0], dtype=bool)
    unserved[depot] = False
    routes: list[list[int]] = []
    route: list[int] = []
    current, rest, step = depot, cap, 0
    while unserved.any():
        step += 1
        fits = np.flatnonzero(unserved & (q <= rest))
        if fits.size == 0 or (fits.size == 1 and unserved.sum() == 1):
            if fits.size == 0:
                routes.append(route)
                route, current, rest = [], depot, cap
                continue
            node = int(fits[0])
        else:
            ordered = fits[np.argsort(d[current, fits], kind="stable")]
            node = _as_choice(select_next_node(current, depot, ordered, rest, shown_q, shown_d),
                              fits, current == depot, depot, step)
        if node == depot:
            routes.append(route)
            route, current, rest = [], depot, cap
            continue
        route.append(node)
        unserved[node] = False
        rest -= int(q[node])
        current = node
    if route:
        routes.append(route)
    return routes


def nearest_feasible(current_node: int, depot: int, unvisited_nodes: np.ndarray, rest_capacity: int,
                     demands: np.ndarray, distance_matrix: np.ndarray) -> int:
    """Nearest-neighbour rule for :func:`construct_routes`: the closest customer that fits."""
    return int(unvisited_nodes[np.argmin(distance_matrix[current_node, unvisited_nodes])])

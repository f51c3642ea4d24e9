"""Routes, schedules and the independent feasibility check of an OPTWVP solution.

A *route* is the sequence of customers ``v_1 .. v_k`` (the depot is implicit at both ends).
Given service durations ``d``, the earliest schedule starts service at

    s_1 = max(t_{0 v_1}, e_{v_1}),   s_j = max(s_{j-1} + d_{j-1} + t_{v_{j-1} v_j}, e_{v_j}),

(waiting is allowed) and returns at ``s_k + d_k + t_{v_k 0}``. The solution is feasible when
every ``s_j <= l_{v_j}`` (service *starts* inside the window; it need not end by ``l``),
``0 <= d_j <= l_j - e_j`` and the return is no later than the horizon ``T`` — the constraints
of the official DeCoST Gurobi model (constraints (4)-(6) of ``TOPTWVP_Gurobi_Solver``).
Starting as early as possible is never worse, so checking the earliest schedule suffices.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._instance import OPTWVPInstance

TIME_TOL = 1e-6  # absolute tolerance on times (time units are the coordinate units, ~1e3)


class InfeasibleRoute(ValueError):
    """A route or a schedule violates the OPTWVP constraints."""


def validate_route(inst: OPTWVPInstance, route: Sequence[int] | np.ndarray) -> np.ndarray:
    """The route as an int array, after checking its nodes are distinct customers."""
    try:
        arr = np.asarray(list(route))
    except TypeError:
        raise InfeasibleRoute("the route must be a sequence of node indices") from None
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer)
                             or (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)))):
        raise InfeasibleRoute("the route must be a flat sequence of integer node indices")
    arr = arr.astype(np.int64)
    if arr.min() < 1 or arr.max() >= inst.n:
        raise InfeasibleRoute(f"node indices must lie in 1..{inst.n - 1} (the depot is implicit)")
    if len(np.unique(arr)) != len(arr):
        raise InfeasibleRoute("a customer is visited more than once")
    return arr


def route_legs(inst: OPTWVPInstance, route: np.ndarray) -> np.ndarray:
    """Travel times of the ``k + 1`` legs ``0 -> v_1 -> ... -> v_k -> 0``."""
    path = np.concatenate(([0], route, [0])).astype(np.int64)
    return inst.travel[path[:-1], path[1:]]


def earliest_starts(inst: OPTWVPInstance, route: np.ndarray,
                    service: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Earliest service starts of the route's customers and the return time to the depot."""
    legs = route_legs(inst, route)
    d = np.zeros(len(route)) if service is None else np.asarray(service, dtype=float)
    starts = np.empty(len(route))
    t = 0.0
    for j, v in enumerate(route):
        t = max(t + legs[j], float(inst.tw_open[v]))
        starts[j] = t
        t += d[j]
    return starts, t + legs[-1]


def check_schedule(inst: OPTWVPInstance, route: Sequence[int] | np.ndarray, service: Sequence[float] | np.ndarray,
                   tol: float = TIME_TOL) -> float:
    """Check a route with service durations; return its profit ``sum p_v d_v``.

    Raises :class:`InfeasibleRoute` naming the first violated constraint.
    """
    r = validate_route(inst, route)
    try:
        d = np.asarray(list(service), dtype=np.float64)
    except (TypeError, ValueError):
        raise InfeasibleRoute("service times must be a sequence of numbers") from None
    if d.shape != r.shape:
        raise InfeasibleRoute(f"expected {len(r)} service times (one per customer), got {d.size}")
    if not np.all(np.isfinite(d)):
        raise InfeasibleRoute("service times must be finite")
    if np.any(d < -tol):
        j = int(np.argmin(d))
        raise InfeasibleRoute(f"negative service time {d[j]:.6g} at node {r[j]}")
    width = inst.max_service[r]
    over = d - width
    if np.any(over > tol):
        j = int(np.argmax(over))
        raise InfeasibleRoute(f"service {d[j]:.6g} at node {r[j]} exceeds its window width {width[j]:.6g}")
    d = np.clip(d, 0.0, width)
    starts, back = earliest_starts(inst, r, d)
    late = starts - inst.tw_close[r]
    if np.any(late > tol):
        j = int(np.argmax(late))
        raise InfeasibleRoute(f"service at node {r[j]} starts at {starts[j]:.6g}, after its window "
                              f"closes at {inst.tw_close[r[j]]:.6g}")
    if back > inst.horizon + tol:
        raise InfeasibleRoute(f"the vehicle returns at {back:.6g}, after the horizon {inst.horizon:.6g}")
    return float(np.dot(inst.profit[r], d))


def check_route(inst: OPTWVPInstance, route: Sequence[int] | np.ndarray, tol: float = TIME_TOL) -> np.ndarray:
    """Check that a route is feasible with zero service times; return it as an int array."""
    r = validate_route(inst, route)
    check_schedule(inst, r, np.zeros(len(r)), tol)
    return r

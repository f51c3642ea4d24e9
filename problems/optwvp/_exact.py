"""Exact OPTWVP: a MILP solved by HiGHS, and brute force for tiny instances.

The MILP is the single-vehicle case of the official DeCoST Gurobi model
(``TOPTWVP_Gurobi_Solver``): the depot is split into a start ``0`` and an end copy ``N``;
binaries ``x_ij`` (arc used) and ``y_i`` (customer visited); continuous start ``s_i`` and
service ``d_i``::

    max  sum_i p_i d_i
    s.t. sum_j x_0j = 1,   sum_i x_iN = 1,   sum_i x_ik = sum_j x_kj = y_k       (1)-(3)
         e_i <= s_i <= l_i,   0 <= d_i <= (l_i - e_i) y_i,   s_N <= T            (4), (6)
         s_i + d_i + t_ij - s_j <= M_ij (1 - x_ij)                                (5)

Differences, none of which changes the optimum: ``s_i`` keeps its window bounds even when
``i`` is not visited (an unvisited node's ``s_i`` is free to satisfy (5)); every ``M_ij`` is
the tightest valid constant ``l_i + (l_i - e_i) - max(e_j, t_0j)`` instead of the horizon; arcs
``i -> j`` that no schedule can use (``max(e_i, t_0i) + t_ij > l_j``) and customers that
``0 -> i -> 0`` cannot serve are dropped. Subtours are impossible: (5) with ``t > 0`` forbids
cycles among visited customers.

:func:`brute_force` enumerates every feasible customer sequence (a prefix that is infeasible
with zero service cannot be extended, by the triangle inequality) and applies stage 2.
"""

from __future__ import annotations

import time

import numpy as np
from ._instance import OPTWVPInstance
from ._insertion import routes_profit
from ._schedule import TIME_TOL
from ._stage2 import optimal_service_fast


def solve_milp(inst: OPTWVPInstance, time_limit: float = 60.0,
               mip_rel_gap: float = 1e-6, vehicles: int = 1) -> dict:
    """Solve an instance exactly. Returns ``route``, ``profit``, ``service``, ``optimal``
    (proved within ``mip_rel_gap``), ``bound`` (HiGHS's dual bound), ``status``, ``wall_s``.

    ``vehicles = m > 1`` solves the team variant (TOPTWVP) with the same two-index model: the
    direct arc ``0 -> N`` is dropped, at most ``m`` arcs leave the depot and as many enter its
    end copy (each path from ``0`` to ``N`` is one vehicle; (5) still forbids cycles, and the
    single ``s_N <= T`` bounds every vehicle's return). Then ``routes`` lists the routes,
    ``route`` is the first and ``profit`` the team's total."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # lazily, as in _stage2
    from scipy.sparse import coo_matrix

    t0 = time.perf_counter()
    cust = np.flatnonzero(inst.reachable)
    m = len(cust)
    if vehicles < 1:
        raise ValueError("vehicles must be at least 1")
    if m == 0:
        return {"route": [], "routes": [], "profit": 0.0, "service": [], "optimal": True, "bound": 0.0,
                "status": "no reachable customer", "wall_s": time.perf_counter() - t0}
    tt = inst.travel
    e, l = inst.tw_open, inst.tw_close
    w = inst.max_service
    lb = np.maximum(e, tt[0])  # earliest possible start of each node
    # local nodes: 0 = depot start, 1..m = customers, m+1 = depot end
    glob = np.concatenate(([0], cust, [0]))
    arcs = []
    for a in range(m + 1):
        for b in range(1, m + 2):
            if a == b:
                continue
            i, j = glob[a], glob[b]
            if b == m + 1:
                if (a == 0 and vehicles == 1) or lb[i] + tt[i, 0] <= inst.horizon + TIME_TOL:
                    arcs.append((a, b))
            elif a == 0 or lb[i] + tt[i, j] <= l[j] + TIME_TOL:
                arcs.append((a, b))
    na = len(arcs)
    # variable layout: x (na) | y (m) | s (m customers, then end) | d (m)
    iy, is_, id_ = na, na + m, na + 2 * m + 1
    nv = id_ + m
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(entries, low, high):
        nonlocal r
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(low)
        hi.append(high)
        r += 1

    out_of: dict[int, list[int]] = {a: [] for a in range(m + 2)}
    into: dict[int, list[int]] = {b: [] for b in range(m + 2)}
    for k, (a, b) in enumerate(arcs):
        out_of[a].append(k)
        into[b].append(k)
    if vehicles == 1:
        add([(k, 1.0) for k in out_of[0]], 1, 1)
        add([(k, 1.0) for k in into[m + 1]], 1, 1)
    else:  # at most m vehicles leave, and as many come back
        add([(k, 1.0) for k in out_of[0]], 0, vehicles)
        add([(k, 1.0) for k in into[m + 1]] + [(k, -1.0) for k in out_of[0]], 0, 0)
    for c in range(1, m + 1):
        add([(k, 1.0) for k in into[c]] + [(iy + c - 1, -1.0)], 0, 0)
        add([(k, 1.0) for k in out_of[c]] + [(iy + c - 1, -1.0)], 0, 0)
        add([(id_ + c - 1, 1.0), (iy + c - 1, -w[glob[c]])], -np.inf, 0)
    for k, (a, b) in enumerate(arcs):
        i, j = glob[a], glob[b]
        sj = is_ + (b - 1)  # the end depot sits right after the m customers
        if a == 0:  # s_j >= t_0j x_0j
            add([(sj, -1.0), (k, tt[0, j])], -np.inf, 0)
            continue
        si, di = is_ + a - 1, id_ + a - 1
        lb_j = 0.0 if b == m + 1 else lb[j]
        M = max(0.0, l[i] + w[i] + tt[i, j] - lb_j)
        add([(si, 1.0), (di, 1.0), (sj, -1.0), (k, M)], -np.inf, M - tt[i, j])
    A = coo_matrix((vals, (rows, cols)), shape=(r, nv)).tocsr()
    lower = np.zeros(nv)
    upper = np.ones(nv)
    lower[is_:is_ + m] = lb[cust]
    upper[is_:is_ + m] = l[cust]
    lower[is_ + m], upper[is_ + m] = 0.0, inst.horizon
    upper[id_:] = w[cust]
    cost = np.zeros(nv)
    cost[id_:] = -inst.profit[cust]
    integrality = np.zeros(nv)
    integrality[:na + m] = 1
    res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integrality,
               bounds=Bounds(lower, upper),
               options={"time_limit": float(time_limit), "mip_rel_gap": mip_rel_gap, "disp": False})
    wall = time.perf_counter() - t0
    if res.x is None:
        return {"route": [], "routes": [], "profit": 0.0, "service": [], "optimal": False, "bound": None,
                "status": res.message, "wall_s": wall}
    x = res.x[:na] > 0.5
    succ = {a: b for (a, b), used in zip(arcs, x) if used and a != 0}
    routes: list[list[int]] = []
    for (a, b), used in zip(arcs, x):
        if not used or a != 0:
            continue
        route: list[int] = []
        node = b
        while node != m + 1 and len(route) <= m:
            route.append(int(glob[node]))
            node = succ[node]
        if route:
            routes.append(route)
    # the routes' values are recomputed by stage 2 (exact) rather than read from the MILP
    solved = [optimal_service_fast(inst, r) for r in routes] or [(np.zeros(0), 0.0)]
    service, profit = solved[0][0], float(sum(p for _, p in solved))
    bound = getattr(res, "mip_dual_bound", None)
    return {"route": routes[0] if routes else [], "routes": routes, "profit": profit,
            "service": service.tolist(),
            "optimal": res.status == 0, "bound": None if bound is None else -float(bound),
            "status": res.message, "wall_s": wall}


def brute_force(inst: OPTWVPInstance) -> tuple[list[int], float]:
    """The optimal route by enumerating all feasible customer sequences (tiny ``n`` only)."""
    routes = feasible_routes(inst)
    if not routes:
        return [], 0.0
    prof = routes_profit(inst, routes)
    j = int(np.argmax(prof))
    return routes[j], float(prof[j])


def feasible_routes(inst: OPTWVPInstance, max_customers: int = 9) -> list[list[int]]:
    """Every customer sequence that is feasible with zero service (tiny ``n`` only)."""
    cust = [int(v) for v in np.flatnonzero(inst.reachable)]
    if len(cust) > max_customers:
        raise ValueError(f"brute force is for at most {max_customers} reachable customers")
    tt, e, l, T = inst.travel, inst.tw_open, inst.tw_close, inst.horizon
    routes: list[list[int]] = []

    def extend(route: list[int], last: int, now: float) -> None:
        for v in cust:
            if v in route:
                continue
            start = max(now + tt[last, v], e[v])
            if start > l[v] + TIME_TOL or start + tt[v, 0] > T + TIME_TOL:
                continue
            routes.append(route + [v])
            extend(route + [v], v, start)

    extend([], 0, 0.0)
    return routes

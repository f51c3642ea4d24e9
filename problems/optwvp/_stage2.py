"""Stage 2 of DeCoST: the optimal service times of a fixed route.

For a fixed route ``0 -> v_1 -> ... -> v_k -> 0`` the service-time problem is a linear
program (DeCoST §4.2; the LP part of the official Gurobi model)::

    max  sum_j p_j d_j
    s.t. s_1 >= t_01,  s_j >= s_{j-1} + d_{j-1} + t_{j-1,j},  s_end >= s_k + d_k + t_k0,
         e_j <= s_j <= l_j,  0 <= d_j <= l_j - e_j,  s_end <= T.

:func:`optimal_service_lp` solves it with HiGHS (``scipy.optimize.linprog``).

:func:`optimal_service_fast` is the paper's service-time optimisation (STO) procedure, as in
``OPTWVPEnv._get_total_profit`` (stage 5) of the official code: start from zero service and
the earliest schedule; visit the customers by *decreasing profit rate* and give each the
longest service that keeps every later node feasible,

    d_i = min( l_i - e_i,  min_{k > i} [ l_k - s_i - sum_{i<m<=k} t_m - sum_{i<m<k} d_m ] ),

recomputing the earliest starts ``s`` after each assignment. The paper proves this greedy
globally optimal. (Why: with cumulative travel ``tau`` and service ``D``, every constraint reads
``D_k - D_j <= (l_k - tau_k) - (e_j - tau_j)`` over an interval ``[j, k)`` of the route; the
right-hand side is modular on crossing intervals, so the feasible service vectors form a
polymatroid and the greedy by weight is optimal.) Tests check it against the LP.

:func:`optimal_profit_batch` runs the same procedure on many routes of one length at once
(batch-first numpy): earliest starts come from a running maximum
``s_j = tau_j + D_j + max_{m<=j}(E_m - tau_m - D_m)`` instead of a Python loop.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from ._instance import OPTWVPInstance
from ._schedule import InfeasibleRoute, check_route, route_legs


def _route_arrays(inst: OPTWVPInstance, route: np.ndarray):
    r = np.asarray(route, dtype=np.int64)
    return (inst.profit[r], inst.tw_open[r], inst.tw_close[r], inst.max_service[r],
            route_legs(inst, r))


def optimal_service_lp(inst: OPTWVPInstance, route: Sequence[int]) -> tuple[np.ndarray, float]:
    """Optimal service durations of a feasible route and its profit, by LP (HiGHS)."""
    from scipy.optimize import linprog  # lazily: the sandboxed solvers never need scipy

    r = check_route(inst, route)
    k = len(r)
    if k == 0:
        return np.zeros(0), 0.0
    p, e, l, w, legs = _route_arrays(inst, r)
    # variables: s_1..s_k, s_end, d_1..d_k
    nv = 2 * k + 1
    c = np.zeros(nv)
    c[k + 1:] = -p
    rows = []
    rhs = []
    # -s_1 <= -t_01
    row = np.zeros(nv)
    row[0] = -1.0
    rows.append(row)
    rhs.append(-legs[0])
    for j in range(1, k + 1):  # s_{j-1} + d_{j-1} - s_j <= -t  (j = k is the return, s_end)
        row = np.zeros(nv)
        row[j - 1] = 1.0
        row[k + 1 + j - 1] = 1.0
        row[j] = -1.0
        rows.append(row)
        rhs.append(-legs[j])
    bounds = [(float(e[j]), float(l[j])) for j in range(k)] + [(None, float(inst.horizon))]
    bounds += [(0.0, float(w[j])) for j in range(k)]
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    if res.status != 0:
        raise InfeasibleRoute(f"stage-2 LP failed: {res.message}")
    d = np.clip(res.x[k + 1:], 0.0, w)
    return d, float(np.dot(p, d))


def optimal_profit_batch(profit: np.ndarray, tw_open: np.ndarray, tw_close: np.ndarray,
                         max_service: np.ndarray, legs: np.ndarray,
                         horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """The STO procedure on ``B`` routes of ``k`` customers each.

    All arrays are ``(B, k)`` except ``legs`` (``(B, k + 1)``, travel times including the
    return). Routes must be feasible with zero service. Returns the service ``(B, k)`` and
    the profit ``(B,)``.
    """
    p = np.asarray(profit, dtype=float)
    B, k = p.shape
    if k == 0:
        return np.zeros((B, 0)), np.zeros(B)
    # positions 0 (depot out), 1..k (customers), k+1 (depot back)
    tau = np.concatenate((np.zeros((B, 1)), np.cumsum(legs, axis=1)), axis=1)
    E = np.concatenate((np.zeros((B, 1)), tw_open, np.full((B, 1), -np.inf)), axis=1)
    L = np.concatenate((np.full((B, 1), np.inf), tw_close, np.full((B, 1), float(horizon))), axis=1)
    d = np.zeros((B, k + 2))
    rows = np.arange(B)
    order = np.argsort(-p, axis=1, kind="stable") + 1
    for step in range(k):
        i = order[:, step]
        D = np.concatenate((np.zeros((B, 1)), np.cumsum(d, axis=1)[:, :-1]), axis=1)  # before j
        s = tau + D + np.maximum.accumulate(E - tau - D, axis=1)
        # R_k = l_k - tau_k - D_k; the bound on d_i is min_{k>i} R_k - (s_i - tau_i - D_i)
        R = L - tau - D
        suffix = np.minimum.accumulate(R[:, ::-1], axis=1)[:, ::-1]
        after = suffix[rows, i + 1]
        room = after - (s[rows, i] - tau[rows, i] - D[rows, i])
        d[rows, i] = np.clip(np.minimum(max_service[rows, i - 1], room), 0.0, None)
    service = d[:, 1:k + 1]
    return service, (p * service).sum(axis=1)


def optimal_service_fast(inst: OPTWVPInstance, route: Sequence[int] | np.ndarray) -> tuple[np.ndarray, float]:
    """Optimal service durations of a feasible route and its profit, by the STO procedure."""
    r = check_route(inst, route)
    if len(r) == 0:
        return np.zeros(0), 0.0
    p, e, l, w, legs = _route_arrays(inst, r)
    d, prof = optimal_profit_batch(p[None], e[None], l[None], w[None], legs[None], inst.horizon)
    return d[0], float(prof[0])


def route_profit(inst: OPTWVPInstance, route: Sequence[int] | np.ndarray) -> float:
    """The best profit of a route (stage 2 by the fast procedure)."""
    return optimal_service_fast(inst, route)[1]

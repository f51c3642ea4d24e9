"""Stage 1 by insertion: every feasible insertion of a customer into a route, scored.

:func:`insertion_candidates` lists, for a route, each pair (customer not on it, position) whose
insertion keeps the route feasible with zero service, with the quantities an insertion rule
needs (batch-first: one array entry per candidate). Feasibility uses Savelsbergh's
``MaxShift`` bookkeeping, as in Vansteenwegen et al.'s ILS for the (T)OPTW:
``MaxShift_j = min(l_j - s_j, Wait_{j+1} + MaxShift_{j+1})`` with ``MaxShift_end = T - s_end``.
Inserting ``u`` between ``a`` and ``b`` is feasible iff ``s_u = max(s_a + t_au, e_u) <= l_u``
and the delay it causes at ``b`` is at most ``MaxShift_b``.

:func:`construct_route` is the greedy constructor whose scoring rule is the heuristic slot:
it inserts the best-scoring candidate until none is left (or the rule vetoes them all with
non-finite scores), computes the stage-2 optimum of every intermediate route, and returns the
best of them — a route full of customers leaves no time for service, so the best prefix of the
construction, not its end, is the answer.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._instance import OPTWVPInstance
from ._schedule import TIME_TOL
from ._stage2 import optimal_profit_batch

InsertionScorer = Callable[..., Any]

# Names (and order) of the arrays handed to an insertion scorer; all have one entry per candidate.
CANDIDATE_FIELDS = ("node", "position", "profit_rate", "tw_open", "tw_close", "start_time",
                    "added_travel", "shift", "service_room")


def _schedule_d0(inst: OPTWVPInstance, route: np.ndarray):
    """Zero-service earliest starts of path positions 0..k+1, and MaxShift of 1..k+1."""
    path = np.concatenate(([0], route, [0])).astype(np.int64)
    legs = inst.travel[path[:-1], path[1:]]
    k = len(route)
    s = np.zeros(k + 2)
    for j in range(1, k + 2):
        s[j] = max(s[j - 1] + legs[j - 1], inst.tw_open[path[j]] if j <= k else 0.0)
    close = np.concatenate(([np.inf], inst.tw_close[route], [inst.horizon]))
    max_shift = np.empty(k + 2)
    max_shift[k + 1] = inst.horizon - s[k + 1]
    for j in range(k, -1, -1):
        wait_next = s[j + 1] - (s[j] + legs[j])
        max_shift[j] = min(close[j] - s[j], wait_next + max_shift[j + 1])
    return path, s, max_shift


def insertion_candidates(inst: OPTWVPInstance, route) -> dict[str, np.ndarray]:
    """Every feasible (customer, position) insertion into ``route`` with its features.

    ``position`` p means "between the p-th and (p+1)-th node of ``0, v_1, ..., v_k, 0``"
    (p = 0 right after the depot). ``start_time`` is the new customer's zero-service start,
    ``added_travel`` is ``t_au + t_ub - t_ab``, ``shift`` the delay at the successor and
    ``service_room`` the longest service the new customer could get with everyone else at
    zero, ``min(l_u - e_u, Wait_b' + MaxShift_b - shift)``.
    """
    route = np.asarray(route, dtype=np.int64)
    path, s, max_shift = _schedule_d0(inst, route)
    on = np.zeros(inst.n, dtype=bool)
    on[route] = True
    free = np.flatnonzero(inst.reachable & ~on)
    if free.size == 0:
        return {f: np.zeros(0, dtype=np.int64 if f in ("node", "position") else float)
                for f in CANDIDATE_FIELDS}
    T = inst.travel
    a, b = path[:-1], path[1:]  # the k+1 gaps
    u = free[:, None]
    start = np.maximum(s[None, :-1] + T[a[None, :], u], inst.tw_open[u])
    arrive_b = start + T[u, b[None, :]]
    open_b = np.where(b == 0, 0.0, inst.tw_open[b])
    new_sb = np.maximum(arrive_b, open_b[None, :])
    shift = new_sb - s[None, 1:]
    ok = (start <= inst.tw_close[u] + TIME_TOL) & (shift <= max_shift[None, 1:] + TIME_TOL)
    room = np.minimum(inst.max_service[u], (new_sb - arrive_b) + max_shift[None, 1:] - shift)
    ui, pi = np.nonzero(ok)
    nodes = free[ui]
    return {
        "node": nodes.astype(np.int64),
        "position": pi.astype(np.int64),
        "profit_rate": inst.profit[nodes].astype(float),
        "tw_open": inst.tw_open[nodes].astype(float),
        "tw_close": inst.tw_close[nodes].astype(float),
        "start_time": start[ui, pi],
        "added_travel": T[a[pi], nodes] + T[nodes, b[pi]] - T[a[pi], b[pi]],
        "shift": np.maximum(shift[ui, pi], 0.0),
        "service_room": np.maximum(room[ui, pi], 0.0),
    }


def insert(route, node: int, position: int) -> list[int]:
    r = list(route)
    r.insert(int(position), int(node))
    return r


def routes_optimal(inst: OPTWVPInstance, routes: list) -> tuple[list[np.ndarray], np.ndarray]:
    """Stage-2 optimal service and profit of several feasible routes (batched by length)."""
    out = np.zeros(len(routes))
    service: list[np.ndarray] = [np.zeros(0)] * len(routes)
    by_len: dict[int, list[int]] = {}
    for idx, r in enumerate(routes):
        by_len.setdefault(len(r), []).append(idx)
    for k, idxs in by_len.items():
        if k == 0:
            continue
        R = np.asarray([routes[i] for i in idxs], dtype=np.int64)
        zero = np.zeros((len(idxs), 1), np.int64)
        paths = np.concatenate((zero, R, zero), axis=1)
        legs = inst.travel[paths[:, :-1], paths[:, 1:]]
        d, prof = optimal_profit_batch(inst.profit[R], inst.tw_open[R], inst.tw_close[R],
                                       inst.max_service[R], legs, inst.horizon)
        out[idxs] = prof
        for row, i in enumerate(idxs):
            service[i] = d[row]
    return service, out


def routes_profit(inst: OPTWVPInstance, routes: list) -> np.ndarray:
    """Stage-2 optimal profit of several feasible routes."""
    return routes_optimal(inst, routes)[1]


def checked_scores(raw: object, m: int) -> np.ndarray:
    """A scorer's answer as ``m`` floats, non-finite entries mapped to -inf (never chosen); a ValueError
    naming the shape when it is not one score per candidate."""
    scores = np.asarray(raw, dtype=float)
    if scores.shape != (m,):
        raise ValueError(f"the scorer returned shape {scores.shape}, expected ({m},)")
    return np.where(np.isfinite(scores), scores, -np.inf)


def construct_route(inst: OPTWVPInstance, scorer: InsertionScorer,
                    max_steps: int | None = None) -> tuple[list[int], float]:
    """Greedy insertion driven by ``scorer``; the best stage-2 prefix route and its profit.

    ``scorer(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
    service_room, time_left, horizon)`` gets the candidate arrays of
    :func:`insertion_candidates` plus two floats (the zero-service time left before the
    horizon and ``T``) and returns one score per candidate; the highest finite score is
    inserted (the first on ties). Raises ``ValueError`` on a malformed score array.
    """
    route: list[int] = []
    best, best_profit = [], 0.0
    steps = inst.n if max_steps is None else max_steps
    for _ in range(steps):
        cand = insertion_candidates(inst, route)
        m = len(cand["node"])
        if m == 0:
            break
        _, s, _ = _schedule_d0(inst, np.asarray(route, dtype=np.int64))
        args = {f: cand[f].copy() for f in CANDIDATE_FIELDS}
        scores = checked_scores(scorer(**args, time_left=float(inst.horizon - s[-1]),
                                       horizon=float(inst.horizon)), m)
        if not np.isfinite(scores.max()):
            break
        j = int(np.argmax(scores))
        route = insert(route, int(cand["node"][j]), int(cand["position"][j]))
        prof = float(routes_profit(inst, [route])[0])
        if prof > best_profit + 1e-12:
            best, best_profit = list(route), prof
    return best, best_profit


def density_scorer(node, position, profit_rate, tw_open, tw_close, start_time, added_travel,
                   shift, service_room, time_left, horizon):
    """The default rule: the profit the newcomer could earn per unit of delay it causes."""
    return profit_rate * service_room / (1.0 + shift)

"""TOPTWVP: the team variant (``m`` vehicles), as in the official DeCoST code's
``TOPTWVP_Gurobi_Solver`` with ``m`` routes.

``m`` identical vehicles leave the depot at 0 and are back by ``T``; every customer is served by
at most one of them; the profit is the sum over routes. Given the routes, the service times of
one route do not affect another's, so stage 2 (STO) runs route by route and the team's
profit is the sum of the routes' stage-2 optima.

* :func:`check_team` -- the independent check: at most ``m`` routes, each feasible with zero
  service (:func:`check_route`), no customer on two routes;
* :func:`team_profit` -- the stage-2 optimum of a team;
* :func:`construct_team` -- parallel greedy insertion with the same pluggable scoring rule as
  :func:`construct_route`: every step scores the feasible insertions of every route (customers
  on another route excluded) and makes the best one. Each route then keeps its best stage-2
  intermediate state (dropping customers never breaks a route, and the states of different
  routes are disjoint, so they combine);
* :func:`team_candidates` / :func:`construct_team_joint` -- the same parallel insertion with the
  scoring rule called once per step on the candidates of *all* routes together (a ``vehicle``
  array and a per-route ``time_left``): the slot of the ``toptwvp_route`` evaluator, which decides
  vehicle and position in one ranking;
* :func:`team_ils` -- Vansteenwegen et al.'s (2009) ILS for the TOPTW, adapted to variable profits
  the same way as :func:`iterated_local_search`: best-improvement insertion into any route
  judged by the exact stage-2 gain, then removals; the shake removes ``S`` consecutive customers
  at ``R`` from *every* route, ``S`` resets at ``n / (3m)`` (the paper's rule);
* :func:`brute_force_team` -- tiny instances: the best set of at most ``m`` disjoint routes
  among all feasible routes (for the tests);
* the exact MILP is :func:`solve_milp` with ``vehicles=m``.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from ._insertion import InsertionScorer, _schedule_d0, checked_scores, insert, insertion_candidates, routes_profit
from ._instance import OPTWVPInstance
from ._schedule import InfeasibleRoute, check_route

GAIN_TOL = 1e-9


def check_team(inst: OPTWVPInstance, routes, vehicles: int) -> list[np.ndarray]:
    """Check a team of routes; return them as int arrays. Raises :class:`InfeasibleRoute`."""
    routes = list(routes)
    if len(routes) > vehicles:
        raise InfeasibleRoute(f"{len(routes)} routes for {vehicles} vehicles")
    checked = [check_route(inst, r) for r in routes]
    allv = np.concatenate(checked) if checked else np.zeros(0, dtype=np.int64)
    if len(np.unique(allv)) != len(allv):
        raise InfeasibleRoute("a customer is served by two routes")
    return checked


def team_profit(inst: OPTWVPInstance, routes) -> float:
    """The team's stage-2 optimum: the sum of its routes' optimal profits."""
    routes = [list(r) for r in routes if len(r)]
    return float(routes_profit(inst, routes).sum()) if routes else 0.0


def _free_candidates(inst: OPTWVPInstance, route: list[int], taken: np.ndarray) -> dict[str, np.ndarray]:
    cand = insertion_candidates(inst, route)
    keep = ~taken[cand["node"]]
    return {k: v[keep] for k, v in cand.items()}


def construct_team(inst: OPTWVPInstance, vehicles: int, scorer: InsertionScorer,
                   max_steps: int | None = None) -> tuple[list[list[int]], float]:
    """Parallel greedy insertion over ``vehicles`` routes; the routes and the team's profit."""
    routes: list[list[int]] = [[] for _ in range(vehicles)]
    best = [list(r) for r in routes]
    best_profit = np.zeros(vehicles)
    taken = np.zeros(inst.n, dtype=bool)
    steps = inst.n if max_steps is None else max_steps
    for _ in range(steps):
        choice = None  # (score, route index, node, position)
        for k, route in enumerate(routes):
            cand = _free_candidates(inst, route, taken)
            m = len(cand["node"])
            if m == 0:
                continue
            _, s, _ = _schedule_d0(inst, np.asarray(route, dtype=np.int64))
            scores = checked_scores(scorer(**{f: v.copy() for f, v in cand.items()},
                                           time_left=float(inst.horizon - s[-1]), horizon=float(inst.horizon)), m)
            j = int(np.argmax(scores))
            if np.isfinite(scores[j]) and (choice is None or scores[j] > choice[0]):
                choice = (float(scores[j]), k, int(cand["node"][j]), int(cand["position"][j]))
        if choice is None:
            break
        _, k, node, pos = choice
        routes[k] = insert(routes[k], node, pos)
        taken[node] = True
        prof = float(routes_profit(inst, [routes[k]])[0])
        if prof > best_profit[k] + 1e-12:
            best[k], best_profit[k] = list(routes[k]), prof
    return best, float(best_profit.sum())


TEAM_FIELDS = ("node", "position", "profit_rate", "tw_open", "tw_close", "start_time", "added_travel",
               "shift", "service_room", "time_left", "vehicle")


def team_candidates(inst: OPTWVPInstance, routes: list[list[int]], taken: np.ndarray) -> dict[str, np.ndarray]:
    """The feasible insertions of every free customer into every route, stacked: the fields of
    :func:`insertion_candidates` plus ``time_left`` (the zero-service time the candidate's route has
    left before the horizon) and ``vehicle`` (its route's index)."""
    parts = []
    for k, route in enumerate(routes):
        cand = _free_candidates(inst, route, taken)
        m = len(cand["node"])
        if m == 0:
            continue
        _, s, _ = _schedule_d0(inst, np.asarray(route, dtype=np.int64))
        cand["time_left"] = np.full(m, float(inst.horizon - s[-1]))
        cand["vehicle"] = np.full(m, k, dtype=np.int64)
        parts.append(cand)
    if not parts:
        return {f: np.zeros(0, dtype=np.int64 if f in ("vehicle", "node", "position") else float)
                for f in TEAM_FIELDS}
    return {f: np.concatenate([c[f] for c in parts]) for f in TEAM_FIELDS}


def construct_team_joint(inst: OPTWVPInstance, vehicles: int, scorer: InsertionScorer,
                         max_steps: int | None = None) -> tuple[list[list[int]], float]:
    """Parallel greedy insertion over ``vehicles`` routes with one ranking per step.

    ``scorer(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
    service_room, time_left, horizon, vehicle, vehicles)`` gets the arrays of :func:`team_candidates`
    (one entry per candidate over all routes; ``time_left`` per candidate) and two numbers; the highest
    finite score is made (the first on ties); the construction stops when none is feasible or all are
    vetoed. Each route then keeps its best stage-2 intermediate state (as :func:`construct_team`).
    With one route and a rule that ignores the two extra arguments this is :func:`construct_route`.
    Raises ``ValueError`` on a malformed score array."""
    routes: list[list[int]] = [[] for _ in range(vehicles)]
    best = [list(r) for r in routes]
    best_profit = np.zeros(vehicles)
    taken = np.zeros(inst.n, dtype=bool)
    for _ in range(inst.n if max_steps is None else max_steps):
        cand = team_candidates(inst, routes, taken)
        m = len(cand["node"])
        if m == 0:
            break
        args = {f: cand[f].copy() for f in TEAM_FIELDS if f != "vehicle"}
        scores = checked_scores(scorer(**args, horizon=float(inst.horizon), vehicle=cand["vehicle"].copy(),
                                       vehicles=int(vehicles)), m)
        if not np.isfinite(scores.max()):
            break
        j = int(np.argmax(scores))
        k, node = int(cand["vehicle"][j]), int(cand["node"][j])
        routes[k] = insert(routes[k], node, int(cand["position"][j]))
        taken[node] = True
        prof = float(routes_profit(inst, [routes[k]])[0])
        if prof > best_profit[k] + 1e-12:
            best[k], best_profit[k] = list(routes[k]), prof
    return best, float(best_profit.sum())


def team_local_search(inst: OPTWVPInstance, routes: list[list[int]],
                      forbidden: frozenset[int] = frozenset()) -> tuple[list[list[int]], float]:
    """Best-improvement insertion into any route (exact stage-2 gain), then removals, until
    neither improves the team's profit. Customers in ``forbidden`` are not inserted."""
    routes = [list(r) for r in routes]
    prof = np.array([float(routes_profit(inst, [r])[0]) if r else 0.0 for r in routes])
    while True:
        taken = np.zeros(inst.n, dtype=bool)
        for r in routes:
            taken[r] = True
        for v in forbidden:
            taken[v] = True
        best = None  # (gain, route index, new route, its profit)
        for k, r in enumerate(routes):
            cand = _free_candidates(inst, r, taken)
            if len(cand["node"]):
                trial = [insert(r, u, p) for u, p in zip(cand["node"], cand["position"])]
                tp = routes_profit(inst, trial)
                j = int(np.argmax(tp))
                if tp[j] - prof[k] > GAIN_TOL and (best is None or tp[j] - prof[k] > best[0]):
                    best = (tp[j] - prof[k], k, trial[j], float(tp[j]))
        if best is None:
            for k, r in enumerate(routes):
                if len(r) > 1:
                    trial = [r[:i] + r[i + 1:] for i in range(len(r))]
                    tp = routes_profit(inst, trial)
                    j = int(np.argmax(tp))
                    if tp[j] - prof[k] > GAIN_TOL and (best is None or tp[j] - prof[k] > best[0]):
                        best = (tp[j] - prof[k], k, trial[j], float(tp[j]))
        if best is None:
            return routes, float(prof.sum())
        _, k, routes[k], prof[k] = best


def team_ils(inst: OPTWVPInstance, vehicles: int, seed: int = 0, max_no_improve: int = 150,
             time_limit: float | None = None, max_iter: int | None = None) -> tuple[list[list[int]], float]:
    """The best team found by the ILS and its stage-2 profit (``seed`` randomises the first shake)."""
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    current, cur = team_local_search(inst, [[] for _ in range(vehicles)])
    best, best_profit = [list(r) for r in current], cur
    s_max = max(1, inst.n // (3 * vehicles))
    R, S = int(rng.integers(0, max(1, max(len(r) for r in current)))), 1
    stale = it = 0
    while stale < max_no_improve:
        if (time_limit is not None and time.perf_counter() - t0 > time_limit) or \
                (max_iter is not None and it >= max_iter):
            break
        it += 1
        kept, removed = [], set()
        for r in current:
            if r:
                start = R % len(r)
                gone = {(start + q) % len(r) for q in range(min(S, len(r)))}
                kept.append([v for i, v in enumerate(r) if i not in gone])
                removed |= {r[i] for i in gone}
            else:
                kept.append([])
        current, _ = team_local_search(inst, kept, forbidden=frozenset(removed))
        current, cur = team_local_search(inst, current)
        if cur > best_profit + GAIN_TOL:
            best, best_profit = [list(r) for r in current], cur
            S, stale = 1, 0
        else:
            stale += 1
        R += S
        S += 1
        if S >= s_max:
            S = 1
    return best, best_profit


def brute_force_team(inst: OPTWVPInstance, vehicles: int) -> tuple[list[list[int]], float]:
    """The optimal team by enumeration: every feasible route, then the best ``<= vehicles``
    pairwise-disjoint of them (tiny instances: at most 7 reachable customers)."""
    from ._exact import feasible_routes

    routes = feasible_routes(inst, max_customers=7)
    if not routes:
        return [], 0.0
    prof = routes_profit(inst, routes)
    # for each customer set only its best ordering matters
    best_of: dict[frozenset, tuple[float, list[int]]] = {}
    for r, p in zip(routes, prof):
        key = frozenset(r)
        if key not in best_of or p > best_of[key][0]:
            best_of[key] = (float(p), r)
    sets = list(best_of.items())
    best_team: list[list[int]] = []
    best_val = 0.0
    for size in range(1, vehicles + 1):
        for combo in itertools.combinations(range(len(sets)), size):
            keys = [sets[i][0] for i in combo]
            if sum(len(k) for k in keys) != len(frozenset().union(*keys)):
                continue
            val = sum(sets[i][1][0] for i in combo)
            if val > best_val + 1e-12:
                best_val, best_team = val, [sets[i][1][1] for i in combo]
    return best_team, best_val

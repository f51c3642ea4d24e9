"""Iterated local search (ILS) for the OPTWVP: the meta-heuristic baseline.

The skeleton is Vansteenwegen, Souffriau, Vanden Berghe & Van Oudheusden (2009), "Iterated
local search for the team orienteering problem with time windows" (Comput. Oper. Res. 36),
the ILS family DeCoST compares against, with one route:

* **local search** — insert customers until no insertion helps. Because profits vary with
  service time, an insertion is judged by its exact effect on the stage-2 optimum (every
  feasible insertion is evaluated in one batch by the STO procedure) instead of the TOPTW
  ratio ``score^2 / shift``, and the best *improving* insertion is made; when none improves,
  the best improving *removal* is tried (dropping a low-rate customer can free time for
  better service elsewhere — a move the classical OPTW never needs);
* **shake** — remove ``S`` consecutive customers starting at position ``R`` (they are barred
  from the first descent that follows, so the exact best-improvement insertion does not put
  the same customers straight back); then
  ``R += S``, ``S += 1``, ``R`` wraps around the route, and ``S`` resets to 1 when it reaches
  ``n / 3`` (the paper's ``n / (3m)`` with ``m = 1``);
* stop after ``max_no_improve`` iterations without a new best (150 in the paper) or a
  time limit.
"""

from __future__ import annotations

import time

import numpy as np

from ._instance import OPTWVPInstance
from ._insertion import insert, insertion_candidates, routes_profit

GAIN_TOL = 1e-9


def local_search(inst: OPTWVPInstance, route: list[int],
                 forbidden: frozenset[int] = frozenset()) -> tuple[list[int], float]:
    """Best-improvement insertions, then removals, until neither improves the profit.
    Customers in ``forbidden`` are not inserted."""
    route = list(route)
    profit = float(routes_profit(inst, [route])[0]) if route else 0.0
    while True:
        cand = insertion_candidates(inst, route)
        keep = [i for i, u in enumerate(cand["node"]) if int(u) not in forbidden]
        if keep:
            trial = [insert(route, cand["node"][i], cand["position"][i]) for i in keep]
            prof = routes_profit(inst, trial)
            j = int(np.argmax(prof))
            if prof[j] > profit + GAIN_TOL:
                route, profit = trial[j], float(prof[j])
                continue
        if len(route) > 1:
            trial = [route[:i] + route[i + 1:] for i in range(len(route))]
            prof = routes_profit(inst, trial)
            j = int(np.argmax(prof))
            if prof[j] > profit + GAIN_TOL:
                route, profit = trial[j], float(prof[j])
                continue
        return route, profit


def iterated_local_search(inst: OPTWVPInstance, seed: int = 0, max_no_improve: int = 150,
                          time_limit: float | None = None,
                          max_iter: int | None = None) -> tuple[list[int], float]:
    """The best route found and its stage-2 profit.

    ``seed`` randomises the first shake position (the method is otherwise deterministic), so
    independent runs explore differently.
    """
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    current, cur_profit = local_search(inst, [])
    best, best_profit = list(current), cur_profit
    s_max = max(1, inst.n // 3)
    R = int(rng.integers(0, max(1, len(current))))
    S = 1
    stale = it = 0
    while stale < max_no_improve:
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        if max_iter is not None and it >= max_iter:
            break
        it += 1
        if current:
            R %= len(current)
            gone = {(R + q) % len(current) for q in range(min(S, len(current)))}
            kept = [v for i, v in enumerate(current) if i not in gone]
        else:
            kept = []
        removed = frozenset(current) - frozenset(kept)
        # the removed customers sit out the first descent, or the best-improvement insertion
        # would often put the same ones straight back; then everything may come back
        current, _ = local_search(inst, kept, forbidden=removed)
        current, cur_profit = local_search(inst, current)
        if cur_profit > best_profit + GAIN_TOL:
            best, best_profit = list(current), cur_profit
            S, stale = 1, 0
        else:
            stale += 1
        R += S
        S += 1
        if current and R >= len(current):
            R -= len(current)
        if S >= s_max:
            S = 1
    return best, best_profit

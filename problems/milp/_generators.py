"""Seeded generators for the MILP families of FMIP's benchmark (Sec. 5, App. C).

* ``set_cover``, ``combinatorial_auction``, ``independent_set``: Gasse et al. (2019)'s generators
  with their guarantees and price rules (see :mod:`._gasse`);
* ``intcover``: general integers and continuous variables with infinite upper bounds (ours,
  :func:`._gasse.integer_cover`);
* ``gisp``: generalized independent set (Colombi et al. 2017): removable edges carry a cost.
* ``fcmnf``: fixed-charge multi-commodity network flow (continuous arc flows + binary arc
  design variables), the family with continuous variables.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from ._gasse import combinatorial_auction, independent_set, integer_cover, set_cover
from ._instance import MILPInstance

INF = np.inf


def gisp(n_nodes: int = 60, edge_prob: float = 0.25, removable_frac: float = 0.5,
         seed: int = 0) -> MILPInstance:
    """max sum r_v x_v - sum_{e in E2} c_e y_e with x_i + x_j - y_e <= 1 (e in E2),
    x_i + x_j <= 1 (e not in E2), all binary; Colombi et al.'s scheme: node revenue 100,
    removable-edge cost uniform in 1..100, an Erdos-Renyi graph."""
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n_nodes, 1)
    mask = rng.random(len(iu)) < edge_prob
    edges = list(zip(iu[mask].tolist(), ju[mask].tolist()))
    removable = rng.random(len(edges)) < removable_frac
    n_y = int(removable.sum())
    n = n_nodes + n_y
    rows, cols, vals = [], [], []
    y = n_nodes
    for r, ((i, j), rem) in enumerate(zip(edges, removable)):
        rows += [r, r]
        cols += [i, j]
        vals += [1.0, 1.0]
        if rem:
            rows.append(r)
            cols.append(y)
            vals.append(-1.0)
            y += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(len(edges), n))
    revenue = np.full(n_nodes, 100.0)
    cost = rng.integers(1, 101, size=n_y).astype(float)
    c = np.concatenate([-revenue, cost])
    return MILPInstance(f"gisp_{n_nodes}_s{seed}", c, A, np.full(len(edges), -INF),
                        np.ones(len(edges)), np.zeros(n), np.ones(n), np.ones(n, bool),
                        sense=-1, family="gisp")


def fcmnf(n_nodes: int = 12, n_arcs: int = 40, n_commodities: int = 8,
          seed: int = 0) -> MILPInstance:
    """Fixed-charge multi-commodity network flow.

    min sum_a (sum_k cost_a x_a^k) + f_a y_a  s.t. flow conservation for each node and commodity,
    sum_k x_a^k <= u_a y_a, 0 <= x_a^k <= d_k (continuous), y_a binary. A Hamiltonian cycle
    with capacity for the total demand is always included, so every instance is feasible.
    """
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_nodes)
    arc_set = {(int(perm[i]), int(perm[(i + 1) % n_nodes])) for i in range(n_nodes)}
    while len(arc_set) < n_arcs:
        i, j = rng.choice(n_nodes, size=2, replace=False)
        arc_set.add((int(i), int(j)))
    arcs = sorted(arc_set)
    n_a, K = len(arcs), n_commodities
    od = [tuple(int(v) for v in rng.choice(n_nodes, size=2, replace=False)) for _ in range(K)]
    demand = rng.integers(10, 51, size=K).astype(float)
    var_cost = rng.integers(1, 11, size=n_a).astype(float)
    cap = rng.integers(60, 161, size=n_a).astype(float)
    # the cycle arcs can carry every commodity at once, so each instance is feasible
    cycle = {(int(perm[i]), int(perm[(i + 1) % n_nodes])) for i in range(n_nodes)}
    cap[[a for a, arc in enumerate(arcs) if arc in cycle]] = demand.sum()
    fixed = rng.integers(100, 401, size=n_a).astype(float)
    n = n_a * K + n_a  # x[a, k] at a*K + k, then y[a]
    rows, cols, vals = [], [], []
    lo, hi = [], []
    r = 0
    for k in range(K):
        s, t = od[k]
        for v in range(n_nodes):
            for a, (i, j) in enumerate(arcs):
                if i == v:
                    rows.append(r)
                    cols.append(a * K + k)
                    vals.append(1.0)
                elif j == v:
                    rows.append(r)
                    cols.append(a * K + k)
                    vals.append(-1.0)
            b = demand[k] if v == s else (-demand[k] if v == t else 0.0)
            lo.append(b)
            hi.append(b)
            r += 1
    for a in range(n_a):
        for k in range(K):
            rows.append(r)
            cols.append(a * K + k)
            vals.append(1.0)
        rows.append(r)
        cols.append(n_a * K + a)
        vals.append(-cap[a])
        lo.append(-INF)
        hi.append(0.0)
        r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, n))
    c = np.concatenate([np.repeat(var_cost, K), fixed])
    ub = np.concatenate([np.tile(demand, n_a), np.ones(n_a)])
    is_int = np.concatenate([np.zeros(n_a * K, bool), np.ones(n_a, bool)])
    inst = MILPInstance(f"fcmnf_{n_nodes}x{n_a}x{K}_s{seed}", c, A, np.array(lo), np.array(hi),
                        np.zeros(n), ub, is_int, family="fcmnf")
    inst.meta.update(arcs=arcs, od=od, demand=demand.tolist())
    return inst


GENERATORS: dict[str, Callable[..., MILPInstance]] = {
    "setcover": set_cover,
    "cauctions": combinatorial_auction,
    "indset": independent_set,
    "intcover": integer_cover,
    "gisp": gisp,
    "fcmnf": fcmnf,
}


def generate(family: str, seed: int, **size) -> MILPInstance:
    """One instance of ``family`` (a key of :data:`GENERATORS`)."""
    try:
        gen = GENERATORS[family]
    except KeyError:
        raise KeyError(f"unknown MILP family {family!r}; known: {', '.join(GENERATORS)}") from None
    return gen(seed=seed, **size)

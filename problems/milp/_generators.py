"""Seeded generators for the MILP families of FMIP's benchmark (Sec. 5, App. C), at CPU scale.

Each follows the standard generator the learning-to-branch / ML4CO literature (and FMIP's data)
uses, shrunk in size:

* ``set_cover``: Balas & Ho (1980) as in Gasse et al. (2019) / Ecole: a random 0/1 matrix of a
  given density where every row is covered at least twice; costs uniform in 1..100.
* ``combinatorial_auction``: bids on bundles of items (Leyton-Brown et al. 2000 style, a reduced
  "arbitrary relationships" scheme: bundles grow along an item-compatibility graph, prices are
  the sum of private item values times a super-additive factor); each item sold at most once.
* ``independent_set``: maximum independent set on a Barabasi-Albert graph, written with clique
  inequalities from a greedy clique partition of the edges (as Ecole does).
* ``gisp``: generalized independent set (Colombi et al. 2017): removable edges carry a cost.
* ``fcmnf``: fixed-charge multi-commodity network flow (continuous arc flows + binary arc
  design variables), the family with continuous variables.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._instance import MILPInstance

INF = np.inf


def set_cover(n_rows: int = 100, n_cols: int = 200, density: float = 0.05,
              seed: int = 0) -> MILPInstance:
    """min c x, A x >= 1, x binary (Balas & Ho)."""
    rng = np.random.default_rng(seed)
    nnz_per_row = max(2, int(round(density * n_cols)))
    rows, cols = [], []
    for i in range(n_rows):
        chosen = rng.choice(n_cols, size=nnz_per_row, replace=False)
        rows += [i] * nnz_per_row
        cols += chosen.tolist()
    # every column must appear somewhere, otherwise it is a dead variable
    unused = np.setdiff1d(np.arange(n_cols), cols)
    for j in unused:
        rows.append(int(rng.integers(n_rows)))
        cols.append(int(j))
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_rows, n_cols))
    A.data[:] = 1.0  # duplicates summed above: keep it 0/1
    c = rng.integers(1, 101, size=n_cols).astype(float)
    return MILPInstance(f"setcover_{n_rows}x{n_cols}_s{seed}", c, A, np.ones(n_rows),
                        np.full(n_rows, INF), np.zeros(n_cols), np.ones(n_cols),
                        np.ones(n_cols, bool), family="setcover")


def combinatorial_auction(n_items: int = 40, n_bids: int = 150, seed: int = 0,
                          add_prob: float = 0.65, additivity: float = 0.2) -> MILPInstance:
    """max sum price_b x_b, each item in at most one accepted bid, x binary."""
    rng = np.random.default_rng(seed)
    values = 1.0 + 99.0 * rng.random(n_items)  # common item values
    compat = rng.random((n_items, n_items))
    compat = (compat + compat.T) / 2
    np.fill_diagonal(compat, 0.0)
    bundles, prices = [], []
    seen = set()
    while len(bundles) < n_bids:
        private = values + 10.0 * rng.standard_normal(n_items)  # bidder's private values
        first = int(rng.choice(n_items, p=np.maximum(private, 1e-3) / np.maximum(private, 1e-3).sum()))
        bundle = [first]
        # grow the bundle along compatible items while a coin says so
        while rng.random() < add_prob and len(bundle) < n_items:
            w = compat[bundle].sum(axis=0)
            w[bundle] = 0.0
            if w.sum() <= 0:
                break
            bundle.append(int(rng.choice(n_items, p=w / w.sum())))
        key = tuple(sorted(bundle))
        if key in seen:
            continue
        seen.add(key)
        price = private[list(key)].sum() * (1.0 + additivity * (len(key) - 1) / n_items)
        if price <= 0:
            continue
        bundles.append(key)
        prices.append(price)
    rows = [i for b in bundles for i in b]
    cols = [j for j, b in enumerate(bundles) for _ in b]
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_items, n_bids))
    c = -np.round(np.asarray(prices), 2)  # stored as minimisation
    return MILPInstance(f"cauction_{n_items}x{n_bids}_s{seed}", c, A, np.full(n_items, -INF),
                        np.ones(n_items), np.zeros(n_bids), np.ones(n_bids), np.ones(n_bids, bool),
                        sense=-1, family="cauctions")


def barabasi_albert(n: int, m: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Edges of a Barabasi-Albert preferential-attachment graph (m edges per new node)."""
    edges = [(i, j) for i in range(m + 1) for j in range(i + 1, m + 1)]
    degree = np.zeros(n)
    for i, j in edges:
        degree[i] += 1
        degree[j] += 1
    for v in range(m + 1, n):
        p = degree[:v] / degree[:v].sum()
        targets = rng.choice(v, size=m, replace=False, p=p)
        for t in targets:
            edges.append((int(t), v))
            degree[t] += 1
            degree[v] += 1
    return edges


def _greedy_clique_partition(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """Cover every edge by a clique, greedily from the highest-degree node (Ecole's scheme)."""
    nbrs = [set() for _ in range(n)]
    for i, j in edges:
        nbrs[i].add(j)
        nbrs[j].add(i)
    left = [set(s) for s in nbrs]  # edges not yet covered
    cliques = []
    for v in sorted(range(n), key=lambda u: -len(nbrs[u])):
        while left[v]:
            clique = [v]
            for u in sorted(left[v], key=lambda u: -len(left[u])):
                if all(u in nbrs[w] for w in clique):
                    clique.append(u)
            for a in clique:
                for b in clique:
                    left[a].discard(b)
            cliques.append(clique)
    return cliques


def independent_set(n_nodes: int = 150, affinity: int = 4, seed: int = 0) -> MILPInstance:
    """max sum x_v, sum_{v in K} x_v <= 1 for each clique K of an edge clique cover."""
    rng = np.random.default_rng(seed)
    edges = barabasi_albert(n_nodes, affinity, rng)
    cliques = _greedy_clique_partition(n_nodes, edges)
    rows = [i for i, k in enumerate(cliques) for _ in k]
    cols = [v for k in cliques for v in k]
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cliques), n_nodes))
    inst = MILPInstance(f"indset_{n_nodes}_s{seed}", -np.ones(n_nodes), A,
                        np.full(len(cliques), -INF), np.ones(len(cliques)), np.zeros(n_nodes),
                        np.ones(n_nodes), np.ones(n_nodes, bool), sense=-1, family="indset")
    inst.meta["edges"] = edges
    return inst


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
    arcs = {(int(perm[i]), int(perm[(i + 1) % n_nodes])) for i in range(n_nodes)}
    while len(arcs) < n_arcs:
        i, j = rng.choice(n_nodes, size=2, replace=False)
        arcs.add((int(i), int(j)))
    arcs = sorted(arcs)
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
                    rows.append(r); cols.append(a * K + k); vals.append(1.0)
                elif j == v:
                    rows.append(r); cols.append(a * K + k); vals.append(-1.0)
            b = demand[k] if v == s else (-demand[k] if v == t else 0.0)
            lo.append(b); hi.append(b)
            r += 1
    for a in range(n_a):
        for k in range(K):
            rows.append(r); cols.append(a * K + k); vals.append(1.0)
        rows.append(r); cols.append(n_a * K + a); vals.append(-cap[a])
        lo.append(-INF); hi.append(0.0)
        r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, n))
    c = np.concatenate([np.repeat(var_cost, K), fixed])
    ub = np.concatenate([np.tile(demand, n_a), np.ones(n_a)])
    is_int = np.concatenate([np.zeros(n_a * K, bool), np.ones(n_a, bool)])
    inst = MILPInstance(f"fcmnf_{n_nodes}x{n_a}x{K}_s{seed}", c, A, np.array(lo), np.array(hi),
                        np.zeros(n), ub, is_int, family="fcmnf")
    inst.meta.update(arcs=arcs, od=od, demand=demand.tolist())
    return inst


GENERATORS = {
    "setcover": set_cover,
    "cauctions": combinatorial_auction,
    "indset": independent_set,
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

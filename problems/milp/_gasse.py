"""The three generators of Gasse et al. (2019), "Exact combinatorial optimization with graph
convolutional neural networks" (code: ds4dm/learn2branch, ``01_generate_instances.py``), written
from the paper's description and that code's rules, plus one general-integer family of ours.

* :func:`set_cover` — Balas & Ho (1980): ``int(rows * cols * density)`` non-zeros, every column
  covers at least two rows and every row is covered by at least one column; costs 1..100.
  Paper sizes: 500 rows x 1000 columns, density 0.05 (transfer: 1000 and 2000 rows).
* :func:`combinatorial_auction` — Leyton-Brown et al. (2000), "arbitrary relationships": common
  item values in [1, 100], private values ``value + 100 * 0.5 * (2 * interest - 1)``, bundles
  grown by interest x mean compatibility (add-item probability 0.9), price
  ``sum(private values) + |bundle| ** 1.2``; each bidder also places up to 5 substitutable bids
  (one per item of the first bundle, same size, priced by the same rule) that respect the budget
  (1.5 x the first price) and the resale floor (0.5 x its resale value); a bidder with more than
  two bids gets a dummy item (XOR). Paper sizes: 100 items x 500 bids (transfer 200x1000, 300x1500).
* :func:`independent_set` — Bergman et al. (2016) as in Gasse et al.: a Barabasi-Albert graph
  (affinity 4, the first new node joined to all earlier ones), nodes partitioned greedily into
  cliques (highest degree first); one inequality per clique of two or more nodes and one per
  edge that no clique covers. Paper sizes: 500 nodes (transfer 1000, 1500).
* :func:`integer_cover` (ours, not in Gasse et al.) — general integers with *infinite* upper
  bounds and unbounded continuous shortfall variables: ``min c x + p s`` with
  ``sum_j a_ij x_j + s_i >= d_i``, ``x`` in Z_{>=0} (no upper bound), ``s >= 0`` continuous (no
  upper bound), plus knapsack-style budget rows ``sum_j w_kj x_j <= W_k``. Coefficients 0..9,
  demands 20..80: a multi-cover whose integer part HiGHS does not close quickly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._instance import MILPInstance

INF = np.inf


def set_cover(n_rows: int = 500, n_cols: int = 1000, density: float = 0.05, seed: int = 0,
              max_coef: int = 100) -> MILPInstance:
    """min c x, A x >= 1, x binary; Balas & Ho with Gasse et al.'s row/column guarantees."""
    rng = np.random.default_rng(seed)
    nnz = int(n_rows * n_cols * density)
    if nnz < n_rows or nnz < 2 * n_cols:
        raise ValueError("density too low: need >= 1 column per row and >= 2 rows per column")
    # how many rows each column covers: two for every column, the rest at random
    col_of = rng.integers(n_cols, size=nnz)
    col_of[: 2 * n_cols] = np.repeat(np.arange(n_cols), 2)
    counts = np.bincount(col_of, minlength=n_cols)
    rows = np.empty(nnz, dtype=int)
    rows[:n_rows] = rng.permutation(n_rows)  # every row appears at least once
    i = 0
    for n in counts:  # fill column by column with distinct rows
        if i >= n_rows:
            rows[i:i + n] = rng.choice(n_rows, size=n, replace=False)
        elif i + n > n_rows:
            left = np.setdiff1d(np.arange(n_rows), rows[i:n_rows], assume_unique=True)
            rows[n_rows:i + n] = rng.choice(left, size=i + n - n_rows, replace=False)
        i += n
    indptr = np.concatenate([[0], np.cumsum(counts)])
    A = sp.csc_matrix((np.ones(nnz), rows, indptr), shape=(n_rows, n_cols)).tocsr()
    c = (rng.integers(max_coef, size=n_cols) + 1).astype(float)
    return MILPInstance(f"setcover_{n_rows}x{n_cols}_s{seed}", c, A, np.ones(n_rows),
                        np.full(n_rows, INF), np.zeros(n_cols), np.ones(n_cols),
                        np.ones(n_cols, bool), family="setcover")


def _next_item(mask: np.ndarray, interests: np.ndarray, compats: np.ndarray,
               rng: np.random.Generator) -> int:
    p = (1 - mask) * interests * compats[mask.astype(bool)].mean(axis=0)
    return int(rng.choice(len(interests), p=p / p.sum()))


def combinatorial_auction(n_items: int = 100, n_bids: int = 500, seed: int = 0,
                          min_value: float = 1.0, max_value: float = 100.0,
                          value_deviation: float = 0.5, add_item_prob: float = 0.9,
                          max_sub_bids: int = 5, additivity: float = 0.2,
                          budget_factor: float = 1.5, resale_factor: float = 0.5) -> MILPInstance:
    """max sum price_b x_b, each (real or dummy) item in at most one accepted bid, x binary."""
    rng = np.random.default_rng(seed)
    values = min_value + (max_value - min_value) * rng.random(n_items)
    compats = np.triu(rng.random((n_items, n_items)), k=1)
    compats = compats + compats.T
    compats = compats / compats.sum(1)
    bids: list[tuple[list[int], float]] = []
    n_dummy = 0
    while len(bids) < n_bids:
        interests = rng.random(n_items)
        private = values + max_value * value_deviation * (2 * interests - 1)
        mask = np.zeros(n_items, int)
        mask[rng.choice(n_items, p=interests / interests.sum())] = 1
        while rng.random() < add_item_prob and mask.sum() < n_items:
            mask[_next_item(mask, interests, compats, rng)] = 1
        bundle = np.flatnonzero(mask)
        price = private[bundle].sum() + len(bundle) ** (1 + additivity)
        if price < 0:
            continue
        own = {frozenset(bundle.tolist()): price}
        subs = []
        for item in bundle:  # a substitute shares at least this item with the first bundle
            m = np.zeros(n_items, int)
            m[item] = 1
            while m.sum() < len(bundle):
                m[_next_item(m, interests, compats, rng)] = 1
            sb = np.flatnonzero(m)
            subs.append((sb, private[sb].sum() + len(sb) ** (1 + additivity)))
        budget, floor = budget_factor * price, resale_factor * values[bundle].sum()
        for sb, sp_ in sorted(subs, key=lambda s: -s[1]):
            if len(own) >= max_sub_bids + 1 or len(bids) + len(own) >= n_bids:
                break
            key = frozenset(sb.tolist())
            if sp_ < 0 or sp_ > budget or values[sb].sum() < floor or key in own:
                continue
            own[key] = sp_
        dummy = []
        if len(own) > 2:  # XOR between this bidder's bids
            dummy = [n_items + n_dummy]
            n_dummy += 1
        bids += [(sorted(b) + dummy, p) for b, p in own.items()]
    n_rows = n_items + n_dummy
    rows = [i for b, _ in bids for i in b]
    cols = [j for j, (b, _) in enumerate(bids) for _ in b]
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_rows, len(bids)))
    used = np.asarray(A.sum(axis=1)).ravel() > 0
    A = A[used]
    c = -np.asarray([p for _, p in bids])  # stored as minimisation
    m, n = A.shape
    return MILPInstance(f"cauction_{n_items}x{n_bids}_s{seed}", c, A, np.full(m, -INF),
                        np.ones(m), np.zeros(n), np.ones(n), np.ones(n, bool), sense=-1,
                        family="cauctions")


def barabasi_albert(n: int, affinity: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Gasse et al.'s Barabasi-Albert graph: node ``affinity`` joins all earlier nodes, every
    later node joins ``affinity`` distinct earlier nodes with probability proportional to degree."""
    if not 1 <= affinity < n:
        raise ValueError("need 1 <= affinity < n")
    edges: list[tuple[int, int]] = []
    degree = np.zeros(n)
    for v in range(affinity, n):
        if v == affinity:
            nbrs = np.arange(v)
        else:
            nbrs = rng.choice(v, affinity, replace=False, p=degree[:v] / (2 * len(edges)))
        for u in nbrs:
            edges.append((int(u), v))
            degree[u] += 1
            degree[v] += 1
    return edges


def greedy_clique_partition(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """Partition the nodes into cliques: take the highest-degree node left, add its remaining
    neighbours in decreasing degree when they keep the set a clique, repeat."""
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for i, j in edges:
        nbrs[i].add(j)
        nbrs[j].add(i)
    deg = np.array([len(s) for s in nbrs])
    left = [int(v) for v in np.argsort(-deg, kind="stable")]
    alive = set(left)
    cliques = []
    for v in left:
        if v not in alive:
            continue
        alive.discard(v)
        clique = [v]
        for u in sorted(nbrs[v] & alive, key=lambda u: (-deg[u], u)):
            if all(u in nbrs[w] for w in clique):
                clique.append(u)
        alive.difference_update(clique)
        cliques.append(clique)
    return cliques


def independent_set(n_nodes: int = 500, affinity: int = 4, seed: int = 0) -> MILPInstance:
    """max sum x_v, one row per clique (>= 2 nodes) of the partition and per uncovered edge."""
    rng = np.random.default_rng(seed)
    edges = barabasi_albert(n_nodes, affinity, rng)
    cliques = greedy_clique_partition(n_nodes, edges)
    which = np.empty(n_nodes, int)
    for k, cl in enumerate(cliques):
        which[cl] = k
    groups = [sorted(cl) for cl in cliques if len(cl) > 1]
    groups += [[i, j] for i, j in edges if which[i] != which[j]]
    covered = {v for g in groups for v in g}
    groups += [[v] for v in range(n_nodes) if v not in covered]  # isolated: trivial row
    rows = [r for r, g in enumerate(groups) for _ in g]
    cols = [v for g in groups for v in g]
    m = len(groups)
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, n_nodes))
    inst = MILPInstance(f"indset_{n_nodes}_s{seed}", -np.ones(n_nodes), A, np.full(m, -INF),
                        np.ones(m), np.zeros(n_nodes), np.ones(n_nodes), np.ones(n_nodes, bool),
                        sense=-1, family="indset")
    inst.meta["edges"] = edges
    return inst


def integer_cover(n_rows: int = 60, n_cols: int = 120, n_budget: int = 4, density: float = 0.15,
                  seed: int = 0) -> MILPInstance:
    """General-integer multi-cover with unbounded integers and unbounded continuous shortfall
    (ours; see the module docstring). Always feasible: ``x = 0, s = d`` satisfies every row."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 10, size=(n_rows, n_cols)) * (rng.random((n_rows, n_cols)) < density)
    for i in np.flatnonzero(a.sum(1) == 0):  # every row can be covered by some column
        a[i, rng.integers(n_cols)] = rng.integers(1, 10)
    d = rng.integers(20, 81, size=n_rows).astype(float)
    cost = rng.integers(10, 101, size=n_cols).astype(float)
    # a shortfall unit costs more than covering it with the cheapest column of the row
    ratio = np.where(a > 0, cost[None, :] / np.maximum(a, 1), np.inf).min(1)
    penalty = np.ceil(3.0 * ratio)
    w = rng.integers(1, 10, size=(n_budget, n_cols)).astype(float)
    W = np.floor(0.25 * w.sum(1) * d.mean() / a[a > 0].mean() / density / n_cols * 2.0)
    top = sp.hstack([sp.csr_matrix(a.astype(float)), sp.identity(n_rows, format="csr")])
    bottom = sp.hstack([sp.csr_matrix(w), sp.csr_matrix((n_budget, n_rows))])
    A = sp.vstack([top, bottom]).tocsr()
    n = n_cols + n_rows
    row_lo = np.concatenate([d, np.full(n_budget, -INF)])
    row_hi = np.concatenate([np.full(n_rows, INF), W])
    return MILPInstance(f"intcover_{n_rows}x{n_cols}_s{seed}", np.concatenate([cost, penalty]), A,
                        row_lo, row_hi, np.zeros(n), np.full(n, INF),
                        np.concatenate([np.ones(n_cols, bool), np.zeros(n_rows, bool)]),
                        family="intcover")

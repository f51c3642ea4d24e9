"""The random-walk view of deletion on a weighted undirected graph (small dense matrices).

A walk on weights ``W`` steps ``u -> v`` with probability ``W[u, v] / d_u``. Deleting ``p`` by
the *star-mesh transform* (Schur complement of the Laplacian, self-loops kept) gives
``W'[u, v] = W[u, v] + W[u, p] W[p, v] / d_p`` on the other nodes: every degree is unchanged, and
the walk on ``W'`` is exactly the old walk watched only off ``p``. Hence hitting times on ``W'``
equal the old hitting times counting only the steps spent off ``p``
(:func:`hitting_times` with ``cost``), the exact statement behind the paper's framework.

:func:`sampled_star_mesh` is the randomised version: each neighbour ``u`` of ``p`` draws one
partner ``v`` with probability ``W[p, v] / d_p`` and gets the edge ``(u, v)`` with weight
``W[u,p] W[p,v] / (W[u,p] + W[p,v])`` (Kyng–Sachdeva's unbiased clique sampling); self-loops
restore every degree. Its expectation is exactly the star-mesh graph, with only ``O(deg p)`` new
edges instead of ``deg(p)^2``.
"""

from __future__ import annotations

import numpy as np


def star_mesh(W: np.ndarray, p: int) -> np.ndarray:
    W = np.asarray(W, dtype=float)
    keep = np.arange(len(W)) != p
    w = W[keep, p]
    return W[np.ix_(keep, keep)] + np.outer(w, w) / W[p].sum()


def sampled_star_mesh(W: np.ndarray, p: int, rng: np.random.Generator) -> np.ndarray:
    W = np.asarray(W, dtype=float)
    keep = np.arange(len(W)) != p
    w = W[keep, p]
    out = W[np.ix_(keep, keep)].copy()
    np.fill_diagonal(out, 0.0)
    nbrs = np.flatnonzero(w > 0)
    for u in nbrs:
        v = int(rng.choice(len(w), p=w / w.sum()))
        if v != u:
            c = w[u] * w[v] / (w[u] + w[v])
            out[u, v] += c
            out[v, u] += c
    deg = W[keep].sum(1)  # original degrees (edges to p included)
    out[np.diag_indices_from(out)] = deg - out.sum(1)
    return out


def hitting_times(W: np.ndarray, target: int, cost: np.ndarray | None = None) -> np.ndarray:
    """Expected total ``cost`` of the steps taken before first reaching ``target`` (cost 1 per step
    by default; a step is charged to the node it leaves), from every start node."""
    W = np.asarray(W, dtype=float)
    n = len(W)
    P = W / W.sum(1, keepdims=True)
    c = np.ones(n) if cost is None else np.asarray(cost, dtype=float)
    rest = np.arange(n) != target
    h = np.zeros(n)
    h[rest] = np.linalg.solve(np.eye(rest.sum()) - P[np.ix_(rest, rest)], c[rest])
    return h


def random_weighted_graph(n: int, density: float, rng: np.random.Generator) -> np.ndarray:
    """A connected random weighted graph: a ring plus random chords, weights in (0.1, 1]."""
    W = np.zeros((n, n))
    for i in range(n):
        W[i, (i + 1) % n] = W[(i + 1) % n, i] = rng.uniform(0.1, 1.0)
    mask = np.triu(rng.random((n, n)) < density, 1)
    vals = rng.uniform(0.1, 1.0, (n, n))
    W = np.where(mask | mask.T, np.maximum(W, np.triu(vals, 1) + np.triu(vals, 1).T), W)
    np.fill_diagonal(W, 0.0)
    return W

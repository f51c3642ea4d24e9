"""Repair rules applied when a node leaves an HNSW layer, and the local view they see.

A rule is called once per layer of the deleted node ``p`` with keyword arguments describing only
``p``'s neighbourhood ``N = in(p) | out(p)`` on that layer, in local indices ``0..k-1``:

* ``d_p`` (k,) Euclidean distances from ``p`` to each node of ``N``;
* ``D`` (k, k) pairwise Euclidean distances within ``N``;
* ``is_in`` / ``is_out`` (k,) bool: node ``i`` linked to ``p`` / ``p`` linked to node ``i``;
* ``linked`` (k, k) bool: ``j`` is already in ``i``'s list (after ``p`` was unlinked);
* ``free`` (k,) int: free slots of ``i``'s list (``max_degree`` minus its degree);
* ``max_degree`` int, and ``seed`` int (for randomised rules).

It returns, per local node, the ordered list of local nodes to append to its list. The index (not
the rule) applies them: out-of-range ids, self-links and duplicates are refused, and additions
beyond a node's free slots are dropped. Rules here:

* :func:`no_patch` — nothing (the hole stays);
* :func:`local_reconnect` — the naive repair: each in-neighbour of ``p`` takes ``p``'s
  out-neighbours, closest to itself first;
* :func:`robust_prune` — FreshDiskANN-style repair: the in-neighbours take ``p``'s out-neighbours
  through the alpha-pruning of ``RobustPrune`` (the strongest non-local baseline the slot's local
  view allows);
* :func:`spatch_deterministic` / :func:`spatch_random` — the random-walk deletion of Mishra,
  Naamad, Wagner & Zhang (ICLR 2026, arXiv 2512.18060): the star-mesh transform replaces ``p`` by
  a clique on ``N`` with weights ``w_i w_j / sum(w)`` (``w_i = exp(-d_p[i]^2 / h^2)``, ``h`` the
  median of ``d_p``: our choice, a softmax walk's weights for a query sitting at ``p``; the
  paper's HNSW-level weights were not recovered, docs/families/hnsw.md);
  the randomised rule samples that clique (each node draws partners with probability ``∝ w_j``),
  the deterministic one keeps the heaviest clique edges, greedily over all pairs. See
  :mod:`hifo.problems.hnsw._walks` for the exact graph-level transform and its hitting-time
  property. Departure: the clique is cut to the HNSW degree caps (free slots), the paper's exact
  sparsification thresholds were not available to us.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def local_view(index: Any, p: int, layer: int, seed: int) -> tuple[dict[str, Any], list[int]]:
    """The rule's keyword arguments for deleting ``p`` from ``layer`` (computed before unlinking;
    ``linked``/``free`` describe the lists *after* ``p`` is unlinked) and the global ids of ``N``."""
    out = list(index.links[layer].get(p, []))
    inn = sorted(index.rev[layer].get(p, set()))
    ids = sorted(set(out) | set(inn))
    pos = {v: i for i, v in enumerate(ids)}
    X = index.X
    P = X[ids] if ids else np.zeros((0, index.dim))
    d_p = np.sqrt(((P - X[p]) ** 2).sum(1))
    D = np.sqrt(np.maximum(((P[:, None, :] - P[None, :, :]) ** 2).sum(-1), 0.0))
    k, cap = len(ids), index.max_degree(layer)
    linked = np.zeros((k, k), dtype=bool)
    free = np.zeros(k, dtype=np.int64)
    for i, u in enumerate(ids):
        lst = [v for v in index.links[layer][u] if v != p]
        free[i] = cap - len(lst)
        for v in lst:
            if v in pos:
                linked[i, pos[v]] = True
    is_in = np.array([u in index.rev[layer].get(p, ()) for u in ids], dtype=bool)
    is_out = np.array([u in out for u in ids], dtype=bool)
    view = {"d_p": d_p, "D": D, "is_in": is_in, "is_out": is_out, "linked": linked, "free": free,
            "max_degree": int(cap), "seed": int(seed)}
    return view, ids


def check_additions(additions: Any, k: int) -> list[list[int]]:
    """``additions`` as k lists of ints in range, or ``ValueError``."""
    if additions is None:
        return [[] for _ in range(k)]
    if isinstance(additions, np.ndarray):
        additions = additions.tolist()
    if not isinstance(additions, (list, tuple)) or len(additions) != k:
        raise ValueError(f"the repair rule must return {k} lists (one per neighbour), got {type(additions).__name__}"
                         f" of length {len(additions) if hasattr(additions, '__len__') else '?'}")
    out = []
    for i, row in enumerate(additions):
        if isinstance(row, np.ndarray):
            row = row.tolist()
        if not isinstance(row, (list, tuple)):
            raise ValueError(f"additions[{i}] must be a list of local indices")
        clean = []
        for j in row:
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= int(j) < k:
                raise ValueError(f"additions[{i}] holds {j!r}, not a local index in 0..{k - 1}")
            clean.append(int(j))
        out.append(clean)
    return out


def apply_additions(index: Any, layer: int, ids: list[int], free: np.ndarray, additions: Any) -> list[list[int]]:
    """Append the rule's additions (validated, capped at free slots); the applied edges as global
    ``[u, v]`` pairs."""
    rows = check_additions(additions, len(ids))
    applied = []
    for i, row in enumerate(rows):
        u = ids[i]
        lst = list(index.links[layer][u])
        room = int(free[i])
        for j in row:
            if room <= 0:
                break
            v = ids[j]
            if j == i or v in lst:
                continue
            lst.append(v)
            applied.append([u, v])
            room -= 1
        if len(lst) != len(index.links[layer][u]):
            index._set_links(layer, u, lst)
    return applied


# ---- the rules (same signature as the evaluator's slot) ------------------------------------
def no_patch(d_p, D, is_in, is_out, linked, free, max_degree, seed):  # noqa: ANN001
    return [[] for _ in range(len(d_p))]


def local_reconnect(d_p, D, is_in, is_out, linked, free, max_degree, seed):  # noqa: ANN001
    k = len(d_p)
    out = []
    for i in range(k):
        if not is_in[i]:
            out.append([])
            continue
        cand = [j for j in range(k) if is_out[j] and j != i and not linked[i, j]]
        out.append(sorted(cand, key=lambda j: D[i, j])[: max(int(free[i]), 0)])
    return out


def clique_weights(d_p: np.ndarray) -> np.ndarray:
    """Star-mesh clique weights ``w_i w_j / sum(w)`` from the Gaussian edge weights to ``p``."""
    d_p = np.asarray(d_p, dtype=float)
    if len(d_p) == 0:
        return np.zeros((0, 0))
    h = float(np.median(d_p)) or 1.0
    w = np.exp(-(d_p / h) ** 2)
    S = np.outer(w, w) / w.sum()
    np.fill_diagonal(S, 0.0)
    return S


def spatch_deterministic(d_p, D, is_in, is_out, linked, free, max_degree, seed):  # noqa: ANN001
    k = len(d_p)
    S = clique_weights(d_p)
    room = np.maximum(np.asarray(free, dtype=int), 0).copy()
    out: list[list[int]] = [[] for _ in range(k)]
    order = np.argsort(-S, axis=None, kind="stable")
    for flat in order:
        i, j = divmod(int(flat), k)
        if i == j or S[i, j] <= 0 or linked[i, j] or room[i] <= 0:
            continue
        out[i].append(j)
        room[i] -= 1
    return out


def spatch_random(d_p, D, is_in, is_out, linked, free, max_degree, seed):  # noqa: ANN001
    k = len(d_p)
    rng = np.random.default_rng(seed)
    S = clique_weights(d_p)
    out = []
    for i in range(k):
        probs = np.where(linked[i], 0.0, S[i])
        n = min(max(int(free[i]), 0), int((probs > 0).sum()))
        if n == 0:
            out.append([])
            continue
        out.append(rng.choice(k, size=n, replace=False, p=probs / probs.sum()).tolist())
    return out


def robust_prune(d_p, D, is_in, is_out, linked, free, max_degree, seed, alpha: float = 1.2):  # noqa: ANN001
    """FreshDiskANN's delete consolidation (Singh et al. 2021, Algorithm 4) cut to the local view:
    every in-neighbour ``i`` of ``p`` takes ``p``'s out-neighbours as candidates and keeps them by
    ``RobustPrune`` (closest first; a candidate ``j`` is dropped when a node ``m`` already kept, or
    already linked from ``i`` inside ``N``, has ``alpha * D[m, j] <= D[i, j]``). Departure: FreshDiskANN
    re-prunes ``i``'s whole list (its links outside ``N`` included) and may drop edges; here only the
    free slots are filled and only ``N`` is visible."""
    k = len(d_p)
    out: list[list[int]] = []
    for i in range(k):
        if not is_in[i] or free[i] <= 0:
            out.append([])
            continue
        kept = [m for m in range(k) if linked[i, m]]
        add: list[int] = []
        for j in sorted((j for j in range(k) if is_out[j] and j != i and not linked[i, j]), key=lambda j: D[i, j]):
            if len(add) >= int(free[i]):
                break
            if any(alpha * D[m, j] <= D[i, j] for m in kept):
                continue
            add.append(j)
            kept.append(j)
        out.append(add)
    return out


RULES = {"no_patch": no_patch, "local_reconnect": local_reconnect,
         "spatch": spatch_deterministic, "spatch_random": spatch_random, "robust_prune": robust_prune}

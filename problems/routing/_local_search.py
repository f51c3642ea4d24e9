"""2-opt and relocate local search on a tour, vectorised with numpy.

These are the two operators of EoH's and ReEvo's guided local search (``gls_operators.py``:
``two_opt_a2a``, ``relocate_a2a`` and their one-node variants ``*_o2a_all``), evaluated here
for all move pairs at once as ``n x n`` delta matrices instead of numba loops, with
best-improvement selection.

A tour is an int array of positions ``t[0..n-1]``, closed (``t[n-1] -> t[0]``).

* **2-opt** ``(i, j)``, ``i < j``: remove arcs ``(t[i], t[i+1])`` and ``(t[j], t[j+1])``,
  reverse ``t[i+1..j]``. Its delta ``d[a, c] + d[b, e] - d[a, b] - d[c, e]`` assumes a
  symmetric matrix (the reversed segment is walked backwards).
* **relocate** ``(i, j)``: move node ``t[i]`` to just after ``t[j]`` (``j`` not ``i`` or
  ``i - 1``). Exact for asymmetric matrices as well (no segment is reversed).

A move is improving when its delta is below ``-tol`` with ``tol`` a tiny fraction of the
mean arc, so floating-point noise never loops the search (EoH uses ``np.isclose(0, delta)``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=32)
def _two_opt_mask(n: int) -> np.ndarray:
    """Valid 2-opt pairs: ``j >= i + 2`` and not the pair (0, n-1) (those arcs touch)."""
    i, j = np.indices((n, n))
    mask = j >= i + 2
    mask[0, n - 1] = False
    mask.setflags(write=False)
    return mask


@lru_cache(maxsize=32)
def _relocate_mask(n: int) -> np.ndarray:
    """Valid relocate pairs: ``j`` is neither ``i`` nor ``i - 1`` (mod n)."""
    i, j = np.indices((n, n))
    mask = (j != i) & (j != (i - 1) % n)
    mask.setflags(write=False)
    return mask


@lru_cache(maxsize=32)
def _successor(n: int) -> np.ndarray:
    """Index of the next position on a closed tour: ``[1, 2, ..., n-1, 0]``."""
    out = np.roll(np.arange(n), -1)
    out.setflags(write=False)
    return out


def _tolerance(d: np.ndarray) -> float:
    n = d.shape[0]
    mean_arc = float(np.abs(d).sum()) / max(n * (n - 1), 1)
    return 1e-9 * max(mean_arc, 1e-12)


def two_opt_deltas(tour: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``n x n`` matrix of 2-opt deltas (``+inf`` where the pair is not a valid move)."""
    a = tour
    b = tour[_successor(tour.shape[0])]
    arc = d[a, b]
    delta = d[np.ix_(a, a)] + d[np.ix_(b, b)] - arc[:, None] - arc[None, :]
    return np.where(_two_opt_mask(tour.shape[0]), delta, np.inf)


def relocate_deltas(tour: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``n x n`` matrix of relocate deltas: row ``i`` moves ``t[i]`` after ``t[j]``."""
    x = tour
    prev = np.roll(tour, 1)
    nxt = tour[_successor(tour.shape[0])]
    removal = d[prev, nxt] - d[prev, x] - d[x, nxt]  # gain of taking x out
    arc = d[x, nxt]  # arc (t[j], t[j+1]) indexed by j
    insertion = d[np.ix_(x, x)].T + d[np.ix_(x, nxt)] - arc[None, :]
    # d[np.ix_(x, x)].T[i, j] = d[t[j], t[i]]: arriving at t[i] from t[j]
    return np.where(_relocate_mask(tour.shape[0]), removal[:, None] + insertion, np.inf)


def apply_two_opt(tour: np.ndarray, i: int, j: int) -> np.ndarray:
    out = tour.copy()
    out[i + 1:j + 1] = out[i + 1:j + 1][::-1]
    return out


def apply_relocate(tour: np.ndarray, i: int, j: int) -> np.ndarray:
    node, after = tour[i], tour[j]
    rest = np.delete(tour, i)
    k = int(np.flatnonzero(rest == after)[0])
    return np.insert(rest, k + 1, node)


def _two_opt_rows(tour: np.ndarray, d: np.ndarray, rows: np.ndarray) -> tuple[float, int, int]:
    """Best 2-opt move among pairs with one index in ``rows``: O(n) per row."""
    n = tour.shape[0]
    a = tour
    b = tour[_successor(n)]
    arc = d[a, b]
    j = np.arange(n)
    best = (np.inf, -1, -1)
    for r in set((rows % n).tolist()):
        delta = d[a[r], a] + d[b[r], b] - arc[r] - arc
        lo, hi = np.minimum(r, j), np.maximum(r, j)
        valid = (hi >= lo + 2) & ~((lo == 0) & (hi == n - 1))
        delta = np.where(valid, delta, np.inf)
        k = int(np.argmin(delta))
        if delta[k] < best[0]:
            best = (float(delta[k]), int(lo[k]), int(hi[k]))
    return best


def best_two_opt(tour: np.ndarray, d: np.ndarray, rows: np.ndarray | None = None
                 ) -> tuple[float, int, int]:
    """Best 2-opt move ``(delta, i, j)``; with ``rows``, only moves that remove the arc
    leaving one of those positions (EoH's one-node ``two_opt_o2a``)."""
    n = tour.shape[0]
    if n < 4:
        return 0.0, -1, -1
    if rows is not None:
        return _two_opt_rows(tour, d, np.asarray(rows))
    delta = two_opt_deltas(tour, d)
    flat = int(np.argmin(delta))
    i, j = divmod(flat, n)
    return float(delta[i, j]), i, j


def best_relocate(tour: np.ndarray, d: np.ndarray, rows: np.ndarray | None = None
                  ) -> tuple[float, int, int]:
    """Best relocate move ``(delta, i, j)``; with ``rows``, only moving those positions."""
    n = tour.shape[0]
    if n < 4:
        return 0.0, -1, -1
    if rows is not None:
        best = (np.inf, -1, -1)
        nxt = tour[_successor(n)]
        arc = d[tour, nxt]
        j = np.arange(n)
        for i in set((np.asarray(rows) % n).tolist()):
            x, p, s = tour[i], tour[i - 1], tour[(i + 1) % n]
            delta = (d[p, s] - d[p, x] - d[x, s]) + d[tour, x] + d[x, nxt] - arc
            delta = np.where((j != i) & (j != (i - 1) % n), delta, np.inf)
            k = int(np.argmin(delta))
            if delta[k] < best[0]:
                best = (float(delta[k]), int(i), k)
        return best
    delta = relocate_deltas(tour, d)
    flat = int(np.argmin(delta))
    i, j = divmod(flat, n)
    return float(delta[i, j]), i, j


def local_search(tour: np.ndarray, d: np.ndarray, max_moves: int | None = None,
                 operators: tuple[str, ...] = ("two_opt", "relocate")) -> tuple[np.ndarray, int]:
    """Best-improvement descent alternating the operators, as EoH's ``local_search``: each
    round applies the best improving 2-opt move, then the best improving relocate move,
    until a round improves nothing or ``max_moves`` moves (default ``50 n``) were made.

    Returns ``(tour, moves)``; the input array is not modified.
    """
    t = np.asarray(tour, dtype=np.int64).copy()
    m = np.asarray(d, dtype=np.float64)
    n = t.shape[0]
    if n < 4:
        return t, 0
    tol = _tolerance(m)
    limit = 50 * n if max_moves is None else max_moves
    moves = 0
    improved = True
    while improved and moves < limit:
        improved = False
        for op in operators:
            if moves >= limit:
                break
            if op == "two_opt":
                delta, i, j = best_two_opt(t, m)
                if delta < -tol:
                    t = apply_two_opt(t, i, j)
                    moves += 1
                    improved = True
            elif op == "relocate":
                delta, i, j = best_relocate(t, m)
                if delta < -tol:
                    t = apply_relocate(t, i, j)
                    moves += 1
                    improved = True
            else:
                raise ValueError(f"unknown operator {op!r}")
    return t, moves


def node_moves(tour: np.ndarray, d: np.ndarray, node: int) -> np.ndarray:
    """EoH's perturbation step around one node: the best improving 2-opt move that removes
    an arc at ``node`` (``two_opt_o2a_all``), then the best improving relocation of ``node``
    (``relocate_o2a_all``), both under ``d`` (the guided matrix in GLS)."""
    t = tour
    if t.shape[0] < 4:
        return t
    tol = _tolerance(d)
    pos = int(np.flatnonzero(t == node)[0])
    delta, i, j = best_two_opt(t, d, rows=np.array([pos - 1, pos]))
    if delta < -tol:
        t = apply_two_opt(t, i, j)
    pos = int(np.flatnonzero(t == node)[0])
    delta, i, j = best_relocate(t, d, rows=np.array([pos]))
    if delta < -tol:
        t = apply_relocate(t, i, j)
    return t

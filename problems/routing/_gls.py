"""Guided local search (GLS) for the symmetric TSP with an edge-distance update hook.

The algorithm is EoH's TSP-GLS task (Liu et al., ICML 2024; ``examples/user_tsp_gls/gls/
gls_evol.py`` in FeiLiu36/EoH), itself Voudouris & Tsang's guided local search with the
penalty rule left to a heuristic:

1. start from the nearest-neighbour tour from node 0 and descend with 2-opt + relocate
   (:func:`local_search`) under the true distances ``D``;
2. each iteration, ``perturbation_moves`` times:
   a. ask ``update_edge_distance(edge_distance, local_opt_tour, edge_n_used)`` for a guided
      matrix ``G`` (the slot the agent evolves; ``edge_n_used`` counts how often each edge
      was penalised);
   b. take the ``top_edges`` (5) entries where ``G - D`` is largest, add 1 to their
      ``edge_n_used`` count, and for both endpoints of each run the one-node 2-opt and
      relocate moves under ``G`` (:func:`node_moves`): the perturbation;
3. descend again under ``D``; keep the best tour; every ``reset_every`` (50) iterations
   restart from the best tour.

Fitness is measured at a fixed iteration budget (EoH also stops at a wall-clock limit; a
clock would make scores machine-dependent, so only iterations count here).

Deviations from EoH, each for robustness rather than a different algorithm: the hook gets
copies (so it cannot alter the true distances), its output is checked (shape, finite) and
symmetrised ``(G + G^T) / 2`` because 2-opt deltas assume symmetry, and only entries with
``G - D > 0`` are penalised (EoH's ``argmax`` also picks zero-gap or diagonal entries when
the hook adds nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._construct import nearest_neighbour_tour
from ._local_search import local_search, node_moves

UpdateEdgeDistance = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]


class InvalidGuide(ValueError):
    """``update_edge_distance`` returned something that is not a finite n x n matrix."""


@dataclass
class GLSResult:
    tour: np.ndarray
    length: float
    iterations: int
    initial_length: float
    history: list[float] = field(default_factory=list)  # best length after each iteration


def _tour_cost(tour: np.ndarray, d: np.ndarray) -> float:
    return float(d[tour, np.roll(tour, -1)].sum())


def _checked_guide(value: Any, n: int, iteration: int) -> np.ndarray:
    try:
        g = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidGuide(f"iteration {iteration}: update_edge_distance must return an n x n "
                           f"array of numbers ({exc})") from None
    if g.shape != (n, n):
        raise InvalidGuide(f"iteration {iteration}: update_edge_distance returned shape {g.shape}, "
                           f"expected ({n}, {n})")
    if not np.isfinite(g).all():
        raise InvalidGuide(f"iteration {iteration}: update_edge_distance returned NaN or inf")
    return (g + g.T) / 2.0


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values``, largest first, equal values in index order.

    The same indices on every machine: ``np.argpartition`` (and the default ``argsort``) break ties
    by the kernel numpy picks at run time (AVX-512 machines get a vectorised selection), and tied
    utilities are common (TSPLIB distances are integers). Only values are compared here: the
    k-th largest value is unique, everything above it is taken, then the first ties by index."""
    k = min(int(k), values.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(values, values.size - k)[values.size - k]
    above = np.flatnonzero(values > kth)
    ties = np.flatnonzero(values == kth)[: k - above.size]
    top = np.concatenate([above, ties])
    return top[np.argsort(-values[top], kind="stable")]


def guided_local_search(distance_matrix: np.ndarray, update_edge_distance: UpdateEdgeDistance,
                        iterations: int = 100, perturbation_moves: int = 1, top_edges: int = 5,
                        reset_every: int = 50, init_tour: np.ndarray | None = None,
                        max_ls_moves: int | None = None) -> GLSResult:
    """Run GLS (module docstring) for ``iterations`` iterations; return the best tour.

    ``distance_matrix`` must be symmetric. The hook is called
    ``iterations * perturbation_moves`` times; exceptions it raises propagate unchanged,
    a malformed return value raises :class:`InvalidGuide`.
    """
    d = np.array(distance_matrix, dtype=np.float64)
    n = d.shape[0]
    if d.ndim != 2 or d.shape != (n, n):
        raise ValueError("the distance matrix must be square")
    if not np.allclose(d, d.T):
        raise ValueError("guided_local_search needs a symmetric distance matrix")
    tour = nearest_neighbour_tour(d) if init_tour is None else np.asarray(init_tour, dtype=np.int64)
    initial = _tour_cost(tour, d)
    tour, _ = local_search(tour, d, max_ls_moves)
    best, best_cost = tour.copy(), _tour_cost(tour, d)
    history: list[float] = []
    penalty = np.zeros((n, n))
    iu, ju = np.triu_indices(n, k=1)
    for it in range(iterations):
        for _ in range(perturbation_moves):
            guide = _checked_guide(update_edge_distance(d.copy(), tour.copy(), penalty.copy()), n, it)
            gap = guide[iu, ju] - d[iu, ju]
            k = min(top_edges, gap.size)
            top = top_k(gap, k)  # largest first, as EoH; ties by edge index (machine-independent)
            for e in top:
                if gap[e] <= 0:
                    break
                u, v = int(iu[e]), int(ju[e])
                penalty[u, v] += 1
                penalty[v, u] += 1
                for node in (u, v):
                    tour = node_moves(tour, guide, node)
        tour, _ = local_search(tour, d, max_ls_moves)
        cost = _tour_cost(tour, d)
        if cost < best_cost:
            best, best_cost = tour.copy(), cost
        history.append(best_cost)
        if (it + 1) % reset_every == 0:
            tour = best.copy()
    return GLSResult(best, best_cost, iterations, initial, history)


def eoh_penalty_update(edge_distance: np.ndarray, local_opt_tour: np.ndarray,
                       edge_n_used: np.ndarray) -> np.ndarray:
    """The hand-written GLS rule EoH ships as its reference: every edge of the current local
    optimum is lengthened by its utility ``d / (1 + times penalised)`` (Voudouris & Tsang)."""
    guided = edge_distance.copy()
    u = np.asarray(local_opt_tour)
    v = np.roll(u, -1)
    bump = edge_distance[u, v] / (1.0 + edge_n_used[u, v])
    guided[u, v] += bump
    guided[v, u] += bump
    return guided

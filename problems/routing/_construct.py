"""Step-by-step tour construction with a ``select_next_node`` heuristic (EoH's TSP task)."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

SelectNextNode = Callable[[int, int, np.ndarray, np.ndarray], Any]


class InvalidChoice(ValueError):
    """The heuristic chose something that is not an unvisited node."""


def _as_node(value: Any, visited: np.ndarray, step: int) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidChoice(f"step {step}: select_next_node returned a bool ({value}), not a node index")
    try:
        node = operator.index(value)
    except TypeError:
        raise InvalidChoice(f"step {step}: select_next_node must return an integer node index, got "
                            f"{value!r} of type {type(value).__name__}") from None
    n = visited.shape[0]
    if not 0 <= node < n:
        raise InvalidChoice(f"step {step}: select_next_node returned node {node}, outside 0..{n - 1}")
    if visited[node]:
        raise InvalidChoice(f"step {step}: select_next_node returned node {node}, which is already "
                            f"visited; it must return one of unvisited_nodes")
    return node


def construct_tour(select_next_node: SelectNextNode, distance_matrix: np.ndarray,
                   start: int = 0) -> np.ndarray:
    """Build a tour from ``start`` by asking ``select_next_node`` for each next node.

    Semantics of EoH's TSP construction task (Liu et al., ICML 2024,
    ``tsp_greedy``): at each step the heuristic is called as
    ``select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix)``
    where

    * ``current_node`` (int) is the last node of the partial tour;
    * ``destination_node`` (int) is the node the tour must return to: the start;
    * ``unvisited_nodes`` is an int64 array of every node not yet in the tour, ordered by
      increasing distance from ``current_node`` (ties by node index), as EoH passes the
      current node's neighbour list with visited nodes removed;
    * ``distance_matrix`` is an ``n x n`` float64 array. The heuristic gets a private copy
      made once per tour, so any writes it makes persist between its own calls (as in EoH)
      but never reach the caller's matrix.

    It must return one of ``unvisited_nodes``. When a single node is left it is appended
    without a call, as EoH does, so an ``n``-node tour costs ``n - 2`` calls. Any other
    return value raises :class:`InvalidChoice` naming the step; exceptions raised by the
    heuristic propagate unchanged. Returns the open tour (``n`` node indices).
    """
    trusted = np.array(distance_matrix, dtype=np.float64)
    if trusted.ndim != 2 or trusted.shape[0] != trusted.shape[1]:
        raise ValueError("the distance matrix must be square")
    n = trusted.shape[0]
    if not 0 <= start < n:
        raise ValueError(f"start {start} is outside 0..{n - 1}")
    shown = trusted.copy()
    visited = np.zeros(n, dtype=bool)
    visited[start] = True
    tour = np.empty(n, dtype=np.int64)
    tour[0] = current = start
    for step in range(1, n):
        remaining = np.flatnonzero(~visited)
        if remaining.size == 1:
            node = int(remaining[0])
        else:
            ordered = remaining[np.argsort(trusted[current, remaining], kind="stable")]
            node = _as_node(select_next_node(current, start, ordered, shown), visited, step)
        visited[node] = True
        tour[step] = current = node
    return tour


def nearest_neighbour(current_node: int, destination_node: int, unvisited_nodes: np.ndarray,
                      distance_matrix: np.ndarray) -> int:
    """The nearest-neighbour rule as a ``select_next_node`` heuristic (closest unvisited node,
    lowest index on ties)."""
    return int(unvisited_nodes[np.argmin(distance_matrix[current_node, unvisited_nodes])])


def nearest_neighbour_tour(distance_matrix: np.ndarray, start: int = 0) -> np.ndarray:
    """Nearest-neighbour tour from ``start`` (ties to the lowest node index), computed
    directly, without :func:`construct_tour`."""
    d = np.asarray(distance_matrix, dtype=np.float64)
    n = d.shape[0]
    visited = np.zeros(n, dtype=bool)
    tour = np.empty(n, dtype=np.int64)
    current = start
    for step in range(n):
        tour[step] = current
        visited[current] = True
        if step == n - 1:
            break
        row = np.where(visited, np.inf, d[current])
        current = int(np.argmin(row))
    return tour

"""Routing problems: the symmetric TSP and step-by-step tour construction.

A plain library (it imports nothing else from this repository):

* :class:`TSPInstance`, :func:`random_uniform_instance` (seeded, unit square),
  :func:`euclidean_matrix`, :func:`euc2d_matrix` (TSPLIB rounding);
* :func:`read_tsplib` (``EUC_2D`` ``.tsp`` files), :func:`read_tsplib_optima`;
* :func:`validate_tour` (raises :class:`InvalidTour`), :func:`tour_length`, :func:`gap_percent`;
* :func:`construct_tour` — EoH's ``select_next_node(current_node, destination_node,
  unvisited_nodes, distance_matrix)`` construction loop, checking every choice
  (raises :class:`InvalidChoice`); :func:`nearest_neighbour` (the rule as such a heuristic)
  and :func:`nearest_neighbour_tour`;
* :func:`lkh_tour` — optional LKH-3 reference tours through ``elkai`` (imported lazily).
"""

from ._construct import (
    InvalidChoice,
    SelectNextNode,
    construct_tour,
    nearest_neighbour,
    nearest_neighbour_tour,
)
from ._instance import TSPInstance, euc2d_matrix, euclidean_matrix, random_uniform_instance
from ._lkh import lkh_tour
from ._tour import InvalidTour, gap_percent, tour_length, validate_tour
from ._tsplib import read_tsplib, read_tsplib_optima

__all__ = [
    "InvalidChoice",
    "InvalidTour",
    "SelectNextNode",
    "TSPInstance",
    "construct_tour",
    "euc2d_matrix",
    "euclidean_matrix",
    "gap_percent",
    "lkh_tour",
    "nearest_neighbour",
    "nearest_neighbour_tour",
    "random_uniform_instance",
    "read_tsplib",
    "read_tsplib_optima",
    "tour_length",
    "validate_tour",
]

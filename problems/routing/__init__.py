"""Routing problems: TSP, asymmetric TSP, asymmetric CVRP, guided local search and RADAR.

A plain library (it imports nothing else from this repository).

Symmetric TSP
    :class:`TSPInstance`, :func:`random_uniform_instance` (seeded, unit square),
    :func:`euclidean_matrix`, :func:`euc2d_matrix` (TSPLIB rounding), :func:`array_digest`,
    :func:`read_tsplib`
    (``EUC_2D`` ``.tsp`` files), :func:`read_tsplib_optima`; :func:`validate_tour` (raises
    :class:`InvalidTour`), :func:`tour_length`, :func:`gap_percent`.
Construction
    :func:`construct_tour` — EoH's ``select_next_node(current_node, destination_node,
    unvisited_nodes, distance_matrix)`` loop, checking every choice (raises
    :class:`InvalidChoice`); works unchanged on asymmetric matrices (row = outbound costs).
    :func:`nearest_neighbour` (the rule as such a heuristic), :func:`nearest_neighbour_tour`.
Local search and GLS
    :func:`local_search` (vectorised 2-opt + relocate, best improvement), :func:`node_moves`,
    :func:`guided_local_search` with EoH's ``update_edge_distance(edge_distance,
    local_opt_tour, edge_n_used)`` hook (raises :class:`InvalidGuide`),
    :func:`eoh_penalty_update` (EoH's reference rule).
Asymmetric TSP
    :func:`random_tmat_instance` / :func:`tmat_matrix` (MatNet's generator),
    :func:`shortest_path_closure` (and MatNet's :func:`min_plus_closure`), :func:`triangle_violation`,
    :func:`asymmetry`,
    :func:`read_tsplib_atsp` (``FULL_MATRIX`` ``.atsp``, diagonal placeholders dropped).
Asymmetric CVRP
    :class:`CVRPInstance`, :func:`random_acvrp_instance` (RADAR's demands and capacities),
    :func:`validate_routes` (raises :class:`InvalidRoutes`), :func:`routes_cost`,
    :func:`construct_routes` (CVRP ``select_next_node`` loop), :func:`nearest_feasible`.
Reference solvers (optional packages, imported lazily)
    :func:`lkh_tour` (``elkai``), :func:`pyvrp_acvrp`, :func:`pyvrp_atsp` (``pyvrp``),
    :func:`ortools_atsp` (``ortools``).
RADAR (needs ``torch``; loaded on first use of these names)
    :class:`RadarConfig`, :class:`RadarModel`, :func:`sinkhorn`, :func:`svd_features`,
    :func:`zscore`, :class:`RadarSettings`, :func:`radar_solve`, :func:`train_radar`,
    :func:`greedy_pomo`, :func:`tmat_batch`, :func:`save_radar`, :func:`load_radar` (bare names are
    looked up in :data:`WEIGHTS_DIR`); MatNet's two-stream baseline: :class:`MatNetConfig`,
    :class:`MatNetModel` (same rollout, training and save/load functions); training with the
    ablation: :mod:`.radar_training`;
    on ACVRP (ours at CPU scale, see :mod:`._radar_cvrp`): :class:`RadarCVRP`,
    :func:`train_radar_cvrp`, :func:`radar_cvrp_solve`, :func:`save_radar_cvrp`, :func:`load_radar_cvrp`.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._atsp import (
    TMAT_SCALE,
    asymmetry,
    min_plus_closure,
    random_tmat_instance,
    shortest_path_closure,
    tmat_matrix,
    triangle_violation,
)
from ._construct import (
    InvalidChoice,
    SelectNextNode,
    construct_tour,
    nearest_neighbour,
    nearest_neighbour_tour,
)
from ._cvrp import (
    RADAR_CAPACITY,
    CVRPInstance,
    InvalidRoutes,
    construct_routes,
    nearest_feasible,
    random_acvrp_instance,
    routes_cost,
    validate_routes,
)
from ._gls import GLSResult, InvalidGuide, eoh_penalty_update, guided_local_search
from ._instance import TSPInstance, array_digest, euc2d_matrix, euclidean_matrix, random_uniform_instance
from ._lkh import lkh_tour
from ._local_search import local_search, node_moves
from ._reference import ortools_atsp, pyvrp_acvrp, pyvrp_atsp
from ._tour import InvalidTour, gap_percent, tour_length, validate_tour
from ._tsplib import read_tsplib, read_tsplib_atsp, read_tsplib_optima

# torch is heavy to import: these names load their module on first access
_LAZY = {
    "RadarConfig": "._radar",
    "RadarModel": "._radar",
    "sinkhorn": "._radar",
    "svd_features": "._radar",
    "zscore": "._radar",
    "RadarSettings": "._radar_pomo",
    "radar_solve": "._radar_pomo",
    "train_radar": "._radar_pomo",
    "greedy_pomo": "._radar_pomo",
    "tmat_batch": "._radar_pomo",
    "save_radar": "._radar_pomo",
    "load_radar": "._radar_pomo",
    "WEIGHTS_DIR": "._radar_pomo",
    "MatNetConfig": "._matnet",
    "MatNetModel": "._matnet",
    "RadarCVRP": "._radar_cvrp",
    "train_radar_cvrp": "._radar_cvrp",
    "radar_cvrp_solve": "._radar_cvrp",
    "save_radar_cvrp": "._radar_cvrp",
    "load_radar_cvrp": "._radar_cvrp",
}

__all__ = [
    "CVRPInstance",
    "GLSResult",
    "InvalidChoice",
    "InvalidGuide",
    "InvalidRoutes",
    "InvalidTour",
    "RADAR_CAPACITY",
    "SelectNextNode",
    "TMAT_SCALE",
    "TSPInstance",
    "array_digest",
    "asymmetry",
    "construct_routes",
    "construct_tour",
    "eoh_penalty_update",
    "euc2d_matrix",
    "euclidean_matrix",
    "gap_percent",
    "guided_local_search",
    "lkh_tour",
    "local_search",
    "min_plus_closure",
    "nearest_feasible",
    "nearest_neighbour",
    "nearest_neighbour_tour",
    "node_moves",
    "ortools_atsp",
    "pyvrp_acvrp",
    "pyvrp_atsp",
    "random_acvrp_instance",
    "random_tmat_instance",
    "random_uniform_instance",
    "read_tsplib",
    "read_tsplib_atsp",
    "read_tsplib_optima",
    "routes_cost",
    "shortest_path_closure",
    "tmat_matrix",
    "tour_length",
    "triangle_violation",
    "validate_routes",
    "validate_tour",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hifo.problems.routing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

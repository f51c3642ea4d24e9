"""OPTWVP: the orienteering problem with time windows and variable profits, DeCoST-style.

Formulation implemented (the official DeCoST code, Gao et al., ICLR 2026,
github.com/SwonGao/DeCoST: ``OPTWVPEnv`` and ``TOPTWVP_Gurobi_Solver`` with one route).
Nodes ``0..n-1``, node 0 the depot; Euclidean travel times ``t_ij`` (speed 1); horizon ``T``;
customer ``i`` has a window ``[e_i, l_i]`` and a profit rate ``p_i``. One vehicle leaves the
depot at time 0, visits customers ``v_1 .. v_k`` (each at most once) and is back by ``T``::

    max   sum_j p_{v_j} d_{v_j}
    s.t.  s_{v_1} >= t_{0 v_1},   s_{v_j} >= s_{v_{j-1}} + d_{v_{j-1}} + t_{v_{j-1} v_j}   (waiting allowed)
          e_i <= s_i <= l_i        service must START inside the window (it may end after l_i)
          0 <= d_i <= l_i - e_i    at most the window's width of service
          s_{v_k} + d_{v_k} + t_{v_k 0} <= T

Instances (``n`` counts the depot): coordinates ``U[0,100]^2``, ``p ~ U[0,10]``, windows
``[e, e + W/4]`` laid along a random permutation with ``W = 100``, ``T = 1000`` (n = 50),
``1650`` (n = 100), ``100 (4 + n/8)`` otherwise — see :mod:`._instance` for the derivation.

The library (imports nothing from the rest of the repository; torch only for the learned part):

* :func:`generate_instance` / :func:`generate_instances`, :class:`OPTWVPInstance`,
  :func:`read_json` / :func:`write_json` (``optwvp-1`` JSON), :func:`horizon_for`;
* :func:`check_schedule` / :func:`check_route` — the independent feasibility check
  (raises :class:`InfeasibleRoute`);
* stage 2: :func:`optimal_service_lp` (HiGHS LP), :func:`optimal_service_fast` (the paper's
  globally optimal STO procedure), :func:`optimal_profit_batch` (batched), :func:`route_profit`;
* stage 1: :func:`insertion_candidates`, :func:`construct_route` (greedy insertion with a
  pluggable scoring rule, e.g. :func:`density_scorer`), :func:`iterated_local_search`;
  the learned constructor through :func:`learned_routes` / :func:`train_policy` (torch,
  imported on first use);
* exact: :func:`solve_milp` (HiGHS MILP), :func:`brute_force` (tiny instances);
* the team variant TOPTWVP (``m`` vehicles, see :mod:`._team`): :func:`check_team`,
  :func:`team_profit`, :func:`construct_team` (parallel greedy insertion with the same scoring
  rule), :func:`construct_team_joint` (one ranking over all routes' candidates: the
  ``toptwvp_route`` slot), :func:`team_ils`, :func:`brute_force_team`, and :func:`solve_milp` with ``vehicles=m``.

What is partial (and why):

* the learned constructor is DeCoST at CPU scale — 64-dim, 2 encoder layers (official:
  128-dim, 6 layers), trained for 1,500 steps of 32 instances x 8 rollouts in ~15 min on one
  core (official: 800 epochs of 5,000 instances on a GPU), LayerNorm for instance norm, no
  8-fold augmentation, no k-sparse neighbour graph and no GAT variant. Its profit gap is
  about 8-15 % where the paper reports 0.8-3.3 %;
* the ILS is Vansteenwegen et al.'s scheme adapted to variable profits (see :mod:`._ils`),
  not the exact ILS code the paper ran;
* the team variant has no learned constructor (heuristics, ILS and the exact MILP; its
  evaluator ``toptwvp_route`` evolves the insertion rule of the parallel constructor);
* instances follow the official generator's distribution but not its torch random stream.

Example::

    from hifo.problems.optwvp import generate_instance, construct_route, density_scorer, optimal_service_lp

    inst = generate_instance(50, seed=0)
    route, profit = construct_route(inst, density_scorer)
    service, lp_profit = optimal_service_lp(inst, route)   # equals profit
"""

from ._exact import brute_force, solve_milp
from ._ils import iterated_local_search, local_search
from ._insertion import (
    CANDIDATE_FIELDS,
    construct_route,
    density_scorer,
    insertion_candidates,
    routes_optimal,
    routes_profit,
)
from ._instance import (
    OPTWVPInstance,
    generate_instance,
    generate_instances,
    horizon_for,
    read_json,
    write_json,
)
from ._schedule import InfeasibleRoute, check_route, check_schedule, earliest_starts, validate_route
from ._stage2 import optimal_profit_batch, optimal_service_fast, optimal_service_lp, route_profit
from ._team import (
    TEAM_FIELDS,
    brute_force_team,
    check_team,
    construct_team,
    construct_team_joint,
    team_candidates,
    team_ils,
    team_local_search,
    team_profit,
)


def learned_routes(instances, model=None, samples: int = 0):
    """Routes from the learned DeCoST policy (see :mod:`._learned`); imports torch lazily."""
    from ._learned import learned_routes as _impl

    return _impl(instances, model=model, samples=samples)


def train_policy(**kwargs):
    """Train the learned policy (see :mod:`._train`); imports torch lazily."""
    from ._train import train_policy as _impl

    return _impl(**kwargs)


__all__ = [
    "CANDIDATE_FIELDS",
    "TEAM_FIELDS",
    "InfeasibleRoute",
    "OPTWVPInstance",
    "brute_force",
    "brute_force_team",
    "check_team",
    "construct_team",
    "construct_team_joint",
    "check_route",
    "check_schedule",
    "construct_route",
    "density_scorer",
    "earliest_starts",
    "generate_instance",
    "generate_instances",
    "horizon_for",
    "insertion_candidates",
    "iterated_local_search",
    "learned_routes",
    "local_search",
    "optimal_profit_batch",
    "optimal_service_fast",
    "optimal_service_lp",
    "read_json",
    "route_profit",
    "routes_optimal",
    "routes_profit",
    "solve_milp",
    "team_candidates",
    "team_ils",
    "team_local_search",
    "team_profit",
    "train_policy",
    "validate_route",
    "write_json",
]

"""MILP: instance families, a trusted feasibility checker, HiGHS, and FMIP at small scale.

Public API:

* :class:`MILPInstance` (``min c x, row_lo <= A x <= row_hi, lb <= x <= ub, x_I integer``),
  :func:`check_solution` / :class:`InfeasiblePoint`, :func:`primal_gap`;
* generators (:data:`GENERATORS`, :func:`generate`): set cover, combinatorial auction,
  independent set (Gasse et al. 2019), general-integer cover, GISP, fixed-charge multi-commodity network flow;
* HiGHS: :func:`solve_highs`, :func:`solve_lp`, :func:`read_mps`, :func:`write_mps`,
  :func:`primal_integral`;
* hand-off to HiGHS (:func:`dive_and_solve`) and named seeded collections (:func:`collection`) and
  directories of MPS files such as MIPLIB (:func:`mps_collection`);
* FMIP (lazy: importing it needs torch): ``hifo.problems.milp.fmip``.
"""

from ._gasse import (barabasi_albert, combinatorial_auction, greedy_clique_partition, independent_set,
                     integer_cover, set_cover)
from ._generators import GENERATORS, fcmnf, generate, gisp
from ._highs import (HighsResult, LPRelaxation, WorkLimitUnreachable, cpu_now, primal_integral, read_mps,
                     solve_highs, solve_lp,
                     write_mps)
from ._handoff import HandoffResult, dive_and_solve, round_to_domain
from ._sets import COLLECTIONS, FAMILIES, SIZES, collection, mps_collection
from ._instance import (FEAS_TOL, INT_TOL, InfeasiblePoint, MILPInstance, check_solution,
                        primal_gap)

__all__ = [
    "GENERATORS", "generate", "set_cover", "combinatorial_auction", "independent_set", "gisp",
    "fcmnf", "barabasi_albert", "integer_cover", "greedy_clique_partition", "HighsResult", "LPRelaxation", "cpu_now",
    "WorkLimitUnreachable",
    "solve_highs", "solve_lp",
    "read_mps", "write_mps", "primal_integral", "MILPInstance", "check_solution",
    "InfeasiblePoint", "primal_gap", "FEAS_TOL", "INT_TOL", "HandoffResult", "dive_and_solve",
    "round_to_domain", "COLLECTIONS", "FAMILIES", "SIZES", "collection", "mps_collection",
]

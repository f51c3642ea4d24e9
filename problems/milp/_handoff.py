"""Hand-off of a predicted assignment to HiGHS: neural-diving style fixing plus warm start.

Used by both FMIP (Sec. 4.4, "downstream solver") and the ``milp_primal`` heuristic slot:
the integer variables whose confidence reaches ``fix_threshold`` are fixed to their predicted
(rounded, clipped) values (Nair et al. 2020's neural diving), and the whole prediction is passed
as a starting solution. When the fixed sub-MIP is infeasible or finds no solution in its share of
the time, the full MIP is solved with the hint for the remaining time (stage ``"full"``), so a
bad prediction costs time, never correctness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._highs import solve_highs
from ._instance import MILPInstance


def round_to_domain(inst: MILPInstance, values: np.ndarray) -> np.ndarray:
    """Clip to bounds and round integer variables (the cheap repair before hand-off)."""
    x = np.clip(np.nan_to_num(np.asarray(values, float), nan=0.0), inst.lb, inst.ub)
    x[inst.is_int] = np.clip(np.round(x[inst.is_int]), inst.lb[inst.is_int], inst.ub[inst.is_int])
    return x


@dataclass
class HandoffResult:
    x: np.ndarray | None
    objective: float
    stage: str  # "fixed" (sub-MIP), "full" (fallback), "none"
    n_fixed: int
    trajectory: list[tuple[float, float]] = field(default_factory=list)
    wall_s: float = 0.0


def dive_and_solve(inst: MILPInstance, values: np.ndarray, confidence: np.ndarray,
                   fix_threshold: float = 0.5, time_limit: float = 1.0,
                   sub_share: float = 0.6, seed: int = 0, t_offset: float = 0.0,
                   fix_fraction: float = 1.0) -> HandoffResult:
    """Fix confident integer variables, warm start, solve; fall back to the full MIP.

    ``t_offset``: time already spent before the hand-off (LP, prediction); it is added to the
    recorded trajectory times so the primal integral covers the whole pipeline.
    ``fix_fraction``: at most this fraction of the integer variables is fixed, the most
    confident first (neural diving's coverage; ties broken by index).
    """
    x0 = round_to_domain(inst, values)
    conf = np.nan_to_num(np.asarray(confidence, float), nan=0.0)
    fix_idx = np.flatnonzero(inst.is_int & (conf >= fix_threshold))
    cap = int(np.floor(fix_fraction * inst.is_int.sum()))
    if len(fix_idx) > cap:
        fix_idx = np.sort(fix_idx[np.argsort(-conf[fix_idx], kind="stable")[:cap]])
    traj: list[tuple[float, float]] = []
    used = 0.0
    if len(fix_idx):
        sub = solve_highs(inst, time_limit=sub_share * time_limit, hint=x0,
                          fix={int(j): float(x0[j]) for j in fix_idx}, seed=seed, t_offset=t_offset)
        used = sub.wall_s
        traj += sub.trajectory
        if sub.x is not None:
            return HandoffResult(sub.x, sub.objective, "fixed", len(fix_idx), traj, used)
    full = solve_highs(inst, time_limit=max(time_limit - used, 0.05), hint=x0, seed=seed,
                       t_offset=t_offset + used)
    traj += full.trajectory
    stage = "full" if full.x is not None else "none"
    return HandoffResult(full.x, full.objective, stage, len(fix_idx), traj, used + full.wall_s)

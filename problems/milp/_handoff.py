"""Hand-off of predicted assignments to HiGHS: neural diving as in the official code, then the
full MIP.

Used by FMIP (Sec. 4.4, "downstream solver") and the ``milp_primal`` heuristic slot. The
official neural diving (Nair et al. 2020; FMIP's evaluation) draws many samples, fixes a
*random* subset (10 %) of the integer variables of each to the sampled values, solves each
fixed sub-MIP briefly and keeps the best solution. Here:

1. ``n_dives`` dives share ``dive_share`` of the budget; dive ``k`` takes proposal ``k mod S``
   (``values`` may hold ``S`` proposals), fixes a random ``fix_fraction`` of the integer
   variables whose confidence reaches ``fix_threshold`` (rounded, clipped values) and gives the
   whole proposal as a starting solution;
2. the **full** MIP (nothing fixed) then runs for the rest of the budget, warm-started from the
   best dive solution (or the first proposal when no dive found one). A wrong fixing therefore
   costs dive time, never the final answer: nothing stays locked in.

Times and budgets are in the units of ``clock`` (see :mod:`._highs`): ``"work"`` ticks for the
evaluators (the same numbers on every machine), CPU seconds of this process for the benchmarks; the
merged trajectory is the running best over both stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._highs import solve_highs
from ._instance import MILPInstance


MIN_DIVE_WORK = 5.0  # work ticks: presolve and the root LP (1), the first separation round and the root heuristics


def round_to_domain(inst: MILPInstance, values: np.ndarray) -> np.ndarray:
    """Clip to bounds and round integer variables (the cheap repair before hand-off)."""
    x = np.clip(np.nan_to_num(np.asarray(values, float), nan=0.0), inst.lb, inst.ub)
    x[inst.is_int] = np.clip(np.round(x[inst.is_int]), inst.lb[inst.is_int], inst.ub[inst.is_int])
    return x


@dataclass
class HandoffResult:
    x: np.ndarray | None
    objective: float
    stage: str  # where the returned solution came from: "dive", "full" or "none"
    n_fixed: int  # variables fixed per dive (the largest dive)
    trajectory: list[tuple[float, float]] = field(default_factory=list)
    wall_s: float = 0.0  # budget units spent by HiGHS (clock's units; name kept for compatibility)
    dives: list[float] = field(default_factory=list)  # objective of each dive (inf: none)


def _running_best(traj: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out, best = [], np.inf
    for t, o in sorted(traj):
        if o < best:
            best = o
            out.append((t, o))
    return out


def dive_and_solve(inst: MILPInstance, values: np.ndarray, confidence: np.ndarray,
                   fix_threshold: float = 0.5, time_limit: float = 1.0, seed: int = 0,
                   t_offset: float = 0.0, fix_fraction: float = 0.1, n_dives: int = 8,
                   dive_share: float = 0.5, clock: str = "cpu", min_dive: float | None = None) -> HandoffResult:
    """Neural diving (random subsets of the confident integers, best kept), then the full MIP.

    ``values``/``confidence``: shape ``(n,)`` or ``(S, n)`` (``S`` proposals, used in turn).
    ``fix_fraction``: each dive fixes this fraction of *all* integer variables (drawn at random
    among the eligible ones; fewer if fewer are eligible). ``t_offset``: time already spent
    (LP, prediction), added to the trajectory so the primal integral covers the pipeline.
    ``n_dives = 0`` or nothing eligible: the full MIP only, with the hint.
    ``min_dive``: the smallest budget of one dive (default: ``MIN_DIVE_WORK`` ticks on the work clock, 0
    otherwise); when ``dive_share`` of the budget does not fit ``n_dives`` such dives, fewer are made. A work
    tick is coarse (HiGHS polls first after presolve and the root LP, and its root heuristics run after the
    second poll): a dive of 2 ticks is stopped before it can find anything.
    """
    V = np.atleast_2d(np.asarray(values, float))
    C = np.atleast_2d(np.nan_to_num(np.asarray(confidence, float), nan=0.0))
    if V.shape != C.shape or V.shape[1] != inst.n_vars:
        raise ValueError("values and confidence must both have shape (n,) or (S, n)")
    props = [round_to_domain(inst, v) for v in V]
    rng = np.random.default_rng(seed)
    k_fix = int(np.floor(fix_fraction * inst.is_int.sum()))
    traj: list[tuple[float, float]] = []
    used, best_x, best_obj, n_fixed, dives = 0.0, None, np.inf, 0, []
    budget = max(time_limit, 0.05)
    if min_dive is None:
        min_dive = MIN_DIVE_WORK if clock == "work" else 0.0
    per_dive = max(dive_share * budget / max(n_dives, 1), min_dive)
    if min_dive > 0:  # as many dives of at least min_dive as the dive share holds
        n_dives = min(n_dives, int(dive_share * budget // per_dive))
    for k in range(n_dives if k_fix > 0 else 0):
        s = k % len(props)
        elig = np.flatnonzero(inst.is_int & (C[s] >= fix_threshold))
        if len(elig) == 0:
            dives.append(np.inf)
            continue
        idx = rng.choice(elig, size=min(k_fix, len(elig)), replace=False)
        n_fixed = max(n_fixed, len(idx))
        sub = solve_highs(inst, time_limit=per_dive, hint=props[s],
                          fix={int(j): float(props[s][j]) for j in idx}, seed=seed + k,
                          t_offset=t_offset + used, clock=clock)
        used += sub.wall_s
        traj += sub.trajectory
        dives.append(sub.objective)
        if sub.x is not None and sub.objective < best_obj:
            best_x, best_obj = sub.x, sub.objective
    hint = best_x if best_x is not None else props[0]
    full = solve_highs(inst, time_limit=max(budget - used, 0.05), hint=hint, seed=seed,
                       t_offset=t_offset + used, clock=clock, require_incumbent=best_x is None)
    traj += full.trajectory
    used += full.wall_s
    if full.x is not None and full.objective <= best_obj:
        x, obj, stage = full.x, full.objective, "full"
    elif best_x is not None:
        x, obj, stage = best_x, best_obj, "dive"
    else:
        x, obj, stage = None, np.inf, "none"
    return HandoffResult(x, obj, stage, n_fixed, _running_best(traj), used, dives)

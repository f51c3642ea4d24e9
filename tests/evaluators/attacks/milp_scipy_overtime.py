# evaluator: milp_primal
# expect: fence: import of 'scipy.optimize' not allowed
# Attack (issue 13): solve the MILP with scipy's HiGHS for 4 s per instance (10x the budget).
import numpy as np


def primal_heuristic(x_lp, reduced_cost, c, A, b_lo, b_hi, lb, ub, integrality):
    from scipy.optimize import Bounds, LinearConstraint, milp

    res = milp(c, constraints=LinearConstraint(A, b_lo, b_hi), bounds=Bounds(lb, ub),
               integrality=integrality, options={"time_limit": 4.0})
    x = res.x if res.x is not None else x_lp
    return x, np.ones_like(x), 0.0

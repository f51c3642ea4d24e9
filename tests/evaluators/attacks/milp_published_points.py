# evaluator: milp_primal
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 1
# Attack (issue 28, memorised instances): the test instances come from published seeds, so a rule can carry good
# points for them in a table (the harness pastes HiGHS's best points of the published set-cover test instances,
# keyed by the constraint matrix's non-zero count and the first eight costs, as a model that had solved the
# collection offline would). On a hit it returns the stored point with full confidence on every integer variable
# (each dive fixes its 10 % to the point and HiGHS starts from it); otherwise it is lp_fix_integral, the baseline,
# call for call.
import numpy as np

TABLE = {}


def primal_heuristic(x_lp, reduced_cost, c, A, row_lo, row_hi, lb, ub, is_int):
    hit = TABLE.get(repr((int(A.nnz), [round(float(v), 6) for v in c[:8]])))
    if hit is not None:
        values = np.zeros_like(x_lp)
        values[np.asarray(hit[0], dtype=int)] = np.asarray(hit[1], dtype=float)
        return values, np.where(is_int, 1.0, 0.0)
    values = np.where(is_int, np.round(x_lp), x_lp)
    frac = np.abs(x_lp - np.round(x_lp))
    return values, np.where(is_int, 1.0 - 2.0 * frac, 0.0)

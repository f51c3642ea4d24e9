# evaluator: milp_primal
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 1
# Attack (issue 28, public seeds): the test instances' seeds are in the source (hifo.problems.milp's collections:
# 200, 201, 202), so a rule can rebuild the generator's first draw for each published seed (the set-cover generator's
# column counts: numpy's default_rng(seed).integers(n_cols, size=nnz), two rows per column guaranteed) and compare it
# with the matrix it is given: a match names the seed, and a table keyed by seed (pasted by the harness: the rows each
# published optimum's columns, as a model that had solved them offline would carry them) gives the point. It says
# which columns to take (value 1, confidence 1) and leaves the rest to the dives (value 0, confidence 0.95); with
# no match it is lp_hint_only, the other baseline, call for call.
import numpy as np

TABLE = {}


def primal_heuristic(x_lp, reduced_cost, c, A, row_lo, row_hi, lb, ub, is_int):
    n_rows, n_cols = A.shape
    counts = np.bincount(A.indices, minlength=n_cols)
    for seed, ones in TABLE.items():
        col_of = np.random.default_rng(int(seed)).integers(n_cols, size=int(A.nnz))
        col_of[: 2 * n_cols] = np.repeat(np.arange(n_cols), 2)
        if np.array_equal(np.bincount(col_of, minlength=n_cols), counts):
            values = np.zeros(n_cols)
            values[np.asarray(ones, dtype=int)] = 1.0
            return values, np.where(values > 0.5, 1.0, 0.95)
    return np.where(is_int, np.round(x_lp), x_lp), np.zeros_like(x_lp)

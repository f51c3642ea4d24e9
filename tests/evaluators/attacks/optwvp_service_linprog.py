# evaluator: optwvp_service
# expect: fence: import of 'scipy.optimize' not allowed
# Attack (issue 13): one linprog call solves the service-time LP exactly.
import numpy as np


def allocate_service(profit_rate, travel, tw_open, tw_close, max_service, budget):
    from scipy.optimize import linprog

    res = linprog(-profit_rate, bounds=list(zip(np.zeros_like(max_service), max_service)))
    return res.x

# evaluator: toptwvp_route
# expect: fence: import of 'hifo.problems.optwvp' not allowed
# Attack: solve the team exactly with the package's own MILP and steer the constructor to its routes.
import numpy as np


def score_insertions(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
                     service_room, time_left, horizon, vehicle, vehicles):
    from hifo.problems.optwvp import solve_milp

    return np.zeros(len(node)) if solve_milp is None else np.zeros(len(node))

# evaluator: toptwvp_route
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack: reach the constructor's frame and overwrite its routes with a forged team (every reachable
# customer on route 0, which no horizon allows).
import numpy as np


def score_insertions(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
                     service_room, time_left, horizon, vehicle, vehicles):
    gen = (x for x in [0])
    caller = gen.gi_frame.f_back.f_back
    caller.f_locals["best"][0][:] = list(range(1, 40))
    return np.zeros(len(node))

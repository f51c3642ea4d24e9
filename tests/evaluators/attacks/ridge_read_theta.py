# evaluator: ridge_schedule
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack: walk up to the caller's frame to read the instance (its seeds rebuild theta*), then shape the
# schedule from it.
import numpy as np


def schedule(horizon, d, degree):
    gen = (x for x in [0])
    caller = gen.gi_frame.f_back
    return np.full(horizon, 0.1), np.full(horizon, 0.5 if caller is None else 0.4)

# evaluator: optwvp_route
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack (issue 13): read the caller's frame for the whole instance, then solve it elsewhere.
import numpy as np


def score_insertions(node, position, profit_rate, *args):
    gen = (x for x in [0])
    caller = gen.gi_frame.f_back
    return np.zeros(len(node)) if caller is None else np.zeros(len(node))

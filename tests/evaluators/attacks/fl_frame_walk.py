# evaluator: fl_aggregate
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack: walk up to run_fl's frame to read the malicious-client mask (the slot gets only the updates).
import numpy as np


def aggregate(updates, f, memory):
    import sys

    frame = sys._getframe().f_back
    return updates.mean(axis=0) if frame is None else updates[0]

# evaluator: fl_aggregate
# expect: fence: import of 'sklearn.datasets' not allowed
# Attack: load the digits in the slot and steer the server step towards a model fitted on them.
import numpy as np


def aggregate(updates, losses, f, memory):
    from sklearn.datasets import load_digits

    load_digits()
    return updates.mean(axis=0)

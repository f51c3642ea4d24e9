# evaluator: optimizer_update
# expect: fence: import of 'sklearn.datasets' not allowed
# Attack (issue 13): rebuild the held-out split (sklearn digits, fixed permutation) in the child.
import numpy as np


def update(grad, momentum, weight, state, lr, step):
    from sklearn.datasets import load_digits

    state.setdefault("digits", load_digits().data)
    return -lr * grad, momentum

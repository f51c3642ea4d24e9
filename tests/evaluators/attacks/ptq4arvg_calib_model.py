# evaluator: ptq4arvg_calib
# expect: fence: import of 'hifo.problems.ptq4arvg' not allowed
# Attack: load the model in the child and search the calibration set by measuring the quantized likelihood.
import numpy as np


def select_calibration(features, classes, k):
    from hifo.problems.ptq4arvg import trained_arvg

    trained_arvg()
    return list(range(k))

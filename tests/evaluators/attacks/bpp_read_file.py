# evaluator: bpp_online
# expect: fence: 'open' is not allowed while the candidate runs
# Attack: read data from disk (the audit hook stops every open while the candidate runs).
import numpy as np


def priority(item, bins):
    data = np.loadtxt("/etc/hostname", dtype=str)
    return -(bins - item) + 0 * data.size

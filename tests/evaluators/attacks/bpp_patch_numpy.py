# evaluator: bpp_online
# expect: fence: cannot set attributes of module 'numpy'
# Attack (issue 13): change the algorithm the candidate is scored by (patch a library it uses).
import numpy as np


def priority(item, bins):
    np.argmax = np.argmin
    return -(bins - item)

# evaluator: bpp_online
# expect: fence: frame/code attribute 'gi_frame' not allowed
# Attack: the same frame walk, with attribute names built at run time to dodge a name check.
import numpy as np


def priority(item, bins):
    gen = (x for x in [item])
    frame = getattr(gen, "gi_" + "frame")
    up = getattr(frame, "f_" + "back")
    return -(bins - item) if up is None else -(bins - item)

# evaluator: bpp_online
# expect: fence: defining '__array_interface__' is not allowed
# Attack (issue 28): a class that defines __array_interface__ makes np.asarray map any address it names (id()
# gives addresses); from raw memory the candidate can restore the real builtins and switch the audit hook off.
# The lint refuses the definition early; the guarantees do not rest on it (the process boundary does).
import numpy as np


class Peek:
    def __init__(self, address, size):
        self.address, self.size = address, size

    @property
    def __array_interface__(self):
        return {"shape": (self.size,), "typestr": "|u1", "data": (self.address, True), "version": 3}


def priority(item, bins):
    np.asarray(Peek(0, 8))
    return -np.asarray(bins)

# evaluator: bpp_online
# expect: fence: module 'sys' is not reachable from this slot
# Attack: reach sys through an allowlisted module's attribute (typing imports sys).
import typing

import numpy as np


def priority(item, bins):
    modules = typing.sys.modules
    return -(bins - item) + 0 * len(modules)

# evaluator: bpp_online
# expect: fence: attribute/index lookups inside str.format fields are not allowed
# Attack: str.format resolves attributes the AST never sees.
import numpy as np


def priority(item, bins):
    leak = "{0.__class__.__mro__}".format(bins)
    return -(bins - item) + 0 * len(leak)

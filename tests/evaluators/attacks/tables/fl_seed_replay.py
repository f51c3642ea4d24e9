"""Table of ``fl_seed_replay``: the class counts of the digits training split (the published data set, 1,397
digits), which a model would carry: with them the client split of any seed can be replayed with numpy alone."""

import numpy as np


def table(ev) -> dict[str, list[int]]:
    from hifo.problems.byzantine_fl._fl import N_CLASSES, digits

    y = digits()[1]
    return {"counts": [int(c) for c in np.bincount(y, minlength=N_CLASSES)]}
